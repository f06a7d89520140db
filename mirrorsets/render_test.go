package mirrorsets

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/pullpath"
)

const (
	digestRef = "src.example/ns/app@sha256:0123456789012345678901234567890123456789012345678901234567890123"
	tagRef    = "src.example/ns/app:v1"
)

// pullPath is where a node reading the rendered file asks for ref, in
// order: host/repository, "blocked " before a source it refuses.
func pullPath(t *testing.T, cfg *pullpath.Config, ref string) []string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := cfg.Endpoints(r)
	if err != nil {
		t.Fatalf("endpoints of %s: %v", ref, err)
	}
	var out []string
	for _, ep := range eps {
		s := ep.URL.Host + "/" + ep.Repository
		if ep.Blocked {
			s = "blocked " + s
		}
		if ep.SkipVerify {
			s += " insecure"
		}
		out = append(out, s)
	}
	return out
}

func idms(name string, rules ...Rule) Object { return Object{Kind: KindIDMS, Name: name, Rules: rules} }
func itms(name string, rules ...Rule) Object { return Object{Kind: KindITMS, Name: name, Rules: rules} }
func icsp(name string, rules ...Rule) Object { return Object{Kind: KindICSP, Name: name, Rules: rules} }

func rule(source string, mirrors ...string) Rule { return Rule{Source: source, Mirrors: mirrors} }

func never(r Rule) Rule { r.NeverContactSource = true; return r }

// TestRender: the objects a cluster holds, rendered as the MCO renders
// them (openshift/runtime-utils pkg/registries), walked as containers/image
// walks the result: the endpoints for a digest and for a tag reference.
func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sets        Sets
		digest, tag []string
	}{
		{
			name:   "IDMS: digest-only mirrors, a tag goes to the source",
			sets:   Sets{Objects: []Object{idms("a", rule("src.example/ns", "mirror.example/ns"))}},
			digest: []string{"mirror.example/ns/app", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name:   "ITMS: tag-only mirrors, a digest goes to the source",
			sets:   Sets{Objects: []Object{itms("a", rule("src.example/ns", "mirror.example/ns"))}},
			digest: []string{"src.example/ns/app"},
			tag:    []string{"mirror.example/ns/app", "src.example/ns/app"},
		},
		{
			name:   "NeverContactSource blocks the source, for tags too",
			sets:   Sets{Objects: []Object{idms("a", never(rule("src.example/ns", "mirror.example/ns")))}},
			digest: []string{"mirror.example/ns/app", "blocked src.example/ns/app"},
			tag:    []string{"blocked src.example/ns/app"},
		},
		{
			name:   "ICSP is read as an IDMS without a policy",
			sets:   Sets{Objects: []Object{icsp("a", rule("src.example/ns", "mirror.example/ns"))}},
			digest: []string{"mirror.example/ns/app", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name: "several sets for one source merged in order: (B, C) and (A, B) give (A, B, C)",
			sets: Sets{Objects: []Object{
				idms("one", rule("src.example/ns", "b.example/ns", "c.example/ns")),
				idms("two", rule("src.example/ns", "a.example/ns", "b.example/ns")),
			}},
			digest: []string{"a.example/ns/app", "b.example/ns/app", "c.example/ns/app", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name: "an IDMS and an ICSP for one source merged into one digest list",
			sets: Sets{Objects: []Object{
				icsp("one", rule("src.example/ns", "b.example/ns")),
				idms("two", rule("src.example/ns", "a.example/ns", "b.example/ns")),
			}},
			digest: []string{"a.example/ns/app", "b.example/ns/app", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name: "an IDMS and an ITMS for one source: digest mirrors, tag mirrors, one registry",
			sets: Sets{Objects: []Object{
				itms("t", rule("src.example/ns", "tags.example/ns")),
				idms("d", rule("src.example/ns", "digests.example/ns")),
			}},
			digest: []string{"digests.example/ns/app", "src.example/ns/app"},
			tag:    []string{"tags.example/ns/app", "src.example/ns/app"},
		},
		{
			name:   "a mirror that is the source is no mirror set: its NeverContactSource ignored",
			sets:   Sets{Objects: []Object{idms("a", never(rule("src.example/ns", "src.example/ns")))}},
			digest: []string{"src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name: "the longest source wins: a repository's set hides its registry's",
			sets: Sets{Objects: []Object{
				idms("a", rule("src.example", "wide.example")),
				idms("b", rule("src.example/ns/app", "narrow.example/app")),
			}},
			digest: []string{"narrow.example/app", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name:   "a wildcard source is a prefix",
			sets:   Sets{Objects: []Object{idms("a", rule("*.example", "mirror.other/all"))}},
			digest: []string{"mirror.other/all/ns/app", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
		{
			name: "insecure registries mark the mirrors nested in them",
			sets: Sets{
				Objects:  []Object{idms("a", rule("src.example/ns", "mirror.example/ns"))},
				Insecure: []string{"mirror.example"},
			},
			digest: []string{"mirror.example/ns/app insecure", "src.example/ns/app"},
			tag:    []string{"src.example/ns/app"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Render(tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := pullpath.ParseRegistriesConf("rendered", data)
			if err != nil {
				t.Fatalf("the rendered file does not load: %v\n%s", err, data)
			}
			if got := pullPath(t, cfg, digestRef); !slices.Equal(got, tc.digest) {
				t.Errorf("digest: %q, want %q\n%s", got, tc.digest, data)
			}
			if got := pullPath(t, cfg, tagRef); !slices.Equal(got, tc.tag) {
				t.Errorf("tag: %q, want %q\n%s", got, tc.tag, data)
			}
		})
	}
}

// TestRenderFile: the file itself, as the MCO writes its tables.
func TestRenderFile(t *testing.T) {
	data, err := Render(Sets{Objects: []Object{
		idms("d", never(rule("src.example/ns", "m1.example/ns"))),
		itms("t", rule("src.example/ns", "m2.example/ns")),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := `[[registry]]
  location = "src.example/ns"
  blocked = true

  [[registry.mirror]]
    location = "m1.example/ns"
    pull-from-mirror = "digest-only"

  [[registry.mirror]]
    location = "m2.example/ns"
    pull-from-mirror = "tag-only"
`
	if got := string(data); strings.TrimSpace(got) != strings.TrimSpace(want) {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
}

// TestMergedMirrorsConflict: orders that conflict ((a, b) and (b, a))
// are not rejected; the loop is broken by name, as topo.go does.
func TestMergedMirrorsConflict(t *testing.T) {
	got, err := mergedMirrors("src", [][]string{{"b", "a"}, {"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("merged %q, want %q", got, want)
	}
}

func TestEmpty(t *testing.T) {
	for _, tc := range []struct {
		sets Sets
		want bool
	}{
		{Sets{}, true},
		{Sets{Objects: []Object{idms("a", rule("s.example", "s.example"))}}, true},
		{Sets{Objects: []Object{idms("a", rule("s.example", "m.example"))}}, false},
		{Sets{Insecure: []string{"m.example"}}, false},
	} {
		if got := tc.sets.Empty(); got != tc.want {
			t.Errorf("%+v: Empty() = %v, want %v", tc.sets, got, tc.want)
		}
	}
}
