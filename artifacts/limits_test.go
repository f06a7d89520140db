package artifacts_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/walk"
)

// manyReferrers is a store whose referrers API lists n referrers of any
// subject, none of which it serves; it counts the manifests asked.
type manyReferrers struct {
	n         int
	manifests atomic.Int64
}

func (m *manyReferrers) Resolve(context.Context, name.Repository, string) (walk.Descriptor, error) {
	return walk.Descriptor{}, types.ErrNotFound
}

func (m *manyReferrers) Manifest(_ context.Context, _ name.Repository, d string) (walk.Manifest, error) {
	m.manifests.Add(1)
	if d == subjectDigest {
		return walk.Manifest{MediaType: ocispec.MediaTypeImageManifest}, nil
	}
	return walk.Manifest{}, types.ErrNotFound
}

func (m *manyReferrers) Blob(context.Context, name.Repository, string) error { return nil }

func (m *manyReferrers) Tags(context.Context, name.Repository) ([]string, error) { return nil, nil }

func (m *manyReferrers) Referrers(context.Context, name.Repository, string, string) ([]ocispec.Descriptor, error) {
	out := make([]ocispec.Descriptor, m.n)
	for i := range out {
		out[i] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Size: 100,
			Digest:       digest.FromString(fmt.Sprint("referrer ", i)),
			ArtifactType: "application/vnd.dev.sigstore.bundle.v0.3+json"}
	}
	return out, nil
}

var subjectDigest = digest.FromString("subject").String()

// TestMaxReferrers: a subject with more referrers than MaxReferrers has
// only the first MaxReferrers read, and a limit-exceeded fault says how
// many were left out, so that an artifact not found among them is
// unknown, never missing; at the cap, no fault.
func TestMaxReferrers(t *testing.T) {
	t.Parallel()
	repo, err := name.NewRepository("127.0.0.1:5000/many")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n         int
		wantFault bool
	}{
		{artifacts.MaxReferrers, false},
		{artifacts.MaxReferrers + 500, true},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			t.Parallel()
			src := &manyReferrers{n: tc.n}
			set, err := artifacts.NewSourceFinder(src).Find(context.Background(), repo, subjectDigest)
			if err != nil {
				t.Fatal(err)
			}
			if got := src.manifests.Load(); got > int64(3*artifacts.MaxReferrers) {
				t.Errorf("%d manifests asked for %d referrers, want at most %d", got, tc.n, 3*artifacts.MaxReferrers)
			}
			if got := len(set.Artifacts); got != min(tc.n, artifacts.MaxReferrers) {
				t.Errorf("%d artifacts kept, want %d", got, min(tc.n, artifacts.MaxReferrers))
			}
			var limit []types.Finding
			for _, f := range set.Faults {
				if f.Code == types.LimitExceeded {
					limit = append(limit, f)
				}
			}
			switch {
			case !tc.wantFault && len(limit) > 0:
				t.Errorf("limit-exceeded at the cap: %+v", limit)
			case tc.wantFault && (len(limit) != 1 || !strings.Contains(limit[0].Message, "the last 500 were not checked")):
				t.Errorf("faults %+v, want one limit-exceeded about 500 referrers", set.Faults)
			}
			sigs := artifacts.Query{Kind: artifacts.Signature}
			if want := map[bool]artifacts.Presence{false: artifacts.Missing, true: artifacts.Unknown}[tc.wantFault]; set.Presence(sigs) != want {
				t.Errorf("signature %s, want %s", set.Presence(sigs), want)
			}
		})
	}
}
