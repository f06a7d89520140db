package scan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// maxCatalogPages bounds the pages of one catalog listing a registry may send.
const maxCatalogPages = 10000

// catalogPage is how many repositories each catalog request asks for.
const catalogPage = 1000

// Catalog lists every repository of registry (host[:port]) with GET
// /v2/_catalog, following Link pagination, and returns their paths
// ("team/app"). Many registries refuse it: the error then unwraps to
// ErrUnauthorized, ErrForbidden or ErrNotFound. Its requests are counted,
// retried and authenticated (scope registry:catalog:*) like every other.
func (s *Scanner) Catalog(ctx context.Context, registry string) ([]string, error) {
	var nopts []name.Option
	if s.o.insecure[registry] {
		nopts = append(nopts, name.Insecure)
	}
	reg, err := name.NewRegistry(registry, nopts...)
	if err != nil {
		return nil, fmt.Errorf("listing the catalog of %s: %w", registry, err)
	}
	base := reg.Scheme() + "://" + reg.RegistryStr() + "/v2/_catalog"
	auth, err := authn.Resolve(ctx, s.o.keychain, reg)
	if err != nil {
		return nil, fmt.Errorf("resolving credentials for %s: %w", registry, err)
	}
	var t http.RoundTripper
	err = s.c.limit(ctx, func(ctx context.Context) error {
		t, err = transport.NewWithContext(ctx, reg, auth, s.c.rt, []string{"registry:catalog:*"})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing the catalog of %s: %w", registry, classify(http.MethodGet, base, err))
	}
	var out []string
	query := fmt.Sprintf("n=%d", catalogPage)
	seen := map[string]bool{}
	for range maxCatalogPages {
		seen[query] = true
		u := base + "?" + query
		var body []byte
		var link string
		err := s.c.limit(ctx, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := t.RoundTrip(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if err := transport.CheckError(resp, http.StatusOK); err != nil {
				return err
			}
			link = resp.Header.Get("Link")
			body, err = io.ReadAll(io.LimitReader(resp.Body, maxManifest))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("listing the catalog of %s: %w", registry, classify(http.MethodGet, u, err))
		}
		var list struct {
			Repositories []string `json:"repositories"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("listing the catalog of %s: %w", registry, err)
		}
		out = append(out, list.Repositories...)
		next, ok := nextPage(link)
		if !ok || len(list.Repositories) == 0 {
			return out, nil
		}
		query = strings.TrimPrefix(next, "list?")
		if seen[query] {
			return out, nil
		}
	}
	return nil, fmt.Errorf("listing the catalog of %s: more than %d pages", registry, maxCatalogPages)
}
