package cleanup

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ghcrAt is the time the tests run the policies at.
var ghcrAt = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// dg is a test digest named n.
func dg(n string) string {
	s := sha256.Sum256([]byte(n))
	return "sha256:" + hex.EncodeToString(s[:])
}

// sigTag is cosign's signature tag for the manifest named n.
func sigTag(n string) string { return "sha256-" + strings.TrimPrefix(dg(n), "sha256:") + ".sig" }

// ver is one package version of a test repository: created (and
// updated) days before ghcrAt.
type ver struct {
	name     string
	tags     []string
	days     float64
	children []string
	subject  string
	// noTimes leaves the times zero, as for a manifest the export lacks.
	noTimes bool
}

// ghcrRepo builds org/app from versions, their ids counting from 1 in
// the order given.
func ghcrRepo(vs ...ver) *Repository {
	r := &Repository{Name: "org/app", Tags: map[string]*Tag{}, Manifests: map[string]*Manifest{}}
	for i, v := range vs {
		ts := ghcrAt.Add(-time.Duration(v.days * float64(24*time.Hour)))
		m := &Manifest{Digest: dg(v.name), Pushed: ts, Updated: ts, ID: strconv.Itoa(i + 1)}
		if v.noTimes {
			m.Pushed, m.Updated = time.Time{}, time.Time{}
		}
		for _, c := range v.children {
			m.Children = append(m.Children, dg(c))
		}
		if v.subject != "" {
			m.Subject = dg(v.subject)
		}
		r.Manifests[m.Digest] = m
		for _, t := range v.tags {
			r.Tags[t] = &Tag{Name: t, Digest: m.Digest}
		}
	}
	return r
}

// names maps the plan's manifest deletions back to the test's names.
func names(r *Repository, ds []ManifestDeletion, vs []ver) []string {
	by := map[string]string{}
	for _, v := range vs {
		by[dg(v.name)] = v.name
	}
	var out []string
	for _, d := range ds {
		n, ok := by[d.Digest]
		if !ok {
			n = d.Digest
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// multiArch is a tagged multi-arch index (two platforms and a buildx
// attestation manifest as children), signed by cosign under its
// sha256-….sig tag, beside an old untagged image and an old untagged
// index whose tag moved on.
var multiArch = []ver{
	{name: "idx", tags: []string{"v1"}, days: 20, children: []string{"amd", "arm", "att"}},
	{name: "amd", days: 20},
	{name: "arm", days: 20},
	{name: "att", days: 20},
	{name: "sig", tags: []string{sigTag("idx")}, days: 19},
	{name: "old", days: 40},
	{name: "oldidx", days: 30, children: []string{"oldamd"}},
	{name: "oldamd", days: 30},
}

// readStep reads a one-step workflow using action@ref with the inputs.
func readStep(t *testing.T, uses string, with map[string]string) Policy {
	t.Helper()
	var b strings.Builder
	b.WriteString("on: {schedule: [{cron: '0 3 * * *'}]}\njobs:\n  clean:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: " + uses + "\n        with:\n")
	keys := make([]string, 0, len(with))
	for k := range with {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString("          " + k + ": " + strconv.Quote(with[k]) + "\n")
	}
	ps, err := Read("clean.yml", []byte(b.String()))
	if err != nil {
		t.Fatalf("reading %s: %v", uses, err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d policies, want 1", len(ps))
	}
	return ps[0]
}

// planCase is one table row: a step, the repository, the time, and the
// names it deletes and untags.
type planCase struct {
	name     string
	uses     string
	with     map[string]string
	repo     []ver
	at       time.Time
	deleted  []string
	untagged []string
	// nameHas are substrings Name() must hold.
	nameHas []string
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := readStep(t, tc.uses, tc.with)
			at := tc.at
			if at.IsZero() {
				at = ghcrAt
			}
			r := ghcrRepo(tc.repo...)
			plan := p.Run(r, at)
			if got := names(r, plan.Manifests, tc.repo); !slices.Equal(got, sorted(tc.deleted)) {
				t.Errorf("deleted %v, want %v", got, sorted(tc.deleted))
			}
			var tags []string
			for _, td := range plan.Tags {
				tags = append(tags, td.Tag)
			}
			sort.Strings(tags)
			if !slices.Equal(tags, sorted(tc.untagged)) {
				t.Errorf("untagged %v, want %v", tags, sorted(tc.untagged))
			}
			for _, s := range tc.nameHas {
				if !strings.Contains(p.Name(), s) {
					t.Errorf("Name() = %q, want it to say %q", p.Name(), s)
				}
			}
			for _, m := range plan.Manifests {
				if m.Rule.Rule == "" || m.Keep == "" {
					t.Errorf("deletion of %s has no rule or no way to keep it: %+v", m.Digest, m.Rule)
				}
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestReadWorkflow(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "ghcr", "cleanup.yml"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := Read("cleanup.yml", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, source string }{
		{"actions/delete-package-versions@v5", "cleanup.yml:13"},
		{"snok/container-retention-policy@v3.0.1", "cleanup.yml:21"},
		{"dataaxiom/ghcr-cleanup-action@0123456789abcdef0123456789abcdef01234567 (version unknown: modelled as v1.2.1", "cleanup.yml:30"},
		{"snok/container-retention-policy@v2 (dry-run: deletes nothing", "cleanup.yml:36"},
	}
	if len(ps) != len(want) {
		t.Fatalf("%d policies, want %d", len(ps), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(ps[i].Name(), w.name) || ps[i].Source() != w.source {
			t.Errorf("policy %d = %q at %s, want %q… at %s", i, ps[i].Name(), ps[i].Source(), w.name, w.source)
		}
	}
	for _, tc := range []struct {
		policy int
		repo   string
		want   bool
	}{
		{0, "acme/app", true},         // owner acme, package-name app
		{0, "other/app", false},       // another owner
		{0, "acme/web", false},        // another package
		{1, "anyone/web", true},       // account: user: the owner is the token's, unknown
		{1, "anyone/web-test", false}, // !web-test
		{2, "whoever/app", true},      // owner is ${{ github.repository_owner }}: unknown, the package decides
		{2, "whoever/web", false},
		{3, "acme/anything", true}, // image-names is an expression: every package
	} {
		if got := ps[tc.policy].Applies(tc.repo); got != tc.want {
			t.Errorf("policy %d Applies(%s) = %t, want %t", tc.policy, tc.repo, got, tc.want)
		}
	}
}

func TestReadWorkflowWithoutCleanup(t *testing.T) {
	wf := "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make\n"
	_, err := Read("build.yml", []byte(wf))
	if !errors.Is(err, errNoGHCRStep) {
		t.Fatalf("err = %v, want errNoGHCRStep", err)
	}
	for _, a := range []string{"actions/delete-package-versions", "snok/container-retention-policy", "dataaxiom/ghcr-cleanup-action"} {
		if !strings.Contains(err.Error(), a) {
			t.Errorf("error %q does not name %s", err, a)
		}
	}
}
