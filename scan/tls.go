package scan

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"

	"github.com/regcheck/regcheck/internal/inputfile"
)

// LoadRoots returns the system roots plus the CA certificates in the PEM
// files given, or nil (the system roots) when none is given.
func LoadRoots(caFiles ...string) (*x509.CertPool, error) {
	if len(caFiles) == 0 {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if err := appendPEM(pool, caFiles...); err != nil {
		return nil, err
	}
	return pool, nil
}

// appendPEM adds the certificates of each PEM file to pool.
func appendPEM(pool *x509.CertPool, files ...string) error {
	for _, p := range files {
		pem, err := inputfile.Read(p, inputfile.MaxConfig)
		if err != nil {
			return fmt.Errorf("reading CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("CA file %s: no PEM certificate in it", p)
		}
	}
	return nil
}

// NewBaseTransport is the one transport under every registry request
// regcheck sends, scans' and rescue's pushes alike: TLS verified against
// roots (nil: the system roots), except for the hosts (host:port) named
// insecure, whose certificates are not verified. idle bounds the idle
// connections kept per host.
func NewBaseTransport(roots *x509.CertPool, insecure map[string]bool, idle int) http.RoundTripper {
	def := http.DefaultTransport.(*http.Transport).Clone()
	def.MaxIdleConnsPerHost = max(idle, 2)
	if roots != nil {
		def.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	if len(insecure) == 0 {
		return def
	}
	unverified := def.Clone()
	unverified.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // only for hosts the user named
	return hostTLS{next: def, unverified: unverified, insecure: insecure}
}
