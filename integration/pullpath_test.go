//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/testing/faultproxy"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/loopback"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/types"
)

// pathCase is one node configuration of the parity test: a containerd
// hosts.toml for the upstream registry, or a k3s registries.yaml that k3s
// would translate into one.
type pathCase struct {
	name string
	// hosts is the hosts.toml of the upstream's host directory; k3s, a
	// registries.yaml (ctr is given its translation, as k3s writes it).
	hosts, k3s string
	// codes are finding codes the case must show on some image.
	codes []types.Code
	// faulting, when set, is how a mirror the node asks first faults
	// ("503", "refused"): where ctr fails (the registry's 404 on a lost
	// piece), regcheck says unknown, naming the mirror's fault and the
	// registry's 404, as the mirror may hold the piece.
	faulting string
}

// TestPullPathParity: the real containerd v2.4.2 is the ground truth. For
// every fixture and node configuration, regcheck scan --registries-config
// says broken exactly when `ctr content fetch --skip-metadata --platform
// linux/amd64 --hosts-dir DIR` (the kubelet's pull: resolve, then fetch
// the platform's manifest, config and layers, without other platforms'
// metadata) fails. Upstream: docker/distribution 2.8.3 after its own GC;
// mirror: distribution 3.1.2 holding the same digests. Where a mirror
// faults (503 behind the fault proxy, or a closed port) and the registry
// answers 404, ctr fails and regcheck says unknown: a faulting endpoint
// hides what it holds.
func TestPullPathParity(t *testing.T) {
	if why := containerdReason(); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("containerd cannot run: %s", why)
		}
		t.Skip(why)
	}
	up, imgs := startRegistry(t, registry.V2)
	collect(t, up)
	mirror := startEmpty(t, registry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := fixture.Push(ctx, mirror.Host(), "gc/"); err != nil {
		t.Fatal(err)
	}
	empty := startEmpty(t, registry.V3)
	closed := loopback.Closed(t)
	unavailable, err := faultproxy.Start(faultproxy.Config{Upstream: mirror.Host(), Rules: []faultproxy.Rule{
		{Fault: faultproxy.Unavailable, Kinds: []faultproxy.Kind{faultproxy.ManifestByTag, faultproxy.ManifestByDigest, faultproxy.Blob}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer unavailable.Close()
	cd := startContainerd(t, true)

	U, M, E, C, F := up.Host(), mirror.Host(), empty.Host(), closed, unavailable.Host()
	mirrorOf := func(host, caps string) string {
		return fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [%s]\n", "http://"+U, "http://"+host, caps)
	}
	k3sMirror := func(endpoints ...string) string {
		return fmt.Sprintf("mirrors:\n  %q:\n    endpoint: [%s]\n", U, strings.Join(endpoints, ", "))
	}
	cases := []pathCase{
		{name: "no mirror", hosts: fmt.Sprintf("server = %q\n", "http://"+U)},
		{name: "mirror whole", hosts: mirrorOf(M, `"pull", "resolve"`), codes: []types.Code{types.MirrorOnly}},
		{name: "mirror empty", hosts: mirrorOf(E, `"pull", "resolve"`), codes: []types.Code{types.MirrorLacks}},
		{name: "mirror unreachable", hosts: mirrorOf(C, `"pull", "resolve"`), codes: []types.Code{types.MirrorUnavailable}, faulting: "refused"},
		{name: "mirror 503", hosts: mirrorOf(F, `"pull", "resolve"`), codes: []types.Code{types.MirrorUnavailable}, faulting: "503"},
		{name: "fallback disabled, mirror whole", hosts: fmt.Sprintf("server = %q\n", "http://"+M), codes: []types.Code{types.MirrorOnly}},
		{name: "fallback disabled, mirror empty", hosts: fmt.Sprintf("server = %q\n", "http://"+E)},
		{name: "pull-only mirror", hosts: mirrorOf(M, `"pull"`), codes: []types.Code{types.MirrorOnly}},
		{name: "k3s: no mirror", k3s: "mirrors: {}\n"},
		{name: "k3s: mirror whole", k3s: k3sMirror(`"http://` + M + `"`), codes: []types.Code{types.MirrorOnly}},
		{name: "k3s: mirror empty", k3s: k3sMirror(`"http://` + E + `"`), codes: []types.Code{types.MirrorLacks}},
		{name: "k3s: mirror unreachable", k3s: k3sMirror(`"http://` + C + `"`), codes: []types.Code{types.MirrorUnavailable}, faulting: "refused"},
	}
	var table []string
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			config, hostsDir := pathConfig(t, tc, U)
			fetched := map[string]string{} // ref → ctr's error, "" when it fetched
			var refs []string
			for _, im := range imgs {
				ref := im.Ref
				refs = append(refs, ref)
				out, err := cd.ctr(fmt.Sprintf("case%d", i), "content", "fetch", "--skip-metadata", "--platform", "linux/amd64", "--hosts-dir", hostsDir, ref)
				fetched[ref] = ""
				if err != nil {
					fetched[ref] = lastLine(string(out))
				}
			}
			doc, _, _ := scanCLI(t, append([]string{"--platform", "linux/amd64", "--registries-config", config, "--no-cache"}, refs...)...)
			got := byReference(doc)
			seen, faulted := map[types.Code]bool{}, 0
			for _, ref := range refs {
				im := got[ref]
				if im == nil {
					t.Errorf("%s: not in the report", ref)
					continue
				}
				for _, f := range im.Findings {
					seen[f.Code] = true
					t.Logf("%s: %s %s: %s", shortRef(ref), f.Severity, f.Code, f.Message)
				}
				if why := parity(tc, im, fetched[ref]); why != "" {
					t.Errorf("%s: regcheck %s, ctr fetch %s: %s", ref, im.Verdict, orOK(fetched[ref]), why)
					for _, f := range im.Findings {
						t.Logf("    %s %s: %s", f.Severity, f.Code, f.Message)
					}
				}
				if tc.faulting != "" && fetched[ref] != "" {
					faulted++
				}
				table = append(table, fmt.Sprintf("| %s | %s | %s | %s |", tc.name, shortRef(ref), im.Verdict, orOK(fetched[ref])))
			}
			for _, c := range tc.codes {
				if !seen[c] {
					t.Errorf("no image has a %s finding", c)
				}
			}
			if tc.faulting != "" && faulted == 0 {
				t.Error("ctr fetched every image: no lost piece behind the faulting mirror")
			}
		})
	}
	sort.Strings(table)
	t.Logf("ctr parity (linux/amd64):\n| case | image | regcheck | ctr content fetch |\n|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// parity says how regcheck's verdict on im disagrees with ctr's fetch
// (ctrErr, "" when it fetched), or "". Broken exactly when ctr fails;
// where a mirror faulted, ctr's failure is unknown to regcheck, naming the
// mirror's fault and the registry's 404.
func parity(tc pathCase, im *types.Image, ctrErr string) string {
	ctrFails := ctrErr != ""
	if tc.faulting != "" && ctrFails {
		if im.Verdict != types.Unknown {
			return "want unknown: the faulting mirror may hold what the registry lost"
		}
		for _, f := range im.Findings {
			if f.Code.Fault() && strings.Contains(f.Message, "mirror http://") && strings.Contains(f.Message, "registry http://") &&
				strings.Contains(f.Message, tc.faulting) && strings.Contains(f.Message, "404") {
				return ""
			}
		}
		return "no fault finding names both the mirror's answer and the registry's 404"
	}
	if (im.Verdict == types.Broken) != ctrFails || im.Verdict == types.Unknown {
		return "want broken exactly when ctr fails"
	}
	return ""
}

// pathConfig writes a case's configuration: what regcheck reads, and the
// hosts directory ctr reads (for a k3s case, its translation).
func pathConfig(t *testing.T, tc pathCase, upstream string) (config, hostsDir string) {
	t.Helper()
	dir := t.TempDir()
	hostsDir = filepath.Join(dir, "certs.d")
	if tc.k3s == "" {
		if err := os.MkdirAll(filepath.Join(hostsDir, upstream), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostsDir, upstream, "hosts.toml"), []byte(tc.hosts), 0o644); err != nil {
			t.Fatal(err)
		}
		return hostsDir, hostsDir
	}
	config = filepath.Join(dir, "registries.yaml")
	if err := os.WriteFile(config, []byte(tc.k3s), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := pullpath.Load(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := pullpath.WriteHostsDir(cfg, hostsDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(hostsDir, upstream, "hosts.toml")); os.IsNotExist(err) {
		// No mirror for the host: k3s writes nothing, and containerd
		// asks the registry itself, over plain HTTP as the loopback
		// registry speaks it.
		if err := os.MkdirAll(filepath.Join(hostsDir, upstream), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hostsDir, upstream, "hosts.toml"), []byte(fmt.Sprintf("server = %q\n", "http://"+upstream)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return config, hostsDir
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func orOK(s string) string {
	if s == "" {
		return "ok"
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return "fails: " + s
}

func shortRef(ref string) string {
	if i := strings.Index(ref, "/"); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

// TestPullPathRegistriesConf: a CRI-O registries.conf, whose runtime
// (containers/image) takes every piece of an image from the source that
// served its manifest. No CRI-O runs here: the expected verdicts are
// containers/image's rules (docs/pull-path.md). A mirror that lacks the
// image hands the pull to the registry, for a tag and for a digest alike;
// a tag-only mirror serves tags and never digests.
func TestPullPathRegistriesConf(t *testing.T) {
	up, imgs := startRegistry(t, registry.V3)
	mirror := startEmpty(t, registry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := fixture.Push(ctx, mirror.Host(), "gc/"); err != nil {
		t.Fatal(err)
	}
	empty := startEmpty(t, registry.V3)
	var single fixture.Image
	for _, im := range imgs {
		if im.Name == "single" {
			single = im
		}
	}
	pinned := strings.Replace(single.Ref, ":v1", "@"+single.Digest.String(), 1)
	conf := func(mirror, pull string) string {
		s := fmt.Sprintf("[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n", up.Host(), up.Host(), mirror)
		if pull != "" {
			s += fmt.Sprintf("pull-from-mirror = %q\n", pull)
		}
		return s
	}
	for _, tc := range []struct {
		name, conf, ref string
		want            types.Verdict
		code            types.Code
	}{
		{"empty mirror, by tag", conf(empty.Host(), ""), single.Ref, types.OK, types.MirrorLacks},
		{"empty mirror, by digest", conf(empty.Host(), ""), pinned, types.OK, types.MirrorLacks},
		{"tag-only mirror, by tag", conf(mirror.Host(), "tag-only"), single.Ref, types.OK, ""},
		{"tag-only mirror, by digest", conf(mirror.Host(), "tag-only"), pinned, types.OK, ""},
		{"digest-only mirror, by digest", conf(empty.Host(), "digest-only"), pinned, types.OK, types.MirrorLacks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "registries.conf")
			if err := os.WriteFile(path, []byte(tc.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			doc, _, _ := scanCLI(t, "--platform", "linux/amd64", "--registries-config", path, "--no-cache", tc.ref)
			im := byReference(doc)[tc.ref]
			if im == nil {
				t.Fatalf("%s not in the report", tc.ref)
			}
			var codes []types.Code
			for _, f := range im.Findings {
				codes = append(codes, f.Code)
			}
			if im.Verdict != tc.want || (tc.code != "" && !slices.Contains(codes, tc.code)) {
				t.Errorf("%s: %s %v, want %s with %q", tc.ref, im.Verdict, codes, tc.want, tc.code)
				for _, f := range im.Findings {
					t.Logf("    %s %s: %s", f.Severity, f.Code, f.Message)
				}
			}
		})
	}
}

// TestPullPathDropIns: CRI-O's /etc/containers/registries.conf.d given as
// --registries-config. The registry lost the image (its tag moved, then
// its GC ran); the mirror a drop-in names still holds it. Read as a
// containerd hosts directory (before), the mirror was dropped and the pin
// was broken; read as drop-ins it is served by the mirror: at-risk,
// mirror-only. A later drop-in that replaces the mirror's registry with
// one without it makes the pin broken again (the later file wins, whole).
func TestPullPathDropIns(t *testing.T) {
	src := startEmpty(t, registry.V2)
	mirror := startEmpty(t, registry.V3)
	old := pushSingle(t, src.Host()+"/team/app:v1", "app v1, first build")
	pushSingle(t, mirror.Host()+"/team/app:v1", "app v1, first build")
	pushSingle(t, src.Host()+"/team/app:v1", "app v1, rebuilt")
	collect(t, src)
	pinned := src.Host() + "/team/app@" + old
	withMirror := fmt.Sprintf("[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n", src.Host(), src.Host(), mirror.Host())
	without := fmt.Sprintf("[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n", src.Host(), src.Host())
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  types.Verdict
		code  types.Code
	}{
		{"one drop-in names the mirror", map[string]string{"50-mirror.conf": withMirror}, types.AtRisk, types.MirrorOnly},
		{"a later drop-in replaces it", map[string]string{"50-mirror.conf": withMirror, "99-direct.conf": without}, types.Broken, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "registries.conf.d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			doc, _, _ := scanCLI(t, "--platform", "linux/amd64", "--registries-config", dir, "--no-cache", pinned)
			verdictIs(t, byReference(doc), pinned, tc.want, tc.code)
		})
	}
}
