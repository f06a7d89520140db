package admission

import (
	"cmp"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/sigstore/cosign/v3/pkg/cosign"
	"github.com/sigstore/cosign/v3/pkg/oci"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// kyvernoCert is the certificate match a Kyverno ClusterPolicy keyless
// attestor makes on its legacy (.sig, .att) path. Kyverno gives cosign
// no identities: cosign checks the chain, the log and the SCT, and then
// Kyverno matches each verified certificate itself (kyverno/kyverno
// v1.19.1 pkg/image/verifiers/cpol/cosign/cosign.go, matchSignatures and
// matchCertificateData): subject and issuer are wildcards
// (github.com/IGLOU-EU/go-wildcard, as regcheck's wildcard), subject OR
// subjectRegExp against any SAN (a certificate with no SAN passes the
// subject), issuer AND issuerRegExp, and every additionalExtensions
// value a wildcard on the named extension.
type kyvernoCert struct {
	subject, subjectRegExp, issuer, issuerRegExp string
	extensions                                   map[string]string
}

// none reports whether the attestor names nothing to match: Kyverno then
// accepts every certificate cosign verified.
func (k *kyvernoCert) none() bool {
	return k.subject == "" && k.subjectRegExp == "" && k.issuer == "" && k.issuerRegExp == "" && len(k.extensions) == 0
}

// text is the match as the cache key and messages show it.
func (k *kyvernoCert) text() string {
	var ext []string
	for _, key := range slices.Sorted(maps.Keys(k.extensions)) {
		ext = append(ext, key+"="+k.extensions[key])
	}
	return fmt.Sprintf("%q %q %q %q [%s]", k.subject, k.subjectRegExp, k.issuer, k.issuerRegExp, strings.Join(ext, " "))
}

// anyMatches is Kyverno's signature check: one of the signatures cosign
// verified has a certificate that matches; the errors of all otherwise.
func (k *kyvernoCert) anyMatches(sigs []oci.Signature) error {
	if k.none() {
		return nil
	}
	var errs []error
	for _, s := range sigs {
		cert, err := s.Cert()
		if err != nil {
			return fmt.Errorf("failed to read certificate: %w", err)
		}
		if cert == nil {
			return errors.New("certificate not found")
		}
		err = k.match(cert)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return errors.New("invalid signature")
	}
	return errors.Join(errs...)
}

// match is matchCertificateData: the subject, then the issuer and the
// extensions.
func (k *kyvernoCert) match(cert *x509.Certificate) error {
	if sans := cryptoutils.GetSubjectAlternateNames(cert); (k.subject != "" || k.subjectRegExp != "") && len(sans) > 0 {
		matched := k.subject != "" && slices.ContainsFunc(sans, func(s string) bool { return wildcard(k.subject, s) })
		if k.subjectRegExp != "" {
			re, err := regexp.Compile(k.subjectRegExp)
			if err != nil {
				return fmt.Errorf("invalid regexp for subject: %s : %w", k.subjectRegExp, err)
			}
			matched = matched || slices.ContainsFunc(sans, re.MatchString)
		}
		if !matched {
			return fmt.Errorf("subject mismatch: expected %s, received %s", cmp.Or(k.subject, k.subjectRegExp), strings.Join(sans, ", "))
		}
	}
	return k.matchExtensions(cosign.CertExtensions{Cert: cert})
}

// matchExtensions is Kyverno's matchExtensions: the issuer by wildcard
// and by regular expression, then each required extension by wildcard.
func (k *kyvernoCert) matchExtensions(ce cosign.CertExtensions) error {
	val := ce.GetIssuer()
	if k.issuer != "" && !wildcard(k.issuer, val) {
		return fmt.Errorf("issuer mismatch: expected %s, received %s", k.issuer, val)
	}
	if k.issuerRegExp != "" {
		re, err := regexp.Compile(k.issuerRegExp)
		if err != nil {
			return fmt.Errorf("invalid regexp for issuer: %s : %w", k.issuerRegExp, err)
		}
		if !re.MatchString(val) {
			return fmt.Errorf("issuer mismatch: expected %s, received %s", k.issuerRegExp, val)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.extensions)) {
		got, err := certExtension(key, ce)
		if err != nil {
			return err
		}
		if want := k.extensions[key]; !wildcard(want, got) {
			return fmt.Errorf("extension mismatch: expected %s for key %s, received %s", want, key, got)
		}
	}
	return nil
}

// certExtension is Kyverno's extractCertExtensionValue: an extension
// named by its OID or cosign's name for it; any other key is an error
// that refuses the image.
func certExtension(key string, ce cosign.CertExtensions) (string, error) {
	read := map[string]func() string{
		cosign.CertExtensionOIDCIssuer:               ce.GetIssuer,
		cosign.CertExtensionGithubWorkflowTrigger:    ce.GetCertExtensionGithubWorkflowTrigger,
		cosign.CertExtensionGithubWorkflowSha:        ce.GetExtensionGithubWorkflowSha,
		cosign.CertExtensionGithubWorkflowName:       ce.GetCertExtensionGithubWorkflowName,
		cosign.CertExtensionGithubWorkflowRepository: ce.GetCertExtensionGithubWorkflowRepository,
		cosign.CertExtensionGithubWorkflowRef:        ce.GetCertExtensionGithubWorkflowRef,
	}
	for oid, get := range read {
		if key == oid || key == cosign.CertExtensionMap[oid] {
			return get(), nil
		}
	}
	return "", fmt.Errorf("invalid certificate extension %s", key)
}
