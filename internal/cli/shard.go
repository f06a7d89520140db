package cli

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/types"
)

// Where --shard defaults from: the index Kubernetes gives each pod of an
// Indexed Job, and the count, which it does not give (set it to the Job's
// completions).
const (
	envShardIndex = "JOB_COMPLETION_INDEX"
	envShardCount = "REGCHECK_SHARD_COUNT"
)

// shardFlag is scan's --shard INDEX/COUNT.
type shardFlag struct{ value string }

func (f *shardFlag) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.value, "shard", "", "scan only part INDEX of COUNT (0-based) of the images, split by repository, as one pod of an Indexed Job (default: $"+envShardIndex+"/$"+envShardCount+" when both are set)")
}

// shard returns the part of the scan to run: --shard, else the
// environment's index and count; nil for the whole scan. An index without
// a count, or a count without an index, is an error: N pods of an Indexed
// Job would each scan everything.
func (f *shardFlag) shard(getenv func(string) string) (*types.Shard, error) {
	if f.value != "" {
		s, err := parseShard(f.value)
		if err != nil {
			return nil, fmt.Errorf("--shard %q: %w", f.value, err)
		}
		return s, nil
	}
	index, count := getenv(envShardIndex), getenv(envShardCount)
	switch {
	case index == "" && count == "":
		return nil, nil
	case count == "":
		return nil, fmt.Errorf("%s is %q but %s is not set: set it to the Job's completions, or pass --shard $(%s)/COUNT", envShardIndex, index, envShardCount, envShardIndex)
	case index == "":
		return nil, fmt.Errorf("%s is %q but %s is not set: pass --shard INDEX/COUNT", envShardCount, count, envShardIndex)
	}
	s, err := parseShard(index + "/" + count)
	if err != nil {
		return nil, fmt.Errorf("%s=%q, %s=%q: %w", envShardIndex, index, envShardCount, count, err)
	}
	return s, nil
}

// parseShard reads INDEX/COUNT: 0 <= INDEX < COUNT.
func parseShard(s string) (*types.Shard, error) {
	i, c, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(c)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return nil, errors.New("want INDEX/COUNT, as 0/4")
	case count < 1:
		return nil, errors.New("COUNT must be at least 1")
	case index < 0 || index >= count:
		return nil, fmt.Errorf("INDEX must be from 0 to %d", count-1)
	}
	return &types.Shard{Index: index, Count: count}, nil
}

// inShard reports whether the image ref belongs to shard s (every image
// does to nil): the FNV-1a 64 hash of its normalized repository
// (docker.io/library/nginx), or of its text when it does not parse, modulo
// the count. It depends on nothing but the name: every run and machine
// splits alike, and all of a repository's images fall in one shard.
func inShard(s *types.Shard, ref string) bool {
	if s == nil {
		return true
	}
	key := strings.TrimSpace(ref)
	if r, err := imageref.Parse(ref); err == nil {
		key = r.Repo
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()%uint64(s.Count) == uint64(s.Index)
}

// shardTargets keeps the targets in shard s.
func shardTargets(s *types.Shard, targets []types.Target) []types.Target {
	var out []types.Target
	for _, t := range targets {
		if inShard(s, t.Ref) {
			out = append(out, t)
		}
	}
	return out
}

// shardInventory keeps the containers whose image is in shard s: the
// running digests a cluster scan also walks are of the same repository.
func shardInventory(s *types.Shard, inv *inventory.Inventory) *inventory.Inventory {
	out := *inv
	out.Containers = nil
	for _, c := range inv.Containers {
		if inShard(s, c.Image) {
			out.Containers = append(out.Containers, c)
		}
	}
	return &out
}
