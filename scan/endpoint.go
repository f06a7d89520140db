package scan

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/pullpath"
)

// endpointAt is one endpoint of a node's pull path as a client asks it:
// the repository its credentials and pull budget are per, and the
// endpoint itself, whose URLs carry its path and ?ns=.
type endpointAt struct {
	ep   pullpath.Endpoint
	repo name.Repository
}

// newEndpointAt names ep's repository on ep's host, plain HTTP when the
// runtime asks it so.
func newEndpointAt(ep pullpath.Endpoint) (*endpointAt, error) {
	if ep.HTTPFallback && speaksPlainHTTP(ep.URL.Host) {
		u := *ep.URL
		u.Scheme = "http"
		ep.URL = &u
	}
	var opts []name.Option
	if ep.URL.Scheme == "http" {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(ep.URL.Host+"/"+ep.Repository, opts...)
	if err != nil {
		return nil, fmt.Errorf("endpoint %s: repository %q: %w", ep.URL.Redacted(), ep.Repository, err)
	}
	return &endpointAt{ep: ep, repo: repo}, nil
}

// where is the repository a request authenticates for and its URL: repo's
// registry's, or, for a client of a pull path's endpoint, the endpoint's.
func (c *client) where(repo name.Repository, kind, ref string) (name.Repository, string) {
	if c.at == nil {
		return repo, fmt.Sprintf("%s://%s/v2/%s/%s/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), kind, ref)
	}
	switch kind {
	case "blobs":
		return c.at.repo, c.at.ep.BlobURL(ref)
	default:
		return c.at.repo, c.at.ep.ManifestURL(ref)
	}
}

// auth is the authenticator for repo's registry: the credentials a pull
// path's configuration gives its endpoint (k3s configs), else the
// keychain's.
func (c *client) auth(ctx context.Context, repo name.Repository) (authn.Authenticator, error) {
	if c.at != nil && c.at.ep.Auth != nil {
		a := c.at.ep.Auth
		return authn.FromConfig(authn.AuthConfig{Username: a.Username, Password: a.Password, Auth: a.Auth, IdentityToken: a.IdentityToken}), nil
	}
	return authn.Resolve(ctx, c.o.keychain, repo) // the repository: a credential provider may match a path
}

// endpointClient returns a client that asks ep, over the scan's transport,
// or over one of its own when ep's TLS differs (its CA files, skipped
// verification, plain HTTP to a host that is not loopback): the node's
// configuration names those hosts.
func endpointClient(o *options, l layers, sem chan struct{}, ep pullpath.Endpoint) (*client, *counter, error) {
	at, err := newEndpointAt(ep)
	if err != nil {
		return nil, nil, err
	}
	if len(ep.CAFiles) == 0 && !ep.SkipVerify && (ep.URL.Scheme != "http" || isLoopback(ep.URL.Host)) {
		c := newClient(o, l)
		c.sem, c.at = sem, at
		return c, nil, nil
	}
	eo := *o
	eo.insecure = map[string]bool{}
	for h := range o.insecure {
		eo.insecure[h] = true
	}
	if ep.SkipVerify || ep.URL.Scheme == "http" {
		eo.insecure[ep.URL.Host] = true
	}
	if len(ep.CAFiles) > 0 {
		roots, err := LoadRoots(append(append([]string(nil), o.caFiles...), ep.CAFiles...)...)
		if err != nil {
			return nil, nil, fmt.Errorf("endpoint %s (%s): %w", ep.URL.Redacted(), ep.Source, err)
		}
		eo.roots = roots
	}
	el := buildTransport(&eo)
	c := newClient(&eo, el)
	c.sem, c.at = sem, at
	return c, el.counter, nil
}

// speaksPlainHTTP reports whether host answers a TLS handshake with plain
// HTTP: the answer on which containerd retries a request over http for an
// endpoint with HTTPFallback.
func speaksPlainHTTP(host string) bool {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // no request is sent: only the kind of answer is read
	if err == nil {
		conn.Close()
		return false
	}
	var rh tls.RecordHeaderError
	return errors.As(err, &rh)
}
