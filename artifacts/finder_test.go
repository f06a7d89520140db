package artifacts_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// want is one artifact a case expects, as "kind layout whole|code
// [platform]".
type want string

// describe writes an artifact as a want.
func describe(a artifacts.Artifact) want {
	state := "whole"
	if !a.Whole {
		state = "none"
		for _, f := range a.Findings {
			state = string(f.Code)
			break
		}
	}
	s := fmt.Sprintf("%s %s %s", a.Kind, a.Layout, state)
	if a.Platform != "" {
		s += " " + a.Platform
	}
	return want(s)
}

// presences are the Presence of each kind, for the image's own digest.
type presences struct{ sig, att artifacts.Presence }

func TestFindOnDistribution3(t *testing.T) {
	reg := startV3(t)
	const slsa = "https://slsa.dev/provenance/v1"
	tests := []struct {
		name string
		// setup pushes the image and its artifacts, breaks what the case
		// breaks, and returns the image's digest.
		setup    func(t *testing.T, repo name.Repository) string
		want     []want
		presence presences
		preds    []string // the attestations' predicate types, where one is
	}{
		{
			name:     "unsigned",
			setup:    func(t *testing.T, repo name.Repository) string { return pushImage(t, repo, "v1", "unsigned") },
			presence: presences{artifacts.Missing, artifacts.Missing},
		},
		{
			name: "legacy signature and attestation",
			setup: func(t *testing.T, repo name.Repository) string {
				d := pushImage(t, repo, "v1", "legacy")
				legacySig("payload legacy").push(t, repo, cosignTag(d, ".sig"))
				legacyAtt(slsa).push(t, repo, cosignTag(d, ".att"))
				return d
			},
			want:     []want{"attestation cosign-tag whole", "signature cosign-tag whole"},
			presence: presences{artifacts.Present, artifacts.Present},
			preds:    []string{slsa},
		},
		{
			name: "signature layer deleted from storage",
			setup: func(t *testing.T, repo name.Repository) string {
				d := pushImage(t, repo, "v1", "layer-gone")
				_, layers := legacySig("payload layer-gone").push(t, repo, cosignTag(d, ".sig"))
				deleteBlobData(t, reg, layers[0])
				return d
			},
			want:     []want{"signature cosign-tag blob-missing"},
			presence: presences{artifacts.Missing, artifacts.Missing},
		},
		{
			name: "signature manifest deleted from storage: the tag dangles",
			setup: func(t *testing.T, repo name.Repository) string {
				d := pushImage(t, repo, "v1", "manifest-gone")
				m, _ := legacySig("payload manifest-gone").push(t, repo, cosignTag(d, ".sig"))
				deleteBlobData(t, reg, m)
				return d
			},
			want:     []want{"signature cosign-tag manifest-missing"},
			presence: presences{artifacts.Missing, artifacts.Missing},
		},
		{
			name: "signature deleted through the API (its tag goes with it)",
			setup: func(t *testing.T, repo name.Repository) string {
				d := pushImage(t, repo, "v1", "api-deleted")
				m, _ := legacySig("payload api-deleted").push(t, repo, cosignTag(d, ".sig"))
				deleteManifest(t, repo, m)
				return d
			},
			presence: presences{artifacts.Missing, artifacts.Missing},
		},
		{
			name: "bundles under the referrers tag",
			setup: func(t *testing.T, repo name.Repository) string {
				d := pushImage(t, repo, "v1", "bundles")
				bundle(d, "dsse-envelope", "https://sigstore.dev/cosign/sign/v1").push(t, repo, "")
				bundle(d, "dsse-envelope", slsa).push(t, repo, "")
				return d
			},
			want:     []want{"attestation referrers-tag whole", "signature referrers-tag whole"},
			presence: presences{artifacts.Present, artifacts.Present},
			preds:    []string{slsa},
		},
		{
			name: "bundle referrer deleted, still listed by the referrers tag",
			setup: func(t *testing.T, repo name.Repository) string {
				d := pushImage(t, repo, "v1", "bundle-deleted")
				m, _ := bundle(d, "message-signature", "").push(t, repo, "")
				deleteManifest(t, repo, m)
				return d
			},
			want:     []want{"signature referrers-tag manifest-missing"},
			presence: presences{artifacts.Missing, artifacts.Missing},
		},
		{
			name: "index signed per platform, one child's signature layer gone",
			setup: func(t *testing.T, repo name.Repository) string {
				d, children := pushIndex(t, repo, "v1")
				legacySig("payload index").push(t, repo, cosignTag(d, ".sig"))
				legacySig("payload amd64").push(t, repo, cosignTag(children[0], ".sig"))
				_, layers := legacySig("payload arm64").push(t, repo, cosignTag(children[1], ".sig"))
				deleteBlobData(t, reg, layers[0])
				return d
			},
			want: []want{"signature cosign-tag whole", "signature cosign-tag whole linux/amd64",
				"signature cosign-tag blob-missing linux/arm64"},
			presence: presences{artifacts.Present, artifacts.Missing},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := repoOf(t, reg.Host(), fmt.Sprintf("case%d", i))
			subject := tt.setup(t, repo)
			s, _ := newFinder(t, reg.Host())
			set, err := artifacts.NewFinder(s).Find(context.Background(), repo, subject)
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Faults) > 0 {
				t.Fatalf("faults on a healthy registry: %+v", set.Faults)
			}
			var got []want
			for _, a := range set.Artifacts {
				got = append(got, describe(a))
				if a.Kind == artifacts.Attestation && a.Whole && !slices.Equal(a.PredicateTypes, tt.preds) {
					t.Errorf("%s: predicate types %v, want %v", a.Ref, a.PredicateTypes, tt.preds)
				}
			}
			slices.Sort(got)
			w := slices.Clone(tt.want)
			slices.Sort(w)
			if !slices.Equal(got, w) {
				t.Errorf("artifacts:\n got %q\nwant %q", got, w)
			}
			sig := set.Presence(artifacts.Query{Kind: artifacts.Signature})
			att := set.Presence(artifacts.Query{Kind: artifacts.Attestation, PredicateType: slsa})
			if sig != tt.presence.sig || att != tt.presence.att {
				t.Errorf("presence: signature %s, attestation %s; want %s, %s", sig, att, tt.presence.sig, tt.presence.att)
			}
		})
	}
}

