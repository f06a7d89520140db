//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/pullpath"
)

// CRIORegistries is the sysregistriesv2 tool hack/build-bins.sh crio
// builds (tools/crio-registries, go.podman.io/image/v5 v5.42.1).
const CRIORegistries = "crio-registries-v5.42.1"

// libSource is one pull source as tools/crio-registries prints it.
type libSource struct {
	Reference string `json:"reference"`
	Name      string `json:"name"`
	Insecure  bool   `json:"insecure"`
	Blocked   bool   `json:"blocked"`
	Mirror    bool   `json:"mirror"`
}

// libResult is what the library says of one reference.
type libResult struct {
	Ref     string      `json:"ref"`
	Sources []libSource `json:"sources"`
	Error   string      `json:"error"`
}

// source is one pull source as both sides can say it: the rewritten name,
// and whether it is a mirror, insecure, blocked.
type source struct {
	name                      string
	mirror, insecure, blocked bool
}

func (s source) String() string {
	return fmt.Sprintf("%s mirror=%t insecure=%t blocked=%t", s.name, s.mirror, s.insecure, s.blocked)
}

// regFixture is a registries.conf and its drop-ins, and the references to
// pull through them. A conf of "" is no main file: the drop-in folder is
// what --registries-config names.
type regFixture struct {
	name    string
	conf    string
	dropIns map[string]string
	refs    []string
}

const zeroDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

var regFixtures = []regFixture{
	{name: "prefix rewriting", conf: `
[[registry]]
prefix = "example.com/foo"
location = "example.com/bar"
[[registry.mirror]]
location = "mirror.local:5000/m"

[[registry]]
location = "example.com"
[[registry.mirror]]
location = "hub.local/example"
`, refs: []string{"example.com/foo/app:v1", "example.com/foo:v1", "example.com/foobar/app:v1", "example.com/foo/a/b/c@" + zeroDigest,
		"example.com:5000/foo/app:v1", "example.com/other:v1", "other.com/foo/app:v1"}},
	{name: "wildcards", conf: `
[[registry]]
prefix = "*.example.com"
[[registry.mirror]]
location = "mirror.local/sub"

[[registry]]
prefix = "*.deep.example.com"
location = ""
blocked = true

[[registry]]
prefix = "exact.example.com/team"
location = "exact.example.com/team"
[[registry.mirror]]
location = "team-mirror.local"
`, refs: []string{"a.example.com/app:v1", "b.c.example.com/app:v1", "x.deep.example.com/app:v1", "example.com/app:v1",
		"notexample.com/app:v1", "exact.example.com/team/app:v1", "exact.example.com/other/app:v1", "a.example.com:5000/app:v1"}},
	{name: "drop-ins override the main file and each other", conf: `
[[registry]]
location = "reg.io"
[[registry.mirror]]
location = "main-mirror.local"

[[registry]]
location = "kept.io"
[[registry.mirror]]
location = "kept-mirror.local"
`, dropIns: map[string]string{
		"10-first.conf": `
[[registry]]
location = "reg.io"
[[registry.mirror]]
location = "first-mirror.local"
[[registry.mirror]]
location = "second-mirror.local"
`,
		"20-second.conf": `
[[registry]]
location = "reg.io"
[[registry.mirror]]
location = "last-mirror.local"

[[registry]]
prefix = "new.io/team"
location = "new.io/team"
blocked = true
`,
		"README": `not a drop-in: no .conf`,
	}, refs: []string{"reg.io/app:v1", "kept.io/app:v1", "new.io/team/app:v1", "new.io/other/app:v1"}},
	{name: "a drop-in folder alone", dropIns: map[string]string{
		"01-mirrors.conf": `
[[registry]]
prefix = "docker.io/library"
location = "docker.io/library"
[[registry.mirror]]
location = "mirror.gcr.local/library"
`,
		"02-more.conf": `
[[registry]]
location = "quay.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "quay-mirror.local"
`,
	}, refs: []string{"busybox", "library/nginx:1", "docker.io/grafana/grafana:v1", "quay.io/app:v1", "quay.io/app@" + zeroDigest}},
	{name: "blocked", conf: `
[[registry]]
location = "blocked.io"
blocked = true

[[registry]]
location = "open.io"
[[registry.mirror]]
location = "blocked.io/mirror"
[[registry.mirror]]
location = "fine.local"

[[registry]]
prefix = "open.io/closed"
location = "open.io/closed"
blocked = true
[[registry.mirror]]
location = "fine.local/closed"
`, refs: []string{"blocked.io/app:v1", "open.io/app:v1", "open.io/closed/app:v1", "open.io/closed@" + zeroDigest}},
	{name: "pull-from-mirror and mirror-by-digest-only", conf: `
[[registry]]
location = "mixed.io"
[[registry.mirror]]
location = "digest-mirror.local"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "tag-mirror.local"
pull-from-mirror = "tag-only"
[[registry.mirror]]
location = "all-mirror.local"
pull-from-mirror = "all"
[[registry.mirror]]
location = "default-mirror.local"

[[registry]]
location = "digests.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "d1.local"
[[registry.mirror]]
location = "d2.local"
`, refs: []string{"mixed.io/app:v1", "mixed.io/app@" + zeroDigest, "mixed.io/app:v1@" + zeroDigest, "digests.io/app:v1", "digests.io/app@" + zeroDigest}},
	{name: "insecure", conf: `
[[registry]]
location = "plain.local:5000"
insecure = true
[[registry.mirror]]
location = "secure-mirror.local"
[[registry.mirror]]
location = "plain-mirror.local"
insecure = true

[[registry]]
location = "secure.io"
[[registry.mirror]]
location = "plain.local:5000/secure"
`, refs: []string{"plain.local:5000/app:v1", "secure.io/app:v1", "plain.local:5000/secure/app:v1"}},
	{name: "short names as the kubelet sends them (normalized)", conf: `
unqualified-search-registries = ["quay.io", "docker.io"]
short-name-mode = "enforcing"

[[registry]]
prefix = "docker.io"
location = "docker.io"
[[registry.mirror]]
location = "hub-mirror.local"
`, refs: []string{"busybox", "busybox:1.36", "library/busybox@" + zeroDigest, "grafana/grafana:v1"}},
}

