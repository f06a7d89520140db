package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/types"
)

func TestShardFlag(t *testing.T) {
	for _, tc := range []struct {
		name, flag string
		env        map[string]string
		want       *types.Shard
		wantErr    string
	}{
		{name: "none", want: nil},
		{name: "flag", flag: "1/4", want: &types.Shard{Index: 1, Count: 4}},
		{name: "one of one", flag: "0/1", want: &types.Shard{Index: 0, Count: 1}},
		{name: "flag over env", flag: "3/4", env: map[string]string{envShardIndex: "0", envShardCount: "2"}, want: &types.Shard{Index: 3, Count: 4}},
		{name: "env", env: map[string]string{envShardIndex: "2", envShardCount: "3"}, want: &types.Shard{Index: 2, Count: 3}},
		{name: "index without count", env: map[string]string{envShardIndex: "2"}, wantErr: "REGCHECK_SHARD_COUNT is not set"},
		{name: "count without index", env: map[string]string{envShardCount: "4"}, wantErr: "JOB_COMPLETION_INDEX is not set"},
		{name: "env index past count", env: map[string]string{envShardIndex: "4", envShardCount: "4"}, wantErr: "INDEX must be from 0 to 3"},
		{name: "index past count", flag: "4/4", wantErr: "INDEX must be from 0 to 3"},
		{name: "negative", flag: "-1/4", wantErr: "INDEX must be"},
		{name: "zero count", flag: "0/0", wantErr: "COUNT must be at least 1"},
		{name: "no slash", flag: "2", wantErr: "want INDEX/COUNT"},
		{name: "unexpanded", flag: "$(JOB_COMPLETION_INDEX)/4", wantErr: "want INDEX/COUNT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := shardFlag{value: tc.flag}
			got, err := f.shard(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("shard %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestInShard: a repository's shard is a function of its normalized name
// alone (these values hold on every machine), every image of it is in the
// same shard, and each image is in exactly one shard.
func TestInShard(t *testing.T) {
	for ref, want := range map[string]int{
		"nginx":                                   2, // docker.io/library/nginx
		"docker.io/library/nginx:1.27":            2,
		"index.docker.io/library/nginx":           2,
		"nginx@sha256:" + strings.Repeat("a", 64): 2,
		"ghcr.io/org/app:v1":                      2,
		"127.0.0.1:5000/gc/buildx:v1":             1,
		"not a ref":                               0, // by its text
	} {
		for i := range 4 {
			if got := inShard(&types.Shard{Index: i, Count: 4}, ref); got != (i == want) {
				t.Errorf("%s in shard %d/4: %t, want shard %d", ref, i, got, want)
			}
		}
	}
	if !inShard(nil, "anything") {
		t.Error("a whole scan holds every image")
	}
}

func TestShardInventory(t *testing.T) {
	inv := &inventory.Inventory{
		Containers: []inventory.Container{{Image: "nginx:1.27"}, {Image: "127.0.0.1:5000/gc/buildx:v1"}, {Image: "nginx@sha256:" + strings.Repeat("b", 64)}},
		NodeImages: map[string][]string{"sha256:x": {"node-a"}},
	}
	got := shardInventory(&types.Shard{Index: 2, Count: 4}, inv)
	if len(got.Containers) != 2 || got.Containers[0].Image != "nginx:1.27" || len(got.NodeImages) != 1 {
		t.Errorf("shard 2/4 of the inventory: %+v", got)
	}
	if len(inv.Containers) != 3 {
		t.Error("the inventory itself changed")
	}
}

// TestScanShards: of 4 shards of one image, one holds it; the others hold
// none ("images": [], exit 0); each says which shard it is.
func TestScanShards(t *testing.T) {
	root, _ := gcStorage(t)
	held := 0
	for i := range 4 {
		var out, errb bytes.Buffer
		code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
			[]string{"scan", "-o", "json", "--storage", root, "--shard", fmt.Sprintf("%d/4", i), "reg.example/app:v1"})
		if code != ExitClean {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, out.String(), errb.String())
		}
		var doc struct {
			Images  []json.RawMessage `json:"images"`
			Summary struct {
				Shard *types.Shard `json:"shard"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Images == nil || doc.Summary.Shard == nil || *doc.Summary.Shard != (types.Shard{Index: i, Count: 4}) {
			t.Errorf("shard %d: %s", i, out.String())
		}
		held += len(doc.Images)
	}
	if held != 1 {
		t.Errorf("4 shards hold %d images, want 1", held)
	}
}
