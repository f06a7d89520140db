//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// startEmpty starts a real registry binary on 127.0.0.1 with empty
// storage in a temporary folder; it stops with the test.
func startEmpty(tb testing.TB, version string) *registry.Registry {
	tb.Helper()
	bin, err := registry.Binary(version)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := registry.Start(ctx, bin, tb.TempDir(), "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Stop() })
	return r
}

// startRegistry starts a real registry binary with the fixtures pushed.
func startRegistry(t *testing.T, version string) (*registry.Registry, []fixture.Image) {
	t.Helper()
	r := startEmpty(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imgs, err := fixture.Push(ctx, r.Host(), "gc/")
	if err != nil {
		t.Fatal(err)
	}
	return r, imgs
}

// collect runs the registry's own garbage collector with --delete-untagged
// and restarts it.
func collect(t testing.TB, r *registry.Registry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GC(ctx, true, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Restart(ctx); err != nil {
		t.Fatal(err)
	}
}

// serves asks the registry directly whether it still serves a manifest.
func serves(t *testing.T, host, repo, digest string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodHead, fmt.Sprintf("http://%s/v2/%s/manifests/%s", host, repo, digest), nil)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func targets(imgs []fixture.Image) []types.Target {
	var out []types.Target
	for _, im := range imgs {
		out = append(out, types.Target{Ref: im.Ref, Uses: []types.Use{{Source: "args"}}})
	}
	return out
}

// byReference indexes a JSON report's images by their reference.
func byReference(doc report.Document) map[string]*types.Image {
	out := make(map[string]*types.Image, len(doc.Images))
	for _, im := range doc.Images {
		out[im.Reference] = im
	}
	return out
}

func byName(t *testing.T, res *types.Result, imgs []fixture.Image) map[string]*types.Image {
	t.Helper()
	if len(res.Images) != len(imgs) {
		t.Fatalf("scan returned %d images for %d fixtures", len(res.Images), len(imgs))
	}
	out := map[string]*types.Image{}
	for i, im := range imgs {
		out[im.Name] = res.Images[i]
	}
	return out
}

func codes(im *types.Image, code types.Code) []string {
	var out []string
	for _, f := range im.Findings {
		if f.Code == code {
			out = append(out, f.Digest)
		}
	}
	sort.Strings(out)
	return out
}

// TestScanBeforeGC: every fixture is intact on both registries.
func TestScanBeforeGC(t *testing.T) {
	for _, version := range []string{registry.V2, registry.V3} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			_, imgs := startRegistry(t, version)
			res, err := scan.Run(context.Background(), targets(imgs))
			if err != nil {
				t.Fatal(err)
			}
			for name, im := range byName(t, res, imgs) {
				if im.Verdict != types.OK || len(im.Findings) != 0 {
					t.Errorf("%s: verdict %s, findings %+v; want ok, none", name, im.Verdict, im.Findings)
				}
			}
		})
	}
}

// TestScanAfterGC is the seed incident: docker/distribution 2.8.3's GC with
// --delete-untagged keeps every tagged index and deletes its untagged
// children; distribution 3.x keeps them. regcheck's verdicts must match what
// each registry really serves afterwards.
func TestScanAfterGC(t *testing.T) {
	for _, version := range []string{registry.V2, registry.V3} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			r, imgs := startRegistry(t, version)
			collect(t, r)
			res, err := scan.Run(context.Background(), targets(imgs))
			if err != nil {
				t.Fatal(err)
			}
			got := byName(t, res, imgs)
			for _, fx := range imgs {
				im := got[fx.Name]
				repo := "gc/" + fx.Name
				if !serves(t, r.Host(), repo, fx.Digest.String()) {
					t.Fatalf("%s: the GC deleted the tagged manifest itself; the fixture is wrong", fx.Name)
				}
				// What the registry really serves decides what must be reported.
				var wantChild, wantAtt []string
				for _, c := range fx.Children {
					if serves(t, r.Host(), repo, c.Digest.String()) {
						continue
					}
					if c.Attestation {
						wantAtt = append(wantAtt, c.Digest.String())
					} else {
						wantChild = append(wantChild, c.Digest.String())
					}
				}
				sort.Strings(wantChild)
				sort.Strings(wantAtt)
				if version == registry.V3 && (len(wantChild) > 0 || len(wantAtt) > 0) {
					t.Errorf("%s: distribution 3.x deleted children %v %v", fx.Name, wantChild, wantAtt)
				}
				if version == registry.V2 {
					// 2.8.3 deletes exactly the untagged children.
					var untagged []string
					for _, c := range fx.UntaggedChildren() {
						untagged = append(untagged, c.Digest.String())
					}
					sort.Strings(untagged)
					if all := append(append([]string{}, wantChild...), wantAtt...); !sameSet(all, untagged) {
						t.Errorf("%s: 2.8.3 GC deleted %v, want the untagged children %v", fx.Name, all, untagged)
					}
				}
				if c := codes(im, types.ChildMissing); !slices.Equal(c, wantChild) {
					t.Errorf("%s: child-missing for %v, want %v", fx.Name, c, wantChild)
				}
				if c := codes(im, types.AttestationMissing); !slices.Equal(c, wantAtt) {
					t.Errorf("%s: attestation-missing for %v, want %v", fx.Name, c, wantAtt)
				}
				want := types.OK
				if len(wantChild) > 0 {
					want = types.Broken
				} else if len(wantAtt) > 0 {
					want = types.AtRisk
				}
				if im.Verdict != want {
					t.Errorf("%s: verdict %s, want %s (findings %+v)", fx.Name, im.Verdict, want, im.Findings)
				}
				for _, f := range im.Findings {
					if f.Code != types.ChildMissing && f.Code != types.AttestationMissing {
						t.Errorf("%s: unexpected finding %+v", fx.Name, f)
					}
				}
			}
			if version == registry.V2 {
				for _, name := range []string{"buildx", "multiarch", "manifestlist", "partial"} {
					if got[name].Verdict != types.Broken {
						t.Errorf("%s after 2.8.3 GC: %s, want broken", name, got[name].Verdict)
					}
				}
				// partial's amd64 child is tagged and survives: only arm64 is lost.
				res, err := scan.Run(context.Background(), targets(imgs), scan.WithPlatforms("linux/amd64"))
				if err != nil {
					t.Fatal(err)
				}
				if v := byName(t, res, imgs)["partial"].Verdict; v != types.OK {
					t.Errorf("partial with --platform linux/amd64: %s, want ok", v)
				}
			}
		})
	}
}