// writeRegFixture writes f into a new folder and returns the path
// --registries-config takes, and the tool's -conf and -dir.
func writeRegFixture(t *testing.T, f regFixture) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	dropIns := filepath.Join(dir, "registries.conf.d")
	if err := os.Mkdir(dropIns, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, c := range f.dropIns {
		writeFile(t, dropIns, n, c)
	}
	if f.conf == "" {
		return dropIns, []string{"-dir", dropIns}
	}
	conf := writeFile(t, dir, "registries.conf", f.conf)
	return conf, []string{"-conf", conf, "-dir", dropIns}
}

// librarySources runs tools/crio-registries on a fixture.
func librarySources(t *testing.T, tool string, args, refs []string) []libResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, append(args, refs...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", tool, err, stderr.String())
	}
	var res []libResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(refs) {
		t.Fatalf("%s printed %d results for %d references (%v):\n%s", tool, len(res), len(refs), err, out)
	}
	return res
}

// libraryView is what the library's sources say, in regcheck's spelling:
// the docker transport sends docker.io's requests to registry-1.docker.io.
func libraryView(r libResult) []source {
	out := []source{}
	for _, s := range r.Sources {
		n := s.Name
		if rest, ok := strings.CutPrefix(n, "docker.io/"); ok {
			n = "registry-1.docker.io/" + rest
		}
		out = append(out, source{name: n, mirror: s.Mirror, insecure: s.Insecure, blocked: s.Blocked})
	}
	return out
}

// regcheckView is what pullpath says of ref.
func regcheckView(t *testing.T, c *pullpath.Config, ref string) ([]source, error) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := c.Endpoints(r)
	if err != nil {
		return nil, err
	}
	out := []source{}
	for _, ep := range eps {
		out = append(out, source{name: ep.URL.Host + "/" + ep.Repository, mirror: ep.Mirror, insecure: ep.SkipVerify, blocked: ep.Blocked})
	}
	return out, nil
}

// TestCRIORegistriesDifferential: regcheck's own reading of a CRI-O
// registries.conf and its drop-ins gives, for every reference of every
// fixture, the pull sources containers/image's sysregistriesv2 gives (the
// library CRI-O pulls with), in the same order: the rewritten repository,
// whether it is a mirror, insecure, and blocked.
func TestCRIORegistriesDifferential(t *testing.T) {
	tool, err := bins.Ensure("..", CRIORegistries, "crio")
	if err != nil {
		t.Fatal(err)
	}
	compared, seen := 0, map[string]int{}
	for _, f := range regFixtures {
		t.Run(f.name, func(t *testing.T) {
			path, args := writeRegFixture(t, f)
			c, err := pullpath.Load(path)
			if err != nil {
				t.Fatalf("regcheck cannot load %s: %v", path, err)
			}
			if c.Format() != pullpath.FormatRegistriesConf {
				t.Fatalf("%s read as %s, want registries.conf", path, c.Format())
			}
			for i, lib := range librarySources(t, tool, args, f.refs) {
				ref := f.refs[i]
				got, err := regcheckView(t, c, ref)
				if (err != nil) != (lib.Error != "") {
					t.Errorf("%s: regcheck error %v, library error %q", ref, err, lib.Error)
					continue
				}
				want := libraryView(lib)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s:\nregcheck: %v\nlibrary:  %v", ref, got, want)
				}
				compared++
				for _, s := range want {
					seen["mirror"] += btoi(s.mirror)
					seen["insecure"] += btoi(s.insecure)
					seen["blocked"] += btoi(s.blocked)
					// renamed: a source other than the reference's own name (a mirror, a rewritten prefix)
					seen["renamed"] += btoi(!strings.HasPrefix(ref, strings.TrimPrefix(s.name, "registry-1.")))
				}
			}
		})
	}
	t.Logf("%d references compared over %d fixtures; sources: %v", compared, len(regFixtures), seen)
	for _, k := range []string{"mirror", "insecure", "blocked", "renamed"} {
		if seen[k] == 0 {
			t.Errorf("no fixture gave a %s source: the table tests less than it says", k)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
