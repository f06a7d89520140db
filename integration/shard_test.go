//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

// TestShardUnion scans the fixtures on the real distribution 3.x whole,
// then as 4 shards (--shard i/4, the CLI in process): each result says
// which shard it is, no image is in two shards, every repository is in
// one, and their union is the whole scan image for image. A shard given by
// the environment of an Indexed Job (JOB_COMPLETION_INDEX and
// REGCHECK_SHARD_COUNT) is the same shard.
func TestShardUnion(t *testing.T) {
	r, imgs := startRegistry(t, registry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// More repositories: 3 prefixes of the 7 fixtures, each also pinned
	// (two images in one repository), their children pinned, and
	// references that are broken or invalid.
	var refs []string
	for _, prefix := range []string{"", "team-a/", "team-b/"} {
		set := imgs
		if prefix != "" {
			var err error
			if set, err = fixture.Push(ctx, r.Host(), prefix); err != nil {
				t.Fatal(err)
			}
		}
		for _, fx := range set {
			repo := strings.TrimSuffix(fx.Ref, ":v1")
			refs = append(refs, fx.Ref, repo+"@"+fx.Digest.String())
			for _, c := range fx.Children {
				refs = append(refs, repo+"@"+c.Digest.String())
			}
		}
	}
	refs = append(refs, r.Host()+"/gc/single:gone", r.Host()+"/nothere/app:v1", "Not/A:Valid:Ref")
	list := filepath.Join(t.TempDir(), "images.txt")
	if err := os.WriteFile(list, []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	whole, wholeCode, _ := scanCLI(t, "--images-from", list)
	if whole.Summary.Shard != nil {
		t.Errorf("an unsharded scan says shard %+v", whole.Summary.Shard)
	}
	union := map[string]*types.Image{}
	inShard := map[string]int{} // repository → shard
	worst := 0
	for i := range 4 {
		doc, code, _ := scanCLI(t, "--images-from", list, "--shard", fmt.Sprintf("%d/4", i))
		if s := doc.Summary.Shard; s == nil || s.Index != i || s.Count != 4 {
			t.Errorf("shard %d/4 says %+v", i, s)
		}
		if doc.Summary.Images != len(doc.Images) {
			t.Errorf("shard %d: summary counts %d images of %d", i, doc.Summary.Images, len(doc.Images))
		}
		t.Logf("shard %d/4: %d images, exit %d", i, len(doc.Images), code)
		if code != cli.ExitClean && code != cli.ExitFindings {
			t.Errorf("shard %d/4 exits %d", i, code)
		}
		worst = max(worst, code)
		for _, im := range doc.Images {
			if _, dup := union[im.Reference]; dup {
				t.Errorf("%s is in two shards", im.Reference)
			}
			union[im.Reference] = im
			repo := im.Reference
			if ref, err := imageref.Parse(im.Reference); err == nil {
				repo = ref.Repo
			}
			if j, seen := inShard[repo]; seen && j != i {
				t.Errorf("repository %s is in shards %d and %d", repo, j, i)
			}
			inShard[repo] = i
		}
	}
	if len(inShard) < 8 {
		t.Errorf("%d repositories: too few to tell a split", len(inShard))
	}
	// The broken references make the whole scan, and the shards holding
	// them, exit 1; no shard exits otherwise than 0 or 1.
	if wholeCode != cli.ExitFindings || worst != cli.ExitFindings {
		t.Errorf("exit %d whole, %d the worst shard; want %d (broken references)", wholeCode, worst, cli.ExitFindings)
	}
	sameImages(t, "4 shards", unionOf(union), whole.Images, len(whole.Images))

	// The environment of an Indexed Job pod gives the same shard.
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	t.Setenv("REGCHECK_SHARD_COUNT", "4")
	env, _, _ := scanCLI(t, "--images-from", list)
	flag, _, _ := scanCLI(t, "--images-from", list, "--shard", "2/4")
	if s := env.Summary.Shard; s == nil || *s != (types.Shard{Index: 2, Count: 4}) {
		t.Errorf("JOB_COMPLETION_INDEX=2 REGCHECK_SHARD_COUNT=4 says shard %+v", s)
	}
	sameImages(t, "shard 2/4 from the environment", env.Images, flag.Images, len(flag.Images))
}

func unionOf(m map[string]*types.Image) []*types.Image {
	out := make([]*types.Image, 0, len(m))
	for _, im := range m {
		out = append(out, im)
	}
	return out
}
