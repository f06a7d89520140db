package artifacts_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
)

// TestFindReferrerUnreadable: a referrer the list names without saying
// what it is, whose manifest answers 503 when asked, hides what it is: a
// required attestation or signature of the subject is unknown, with the
// registry's fault as its cause, never missing.
func TestFindReferrerUnreadable(t *testing.T) {
	var referrer atomic.Value
	referrer.Store("none")
	host := startReferrersRegistry(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/manifests/"+referrer.Load().(string)) {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	repo := repoOf(t, host, "unread")
	d := pushImage(t, repo, "v1", "unread")
	// A bundle whose descriptor says neither its content nor its
	// predicate: the finder must read its manifest to tell.
	ref, _ := bundle(d, "", "").push(t, repo, "")
	referrer.Store(ref)
	s, _ := newFinder(t, host)
	set, err := artifacts.NewFinder(s).Find(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []artifacts.Kind{artifacts.Signature, artifacts.Attestation} {
		if got := set.Presence(artifacts.Query{Kind: k}); got != artifacts.Unknown {
			t.Errorf("%s: %s, want unknown (faults %+v, artifacts %+v)", k, got, set.Faults, set.Artifacts)
		}
	}
	found := false
	for _, f := range set.Faults {
		if f.Code == types.RegistryFault && f.Digest == d && strings.Contains(f.Message, ref) && strings.Contains(f.Message, "503") {
			found = true
		}
	}
	if !found {
		t.Errorf("no registry fault naming the referrer %s and its 503: %+v", ref, set.Faults)
	}
}

// TestFindTagNotListed: a .sig tag the tag list leaves out (a stale or
// cut-short list) is still asked for, and found; a tag the list names
// that the registry answers 404 for dangles.
func TestFindTagNotListed(t *testing.T) {
	var hide atomic.Bool
	host := startReferrersRegistry(t, func(w http.ResponseWriter, r *http.Request) bool {
		if hide.Load() && strings.HasSuffix(r.URL.Path, "/tags/list") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name":"unlisted","tags":["v1"]}`))
			return true
		}
		return false
	})
	repo := repoOf(t, host, "unlisted")
	d := pushImage(t, repo, "v1", "unlisted")
	legacySig("payload").push(t, repo, cosignTag(d, ".sig"))
	hide.Store(true)
	s, _ := newFinder(t, host)
	set, err := artifacts.NewFinder(s).Find(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Presence(artifacts.Query{Kind: artifacts.Signature, Layouts: []artifacts.Layout{artifacts.CosignTag}}); got != artifacts.Present {
		t.Errorf("an unlisted .sig tag the registry serves: %s, want present (%+v)", got, set.Artifacts)
	}
}
