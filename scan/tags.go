package scan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/types"
)

// maxTagPages bounds the pages of one tag listing a registry may send.
const maxTagPages = 1000

// maxTaggedResolves bounds the tags Tagged resolves (one HEAD each) in a
// repository: past it Tagged gives up with an error rather than send
// thousands of requests to answer one question, or claim an answer it did
// not check.
const maxTaggedResolves = 256

// Tags returns every tag of repo ("registry/path", or any reference to the
// repository, as Parse reads it) with GET /v2/<repo>/tags/list, following
// Link pagination. The list is fetched once per Scanner and repository;
// its requests are counted and authenticated like every other.
func (s *Scanner) Tags(ctx context.Context, repo string) ([]string, error) {
	_, r, err := s.Parse(repo)
	if err != nil {
		return nil, err
	}
	return s.tags(ctx, r.Context())
}

func (s *Scanner) tags(ctx context.Context, repo name.Repository) ([]string, error) {
	return s.c.tagLists.do(ctx, repo.Name(), func() ([]string, error) {
		var out []string
		page := "list"
		seen := map[string]bool{}
		for range maxTagPages {
			seen[page] = true
			resp, body, err := s.c.do(ctx, repo, http.MethodGet, "tags", page, maxManifest)
			if err != nil {
				return nil, fmt.Errorf("listing tags of %s: %w", repo.Name(), err)
			}
			var list struct {
				Tags []string `json:"tags"`
			}
			if err := json.Unmarshal(body, &list); err != nil {
				return nil, fmt.Errorf("listing tags of %s: %w", repo.Name(), err)
			}
			out = append(out, list.Tags...)
			next, ok := nextPage(resp.Header.Get("Link"))
			if !ok || seen[next] {
				return out, nil
			}
			page = next
		}
		return nil, fmt.Errorf("listing tags of %s: more than %d pages", repo.Name(), maxTagPages)
	})
}

// nextPage reads a Link header (`</v2/x/tags/list?last=a&n=100>; rel="next"`)
// and returns the next page as "list?<query>".
func nextPage(link string) (string, bool) {
	for _, part := range strings.Split(link, ",") {
		target, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) && !strings.Contains(params, "rel=next") {
			continue
		}
		target = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
		u, err := url.Parse(target)
		if err != nil || u.RawQuery == "" {
			return "", false
		}
		return "list?" + u.RawQuery, true
	}
	return "", false
}

// Tagged reports whether any tag of the reference's repository points at
// its digest: a digest no tag points at is deleted by any registry garbage
// collector that deletes untagged manifests. ref must carry a digest
// (repo@sha256:… or repo:tag@sha256:…). When its own tag resolves to the
// digest no tags are listed; otherwise every tag is resolved (one HEAD
// each, shared with Resolve and walks) until one matches, up to 256 tags:
// past that it returns an error, not a guess.
func (s *Scanner) Tagged(ctx context.Context, ref string) (bool, error) {
	named, r, err := s.Parse(ref)
	if err != nil {
		return false, err
	}
	d, ok := r.(name.Digest)
	if !ok {
		return false, fmt.Errorf("tagged: %s has no digest", ref)
	}
	repo, want := d.Context(), d.DigestStr()
	if tag, ok := ownTag(named); ok {
		t, err := name.NewTag(repo.Name()+":"+tag, name.WeakValidation)
		if err == nil {
			t.Repository = repo // keep the scheme Parse chose
			if got, err := s.c.resolve(ctx, t); err == nil && got.Digest == want {
				return true, nil
			}
		}
	}
	tags, err := s.tags(ctx, repo)
	if err != nil {
		return false, err
	}
	if len(tags) > maxTaggedResolves {
		return false, fmt.Errorf("tagged: %s has %d tags; regcheck resolves at most %d to look for %s", repo.Name(), len(tags), maxTaggedResolves, want)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		found atomic.Bool
		mu    sync.Mutex
		errs  []error
	)
	g := new(errgroup.Group)
	g.SetLimit(s.o.concurrency)
	for _, tag := range tags {
		if found.Load() {
			break
		}
		t, err := name.NewTag(repo.Name()+":"+tag, name.WeakValidation)
		if err != nil {
			continue
		}
		t.Repository = repo
		g.Go(func() error {
			got, err := s.c.resolve(ctx, t)
			switch {
			case err == nil && got.Digest == want:
				found.Store(true)
				cancel()
			case err != nil && !errors.Is(err, types.ErrNotFound) && !found.Load():
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	g.Wait()
	if found.Load() {
		return true, nil
	}
	if len(errs) > 0 {
		return false, fmt.Errorf("resolving the tags of %s: %w", repo.Name(), errors.Join(errs...))
	}
	return false, nil
}

// ownTag returns the tag written in a normalized reference
// ("host/repo:tag@sha256:…"), if any.
func ownTag(norm string) (string, bool) {
	before, _, _ := strings.Cut(norm, "@")
	i := strings.LastIndexByte(before, ':')
	if i < 0 || i < strings.LastIndexByte(before, '/') {
		return "", false
	}
	return before[i+1:], true
}
