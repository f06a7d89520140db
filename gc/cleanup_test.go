package gc

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/cleanup"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// fakePolicy is a cleanup defined by the test: it cleans the repositories
// named, and one run is its plan function over the repository.
type fakePolicy struct {
	repos []string
	plan  func(r *cleanup.Repository) cleanup.Plan
}

func (p *fakePolicy) Name() string                   { return "test cleanup" }
func (p *fakePolicy) Source() string                 { return "cleanup_test.go" }
func (p *fakePolicy) Applies(repository string) bool { return slices.Contains(p.repos, repository) }
func (p *fakePolicy) Run(r *cleanup.Repository, _ time.Time) cleanup.Plan {
	return p.plan(r)
}

var testRule = cleanup.Rule{Rule: "rule 1", Keep: "exclude it"}

// untaggedGone deletes every manifest no tag names (the oldest GHCR
// actions' delete-only-untagged-versions: children of kept indexes too).
func untaggedGone(r *cleanup.Repository) cleanup.Plan {
	var p cleanup.Plan
	for _, d := range r.SortedManifests() {
		if len(r.TagsOf(d)) == 0 {
			p.Manifests = append(p.Manifests, cleanup.ManifestDeletion{Digest: d, Rule: testRule})
		}
	}
	return p
}

// tagGone removes tag t, the manifest staying.
func tagGone(t string) func(*cleanup.Repository) cleanup.Plan {
	return func(r *cleanup.Repository) cleanup.Plan {
		if tg, ok := r.Tags[t]; ok {
			return cleanup.Plan{Tags: []cleanup.TagDeletion{{Tag: t, Digest: tg.Digest, Rule: testRule}}}
		}
		return cleanup.Plan{}
	}
}

// archiveTagged archives what tag t names.
func archiveTagged(t string) func(*cleanup.Repository) cleanup.Plan {
	return func(r *cleanup.Repository) cleanup.Plan {
		if tg, ok := r.Tags[t]; ok && !r.Manifests[tg.Digest].Archived {
			return cleanup.Plan{Archived: []cleanup.ManifestDeletion{{Digest: tg.Digest, Rule: testRule}}}
		}
		return cleanup.Plan{}
	}
}

