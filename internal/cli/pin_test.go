package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/recordresult"
)

func runPinCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"pin"}, args...))
	return code, out.String(), errb.String()
}

// pinTree writes files (name → content) under a new folder.
func pinTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for n, c := range files {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	pinPod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
    - name: web
      image: nginx:1.27
    - name: pinned
      image: nginx:1.27@sha256:0000000000000000000000000000000000000000000000000000000000000000
`
	pinCompose = `services:
  db:
    image: postgres:16
`
	pinHelm = `apiVersion: v1
kind: Pod
spec:
  containers:
    - image: {{ .Values.image }}
`
	pinBroken = "kind: Pod\nspec:\n  containers:\n    - image: nginx\n   x: [\n"
)

func TestPinCheckUnit(t *testing.T) {
	t.Parallel()
	dir := pinTree(t, map[string]string{
		"app/pod.yaml":              pinPod,
		"compose.yaml":              pinCompose,
		"charts/x/templates/t.yaml": pinHelm,
		"vendor/other.yaml":         pinCompose,
	})
	pod := filepath.Join(dir, "app", "pod.yaml")
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
	}{
		{"text lists unpinned with file:line", []string{"--check", dir}, ExitFindings,
			[]string{pod + ":7: unpinned: nginx:1.27 is not pinned", filepath.Join(dir, "compose.yaml") + ":3: unpinned: postgres:16"}, []string{":10:"}},
		{"exclude a folder by name", []string{"--check", "--exclude", "vendor", "--exclude", "compose.yaml", dir}, ExitFindings,
			[]string{pod + ":7:"}, []string{"postgres", "vendor"}},
		{"exclude by relative glob", []string{"--check", "--exclude", "app/*.yaml", dir}, ExitFindings,
			[]string{"postgres"}, []string{"nginx"}},
		{"images-only", []string{"--check", "--images-only", "^postgres", dir}, ExitFindings,
			[]string{"postgres"}, []string{"nginx"}},
		{"nothing left is clean", []string{"--check", "--images-only", "^busybox", dir}, ExitClean, nil, []string{"unpinned"}},
		{"github", []string{"--check", "-o", "github", "--exclude", "vendor", dir}, ExitFindings,
			[]string{"::warning file=" + pod + ",line=7,title=unpinned::nginx:1.27 is not pinned to a digest\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runPinCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			for _, s := range tc.contains {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(out, s) {
					t.Errorf("stdout has %q:\n%s", s, out)
				}
			}
		})
	}
}

func TestPinCheckSkipsBadFiles(t *testing.T) {
	t.Parallel()
	dir := pinTree(t, map[string]string{"bad.yaml": pinBroken, "chart.yaml": pinHelm,
		"ok.yaml": strings.Replace(pinCompose, "postgres:16", "postgres:16@sha256:"+strings.Repeat("1", 64), 1)})
	code, out, errs := runPinCmd(t, "--check", "-o", "sarif", dir)
	if code != ExitIncomplete {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	var doc report.SARIFLog
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	res := doc.Runs[0].Results
	if len(res) != 2 {
		t.Fatalf("results %+v", res)
	}
	byRule := map[string]report.SARIFResult{}
	for _, r := range res {
		byRule[r.RuleID] = r
		if got := doc.Runs[0].Tool.Driver.Rules[r.RuleIndex].ID; got != r.RuleID {
			t.Errorf("ruleIndex %d is %s, want %s", r.RuleIndex, got, r.RuleID)
		}
	}
	bad := byRule["unparseable"]
	if bad.Level != "error" || bad.Locations[0].PhysicalLocation.Region == nil || bad.Locations[0].PhysicalLocation.Region.StartLine < 1 ||
		!strings.HasSuffix(bad.Locations[0].PhysicalLocation.ArtifactLocation.URI, "/bad.yaml") {
		t.Errorf("unparseable result %+v", bad)
	}
	if tpl := byRule["template"]; tpl.Level != "note" || !strings.HasSuffix(tpl.Locations[0].PhysicalLocation.ArtifactLocation.URI, "/chart.yaml") {
		t.Errorf("template result %+v", tpl)
	}
}

func TestPinUsage(t *testing.T) {
	t.Parallel()
	dir := pinTree(t, map[string]string{"pod.yaml": pinPod})
	for _, args := range [][]string{
		{"--check", "--write", dir},
		{"-o", "json", dir},
		{"-o", "xml", "--check", dir},
		{"--images-only", "(", dir},
		{"--pull-policy", "Sometimes", dir},
		{"--exclude", "[", dir},
		{"--concurrency", "0", dir},
		{"--from-records", filepath.Join(dir, "pod.yaml"), dir},
		{"--records-cluster", "prod", dir},
		{"-"},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			t.Parallel()
			if code, out, errs := runPinCmd(t, args...); code != ExitUsage {
				t.Errorf("exit %d, want 2\n%s%s", code, out, errs)
			}
		})
	}
}

// pagedRegistry serves gcr's in-memory registry but pages tags/list one
// tag at a time with Link headers, and counts the pages asked for.
func pagedRegistry(t *testing.T) (*httptest.Server, *atomic.Int32) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	var pages atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			reg.ServeHTTP(w, r)
			return
		}
		pages.Add(1)
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, r)
		var list struct {
			Name string   `json:"name"`
			Tags []string `json:"tags"`
		}
		json.Unmarshal(rec.Body.Bytes(), &list)
		last := r.URL.Query().Get("last")
		var page []string
		for _, tg := range list.Tags {
			if tg > last {
				page = append(page, tg)
				break
			}
		}
		if len(page) == 1 {
			w.Header().Set("Link", fmt.Sprintf(`<%s?n=1&last=%s>; rel="next"`, r.URL.Path, url.QueryEscape(page[0])))
		}
		list.Tags = page
		json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	return srv, &pages
}

func pushTest(t *testing.T, ref, seed string) string {
	t.Helper()
	d, err := fixture.PushSingle(context.Background(), ref, seed)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPinTaggedPaging: a pin whose tag moved is checked against every tag,
// following Link pagination; found under another tag it is not reported.
func TestPinTaggedPaging(t *testing.T) {
	t.Parallel()
	srv, pages := pagedRegistry(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	old := pushTest(t, host+"/app:v1", "one")
	pushTest(t, host+"/app:a", "unrelated")
	pushTest(t, host+"/app:z-keep", "one") // the last page keeps old
	pushTest(t, host+"/app:v1", "two")
	dir := pinTree(t, map[string]string{"pod.yaml": strings.Replace(pinPod, "nginx:1.27@sha256:"+strings.Repeat("0", 64), host+"/app:v1@"+old, 1)})
	code, out, errs := runPinCmd(t, "--images-only", "app", dir)
	if code != ExitClean || out != "" || strings.Contains(errs, "untagged") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if pages.Load() < 3 {
		t.Errorf("%d tag pages asked for, want every page up to z-keep", pages.Load())
	}

	pushTest(t, host+"/app:z-keep", "three")
	code, _, errs = runPinCmd(t, "--images-only", "app", dir)
	if code != ExitClean || !strings.Contains(errs, filepath.Join(dir, "pod.yaml")+":9: untagged-digest: no tag points at "+old) {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// writeHistory writes a history of snapshots to a new file.
func writeHistory(t *testing.T, snaps ...recordresult.Snapshot) string {
	t.Helper()
	h := record.NewHistory()
	for _, s := range snaps {
		h.Merge(s)
	}
	data, err := record.Encode(h, true)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "history.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ran(cluster string, at time.Time, name, digest string) recordresult.Snapshot {
	return recordresult.Snapshot{Cluster: cluster, Time: at, Entries: []recordresult.Entry{{
		Namespace: "default", OwnerKind: "Deployment", OwnerName: name, Pod: name + "-1", Container: "app", Digest: digest}}}
}

func pinDeployment(name, image string) string {
	return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: %s\n", name, image)
}

// TestPinFromRecordsClusters: a history of several clusters that disagree
// on what a workload runs pins nothing for it (ambiguous-record, exit 3)
// unless --records-cluster picks one; clusters that agree are fine.
func TestPinFromRecordsClusters(t *testing.T) {
	t.Parallel()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	ref := host + "/app:latest"
	a := pushTest(t, ref, "build a")
	b := pushTest(t, ref, "build b")
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	history := writeHistory(t,
		ran("prod", t1, "api", b), ran("staging", t2, "api", a), // staging recorded last
		ran("prod", t1, "web", a), ran("staging", t2, "web", a))
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		api, web       string // digests pinned, "" for none
		stderr, absent []string
	}{
		{"clusters disagree", nil, ExitIncomplete, "", a,
			[]string{"api.yaml:10: ambiguous-record: which digest runs Deployment api container app is ambiguous: the records disagree: prod runs " + b + ", staging runs " + a + "; pass --records-cluster to choose"},
			[]string{"web.yaml:10: ambiguous"}},
		{"prod", []string{"--records-cluster", "prod"}, ExitClean, b, a, nil, []string{"ambiguous"}},
		{"staging", []string{"--records-cluster", "staging"}, ExitClean, a, a, nil, []string{"ambiguous"}},
		{"unknown cluster", []string{"--records-cluster", "qa"}, ExitUsage, "", "",
			[]string{`--records-cluster "qa": ` + history + ` has no records of it; it has "prod", "staging"`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := pinTree(t, map[string]string{"api.yaml": pinDeployment("api", ref), "web.yaml": pinDeployment("web", ref)})
			args := append([]string{"--write", "--from-records", history}, append(tc.args, dir)...)
			code, out, errs := runPinCmd(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			for file, d := range map[string]string{"api": tc.api, "web": tc.web} {
				want := pinDeployment(file, ref)
				if d != "" {
					want = pinDeployment(file, ref+"@"+d)
				}
				if got, _ := os.ReadFile(filepath.Join(dir, file+".yaml")); string(got) != want {
					t.Errorf("%s.yaml:\n%s\nwant:\n%s", file, got, want)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errs, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errs)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(errs, s) {
					t.Errorf("stderr has %q:\n%s", s, errs)
				}
			}
		})
	}
}

// TestPinFromRecordsRollout: pods of one workload seen running two digests
// in the same snapshot (a rollout under way) are not resolved by guessing:
// the reference is left alone (ambiguous-record, exit 3).
func TestPinFromRecordsRollout(t *testing.T) {
	t.Parallel()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref := strings.TrimPrefix(reg.URL, "http://") + "/app:latest"
	a := pushTest(t, ref, "build a")
	b := pushTest(t, ref, "build b")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := recordresult.Snapshot{Cluster: "prod", Time: at, Entries: []recordresult.Entry{
		{Namespace: "default", OwnerKind: "Deployment", OwnerName: "api", Pod: "api-old", Container: "app", Digest: a},
		{Namespace: "default", OwnerKind: "Deployment", OwnerName: "api", Pod: "api-new", Container: "app", Digest: b},
	}}
	history := writeHistory(t, snap)
	dir := pinTree(t, map[string]string{"api.yaml": pinDeployment("api", ref)})
	code, out, errs := runPinCmd(t, "--write", "--from-records", history, dir)
	if code != ExitIncomplete {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitIncomplete, out, errs)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "api.yaml")); string(got) != pinDeployment("api", ref) {
		t.Errorf("api.yaml was pinned mid-rollout:\n%s", got)
	}
	for _, want := range []string{"ambiguous-record", "prod pod api-new runs " + b, "prod pod api-old runs " + a, "a rollout?"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// deleteManifest deletes a manifest, or only a tag, of the registry at
// base.
func deleteManifest(t *testing.T, base, repo, ref string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/v2/"+repo+"/manifests/"+ref, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting %s:%s: %v %v", repo, ref, err, resp)
	}
	resp.Body.Close()
}

// TestPinRefusalHints: pin's refusals name the flags that act on them (the
// pin package says what to do, the command which flag does it).
func TestPinRefusalHints(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), host, "t/")
	if err != nil {
		t.Fatal(err)
	}
	var broken, moved, oldChild string
	for _, im := range imgs {
		switch im.Name {
		case "manifestlist": // one child deleted: broken
			broken = im.Ref
			deleteManifest(t, srv.URL, "t/manifestlist", im.Children[1].Digest.String())
		case "multiarch": // the tag moves to another index
			moved, oldChild = im.Ref, im.Children[0].Digest.String()
			idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: fixture.Single("another build")})
			tag, err := name.NewTag(im.Ref, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.WriteIndex(tag, idx); err != nil {
				t.Fatal(err)
			}
		}
	}
	history := writeHistory(t, ran("crio", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), "app", oldChild))
	for _, tc := range []struct {
		name, ref string
		args      []string
		code      int
		want      []string
	}{
		{"a broken tree", broken, nil, ExitFindings, []string{
			"app.yaml:10: broken: refusing to pin " + broken + " to ", "; left as is (--allow-broken pins anyway)\n"}},
		{"a platform manifest of an index the tag left", moved, []string{"--from-records", history}, ExitIncomplete, []string{
			"app.yaml:10: platform-digest: the runtime reports " + oldChild + ", a platform manifest; ",
			" left as is (pin by tag: regcheck pin without --from-cluster or --from-records)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := pinTree(t, map[string]string{"app.yaml": pinDeployment("app", tc.ref)})
			code, out, errs := runPinCmd(t, append(append([]string{"--write"}, tc.args...), dir)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "app.yaml")); string(got) != pinDeployment("app", tc.ref) {
				t.Errorf("app.yaml was pinned:\n%s", got)
			}
		})
	}
}