// TestFindPerPlatformPresence checks that a child's lost signature is
// missing for that child's digest and not for its sibling's.
func TestFindPerPlatformPresence(t *testing.T) {
	reg := startV3(t)
	repo := repoOf(t, reg.Host(), "perplatform")
	d, children := pushIndex(t, repo, "v1")
	legacySig("amd64").push(t, repo, cosignTag(children[0], ".sig"))
	s, _ := newFinder(t, reg.Host())
	set, err := artifacts.NewFinder(s).Find(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		subject string
		want    artifacts.Presence
	}{{d, artifacts.Missing}, {children[0], artifacts.Present}, {children[1], artifacts.Missing}} {
		if got := set.Presence(artifacts.Query{Kind: artifacts.Signature, Subject: tt.subject}); got != tt.want {
			t.Errorf("signature of %s: %s, want %s", tt.subject, got, tt.want)
		}
	}
}

// TestFindReferrersAPI runs against go-containerregistry's registry with
// its referrers API on: neither real registry binary here serves it.
func TestFindReferrersAPI(t *testing.T) {
	const slsa = "https://slsa.dev/provenance/v1"
	host := startReferrersRegistry(t, nil)
	repo := repoOf(t, host, "api")
	d := pushImage(t, repo, "v1", "api")
	bundle(d, "message-signature", "").push(t, repo, "")
	bundle(d, "dsse-envelope", slsa).push(t, repo, "")
	// OCI 1.1: without an artifactType the config's media type stands for it.
	sbom := artifact{configType: "application/spdx+json", subject: d, layers: []layerSpec{{mediaType: "application/spdx+json", body: "{}"}}}
	sbom.push(t, repo, "")
	s, _ := newFinder(t, host)
	set, err := artifacts.NewFinder(s).Find(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	var got []want
	for _, a := range set.Artifacts {
		got = append(got, describe(a))
	}
	w := []want{"attestation referrers-api whole", "sbom referrers-api whole", "signature referrers-api whole"}
	if !slices.Equal(got, w) || len(set.Faults) > 0 {
		t.Fatalf("got %q, faults %+v; want %q", got, set.Faults, w)
	}
	if p := set.Presence(artifacts.Query{Kind: artifacts.Attestation, PredicateType: slsa}); p != artifacts.Present {
		t.Errorf("slsa attestation: %s", p)
	}
	if p := set.Presence(artifacts.Query{Kind: artifacts.Attestation, PredicateType: "https://example.com/other"}); p != artifacts.Missing {
		t.Errorf("another predicate's attestation: %s", p)
	}
	if refs, _ := s.Referrers(context.Background(), repo, d, "application/spdx+json"); len(refs) != 1 {
		t.Errorf("artifactType filter: %d referrers, want 1", len(refs))
	}
}

// TestFindFaults checks that a registry that fails is a fault, never
// missing: the referrers API answering 503, the tag list refused, a
// signature's blob HEAD answering 503.
func TestFindFaults(t *testing.T) {
	tests := []struct {
		name string
		fail func(r *http.Request) bool // which requests answer 503
		want types.Code
		// kind is what the fault hides: unknown, not missing.
		kind artifacts.Kind
	}{
		{"referrers API 503", func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/referrers/") }, types.RegistryFault, artifacts.Attestation},
		{"tag list 503 and the .sig tag 503", func(r *http.Request) bool {
			return strings.HasSuffix(r.URL.Path, "/tags/list") || strings.HasSuffix(r.URL.Path, ".sig")
		}, types.RegistryFault, artifacts.Signature},
		{"signature blob 503", func(r *http.Request) bool {
			return r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/blobs/")
		}, types.RegistryFault, artifacts.Signature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var on bool
			host := startReferrersRegistry(t, func(w http.ResponseWriter, r *http.Request) bool {
				if on && tt.fail(r) {
					http.Error(w, "unavailable", http.StatusServiceUnavailable)
					return true
				}
				return false
			})
			repo := repoOf(t, host, "faults")
			d := pushImage(t, repo, "v1", "faults")
			legacySig("payload").push(t, repo, cosignTag(d, ".sig"))
			on = true
			s, _ := newFinder(t, host)
			set, err := artifacts.NewFinder(s).Find(context.Background(), repo, d)
			if err != nil {
				t.Fatal(err)
			}
			if got := set.Presence(artifacts.Query{Kind: tt.kind}); got != artifacts.Unknown {
				t.Errorf("%s presence %s, want unknown (faults %+v)", tt.kind, got, set.Faults)
			}
			codes := map[types.Code]bool{}
			for _, f := range set.Faults {
				codes[f.Code] = true
			}
			for _, a := range set.Artifacts {
				for _, f := range a.Findings {
					codes[f.Code] = true
				}
			}
			if !codes[tt.want] {
				t.Errorf("no %s finding: %+v", tt.want, set)
			}
			for c := range codes {
				if !c.Fault() {
					t.Errorf("a fault reported as %s", c)
				}
			}
		})
	}
}

// TestFindRejectsNonDigest checks the one error Find returns.
func TestFindRejectsNonDigest(t *testing.T) {
	s, repo := newFinder(t, "127.0.0.1:1")
	if _, err := artifacts.NewFinder(s).Find(context.Background(), repo("x"), "latest"); err == nil {
		t.Fatal("a tag as subject: no error")
	}
}

var _ = registry.V3