// TestScanUnknown: a registry that cannot be reached, or answers 503, proves
// nothing: the image is unknown, never broken, and the exit code is 3.
func TestScanUnknown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()

	for _, tc := range []struct {
		name, host string
		code       types.Code
	}{
		{"unreachable", closed, types.Unreachable},
		{"503", unavailable.Listener.Addr().String(), types.PingFailed}, // its version check fails first
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb},
				[]string{"scan", "-o", "json", "--timeout", "5s", tc.host + "/app:v1"})
			if code != cli.ExitIncomplete {
				t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitIncomplete, out.String(), errb.String())
			}
			var doc report.Document
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			im := doc.Images[0]
			if im.Verdict != types.Unknown || len(im.Findings) != 1 || im.Findings[0].Code != tc.code {
				t.Fatalf("verdict %s findings %+v, want unknown with %s", im.Verdict, im.Findings, tc.code)
			}
		})
	}
}

// TestScanCLIExitCodes runs the command a user runs, on manifests, against
// the broken 2.8.3 registry: exit 1 when an image is broken, 0 when all
// are intact or --fail-on never, 2 on a usage error; and the JSON gives
// each image its verdict and names every use, at its file and line.
func TestScanCLIExitCodes(t *testing.T) {
	r, imgs := startRegistry(t, registry.V2)
	collect(t, r)
	var broken, intact string
	for _, fx := range imgs {
		switch fx.Name {
		case "buildx":
			broken = fx.Ref
		case "single":
			intact = fx.Ref
		}
	}
	// The broken image is used by two workloads in two files, the intact
	// one by one; each reference is on line 10 of its file.
	dir := t.TempDir()
	files := map[string]string{"api.yaml": broken, "worker.yaml": broken, "web.yaml": intact}
	for f, ref := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(deployment(strings.TrimSuffix(f, ".yaml"), ref, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := func(f string) string { return filepath.Join(dir, f) }
	for _, tc := range []struct {
		name     string
		args     []string
		want     int
		verdicts map[string]types.Verdict // by reference; nil: no JSON to check
	}{
		{"broken image fails", []string{"-f", file("api.yaml"), "-f", file("worker.yaml")}, cli.ExitFindings,
			map[string]types.Verdict{broken: types.Broken}},
		{"intact image passes", []string{"-f", file("web.yaml")}, cli.ExitClean, map[string]types.Verdict{intact: types.OK}},
		{"fail-on never", []string{"--fail-on", "never", "-f", dir}, cli.ExitClean,
			map[string]types.Verdict{broken: types.Broken, intact: types.OK}},
		{"bad flag", []string{"--fail-on", "sometimes", "-f", dir}, cli.ExitUsage, nil},
		{"bad output", []string{"-o", "yaml", "-f", dir}, cli.ExitUsage, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"scan"}, tc.args...)
			if tc.verdicts != nil {
				args = append(args, "-o", "json")
			}
			var out, errb bytes.Buffer
			code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, args)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.want, out.String(), errb.String())
			}
			if tc.verdicts == nil {
				return
			}
			var doc report.Document
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("%v in:\n%s", err, out.String())
			}
			got := map[string]types.Verdict{}
			for _, im := range doc.Images {
				got[im.Reference] = im.Verdict
				var uses, want []string
				for _, u := range im.Uses {
					uses = append(uses, fmt.Sprintf("%s %s:%d", u.Source, u.File, u.Line))
				}
				for _, a := range tc.args {
					for f, ref := range files {
						if ref == im.Reference && (a == file(f) || a == dir) {
							want = append(want, fmt.Sprintf("file %s:10", file(f)))
						}
					}
				}
				if !sameSet(uses, want) {
					t.Errorf("%s: uses %v, want %v", im.Reference, uses, want)
				}
			}
			if !maps.Equal(got, tc.verdicts) {
				t.Errorf("verdicts %v, want %v", got, tc.verdicts)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}