func TestCheckCleanup(t *testing.T) {
	s := seedAPI(t)
	digestOf := func(n string) string {
		for _, im := range s.imgs {
			if im.Name == n {
				return im.Digest.String()
			}
		}
		t.Fatalf("no fixture %s", n)
		return ""
	}
	for _, tc := range []struct {
		name   string
		policy *fakePolicy
		refs   []string
		// want: reference → codes of its losses, in order.
		want    map[string]string
		deletes int
		// platforms, when set, are the nodes' platforms every use may run on
		// (as --cluster reads them).
		platforms []string
	}{
		{"untagged children of a kept index", &fakePolicy{[]string{"gc/multiarch", "gc/buildx"}, untaggedGone},
			[]string{"gc/multiarch:v1", "gc/buildx:v1", "gc/single:v1"},
			map[string]string{"gc/multiarch:v1": "child-missing,child-missing", "gc/buildx:v1": "child-missing,attestation-missing"}, 4, nil},
		{"an in-use tag removed", &fakePolicy{[]string{"gc/single"}, tagGone("v1")},
			[]string{"gc/single:v1", "gc/app-a:v1"}, map[string]string{"gc/single:v1": "tag-deleted"}, 1, nil},
		{"a pin untagged", &fakePolicy{[]string{"gc/app-b"}, tagGone("v1")},
			[]string{"gc/app-b@" + digestOf("app-b")}, map[string]string{"gc/app-b@" + digestOf("app-b"): "pinned-digest-untagged"}, 1, nil},
		{"archived", &fakePolicy{[]string{"gc/app-a"}, archiveTagged("v1")},
			[]string{"gc/app-a:v1"}, map[string]string{"gc/app-a:v1": "archived"}, 1, nil},
		{"nothing in use touched", &fakePolicy{[]string{"gc/partial"}, tagGone("v1-amd64")},
			[]string{"gc/partial:v1"}, map[string]string{}, 1, nil},
		{"judged for the nodes' platforms", &fakePolicy{[]string{"gc/multiarch"}, untaggedGone},
			[]string{"gc/multiarch:v1"}, map[string]string{"gc/multiarch:v1": "child-missing"}, 2, []string{"linux/amd64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scan.New()
			if err != nil {
				t.Fatal(err)
			}
			var targets []types.Target
			use := types.Use{Source: "cluster", Kind: "Deployment", Name: "web"}
			for _, p := range tc.platforms {
				use.Platforms = append(use.Platforms, types.NodePlatform{Platform: p, Nodes: []string{"node-1"}})
			}
			for _, r := range tc.refs {
				targets = append(targets, types.Target{Ref: s.host + "/" + r, Uses: []types.Use{use}})
			}
			rep, err := CheckCleanup(context.Background(), sc, CleanupOptions{Policies: []cleanup.Policy{tc.policy}, At: time.Now(), Runs: 2}, targets)
			if err != nil {
				t.Fatalf("CheckCleanup: %v", err)
			}
			got := map[string]string{}
			for _, e := range rep.WouldBreak {
				var codes []string
				for _, l := range e.Losses {
					codes = append(codes, string(l.Code))
					if l.Rule != "rule 1" || l.Keep != "exclude it" {
						t.Errorf("%s: loss %s has rule %q keep %q", e.Reference, l.Code, l.Rule, l.Keep)
					}
				}
				got[strings.TrimPrefix(e.Reference, s.host+"/")] = strings.Join(codes, ",")
			}
			if !mapsEqual(got, tc.want) {
				t.Errorf("wouldBreak = %v, want %v", got, tc.want)
			}
			var n int
			for _, d := range rep.Cleanup.Deletions {
				if !d.WithManifest {
					n++
				}
			}
			if n != tc.deletes {
				t.Errorf("%d deletions, want %d: %+v", n, tc.deletes, rep.Cleanup.Deletions)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A registry fault while surveying leaves the images of the repository
// skipped and the prediction incomplete: never broken.
func TestCheckCleanupFault(t *testing.T) {
	s := seedAPI(t)
	s.blockPath("/v2/gc/multiarch/tags/list", http.StatusInternalServerError)
	sc, err := scan.New(scan.WithTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	targets := []types.Target{{Ref: s.host + "/gc/multiarch:v1"}}
	rep, err := CheckCleanup(context.Background(), sc, CleanupOptions{Policies: []cleanup.Policy{&fakePolicy{[]string{"gc/multiarch"}, untaggedGone}}, At: time.Now(), Runs: 1}, targets)
	if err == nil || rep == nil {
		t.Fatalf("report %v, error %v: want an incomplete report", rep, err)
	}
	if len(rep.WouldBreak) != 0 || len(rep.Skipped) != 1 {
		t.Errorf("wouldBreak %d, skipped %v: want 0 and the image", len(rep.WouldBreak), rep.Skipped)
	}
	_ = gcresult.ModeCleanup
}

// An in-use image its repository's exports do not list (an empty export,
// one page of several) has no age: the prediction is incomplete, with a
// note naming the image, never clean (before: exit 0 where the full
// export gave a finding). An export listing it leaves it complete.
func TestCheckCleanupUnaged(t *testing.T) {
	s := seedAPI(t)
	var single string
	for _, im := range s.imgs {
		if im.Name == "single" {
			single = im.Digest.String()
		}
	}
	for _, tc := range []struct {
		name       string
		state      *cleanup.State
		incomplete bool
	}{
		{"an empty export", &cleanup.State{Service: "ecr", File: "empty.json"}, true},
		{"a page without the image", &cleanup.State{Service: "ecr", File: "page.json", Notes: []string{"the export ends with a nextToken"},
			Manifests: []cleanup.ManifestState{{Digest: "sha256:" + strings.Repeat("0", 64)}}}, true},
		{"an export listing it", &cleanup.State{Service: "ecr", File: "full.json", Manifests: []cleanup.ManifestState{{Digest: single, Pushed: time.Now()}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scan.New()
			if err != nil {
				t.Fatal(err)
			}
			targets := []types.Target{{Ref: s.host + "/gc/single:v1"}}
			opts := CleanupOptions{Policies: []cleanup.Policy{&fakePolicy{[]string{"gc/single"}, tagGone("nope")}}, At: time.Now(), Runs: 1,
				States: []CleanupState{{State: tc.state}}}
			rep, err := CheckCleanup(context.Background(), sc, opts, targets)
			if rep == nil {
				t.Fatalf("CheckCleanup: no report, %v", err)
			}
			var notes []string
			for _, n := range rep.Notes {
				notes = append(notes, n.Text)
			}
			unaged := tc.state.File + " lists no " + single + ": its age is unknown"
			if got := err != nil && strings.Contains(err.Error(), unaged); got != tc.incomplete {
				t.Fatalf("error %v; want incomplete %v (%q)", err, tc.incomplete, unaged)
			}
			if tc.incomplete && !strings.Contains(strings.Join(notes, "\n"), unaged) {
				t.Errorf("notes %q lack %q", notes, unaged)
			}
			for _, n := range tc.state.Notes {
				if !slices.Contains(notes, tc.state.File+": "+n) {
					t.Errorf("notes %q lack the export's own %q", notes, n)
				}
			}
		})
	}
}
