package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

// TestScanStorage runs scan --storage on a storage written on disk (app:v1,
// an index of one child): no HTTP, the walk's verdicts, gc-check's host
// matching, and the flags it goes with.
func TestScanStorage(t *testing.T) {
	t.Parallel()
	root, child := gcStorage(t)
	// gone: the same storage without the child's revision link.
	gone := t.TempDir()
	if err := os.CopyFS(gone, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(gone, "docker", "registry", "v2", "repositories", "app", "_manifests", "revisions", "sha256", strings.TrimPrefix(child, "sha256:"))); err != nil {
		t.Fatal(err)
	}
	type want struct {
		verdicts map[string]types.Verdict // reference → verdict
		codes    map[string]types.Code    // reference → its one finding's code
		notices  int
	}
	for _, tc := range []struct {
		name string
		args []string
		exit int
		want *want
	}{
		{"intact", []string{"--storage", root, "reg.example/app:v1"}, ExitClean,
			&want{verdicts: map[string]types.Verdict{"reg.example/app:v1": types.OK}}},
		{"child gone", []string{"--storage", gone, "reg.example/app:v1"}, ExitFindings,
			&want{verdicts: map[string]types.Verdict{"reg.example/app:v1": types.Broken}, codes: map[string]types.Code{"reg.example/app:v1": types.ChildMissing}}},
		{"repository not in the storage", []string{"--storage", root, "reg.example/other:v1"}, ExitFindings,
			&want{verdicts: map[string]types.Verdict{"reg.example/other:v1": types.Broken}, codes: map[string]types.Code{"reg.example/other:v1": types.TagMissing}}},
		{"pinned child", []string{"--storage", root, "reg.example/app@" + child}, ExitClean,
			&want{verdicts: map[string]types.Verdict{"reg.example/app@" + child: types.OK}}},
		{"other host is a notice", []string{"--storage", root, "--registry", "reg.example", "reg.example/app:v1", "ghcr.io/org/app:v1"}, ExitClean,
			&want{verdicts: map[string]types.Verdict{"reg.example/app:v1": types.OK}, notices: 1}},
		{"only other hosts", []string{"--storage", root, "--registry", "reg.example", "ghcr.io/org/app:v1"}, ExitClean,
			&want{verdicts: map[string]types.Verdict{}, notices: 1}},
		{"invalid reference is still a finding", []string{"--storage", root, "reg.example/app:v1", "Not/A:Valid:Ref"}, ExitFindings,
			&want{verdicts: map[string]types.Verdict{"reg.example/app:v1": types.OK, "Not/A:Valid:Ref": types.Broken}, codes: map[string]types.Code{"Not/A:Valid:Ref": types.InvalidReference}}},
		{"two registries need --registry", []string{"--storage", root, "reg.example/app:v1", "ghcr.io/org/app:v1"}, ExitUsage, nil},
		{"--registry without --storage", []string{"--registry", "reg.example", "reg.example/app:v1"}, ExitUsage, nil},
		{"--storage with --cluster", []string{"--storage", root, "--cluster"}, ExitUsage, nil},
		{"not a storage", []string{"--storage", t.TempDir(), "reg.example/app:v1"}, ExitUsage, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"scan", "-o", "json"}, tc.args...))
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.exit, out.String(), errb.String())
			}
			if tc.want == nil {
				return
			}
			var doc report.Document
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if len(doc.Summary.Requests) != 0 {
				t.Errorf("requests %v, want none", doc.Summary.Requests)
			}
			if len(doc.Images) != len(tc.want.verdicts) {
				t.Errorf("%d images, want %d", len(doc.Images), len(tc.want.verdicts))
			}
			for _, im := range doc.Images {
				if v, ok := tc.want.verdicts[im.Reference]; !ok || im.Verdict != v {
					t.Errorf("%s: %s %+v, want %q", im.Reference, im.Verdict, im.Findings, v)
				}
				if c := tc.want.codes[im.Reference]; c != "" && (len(im.Findings) != 1 || im.Findings[0].Code != c) {
					t.Errorf("%s: findings %+v, want one %s", im.Reference, im.Findings, c)
				}
			}
			notices := 0
			for _, ie := range doc.InputErrors {
				if !ie.Notice || ie.Source != "args" || !strings.Contains(ie.Message, "not in the storage of reg.example") {
					t.Errorf("input error %+v, want a notice", ie)
				}
				notices++
			}
			if notices != tc.want.notices {
				t.Errorf("%d notices, want %d", notices, tc.want.notices)
			}
		})
	}
}

// TestHostReader: a repository of another host is a fault, never absent.
func TestHostReader(t *testing.T) {
	root, child := gcStorage(t)
	st, err := storage.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	r := hostReader{r: st.Reader(storage.V2), host: "reg.example"}
	ctx := context.Background()
	here, _ := name.NewRepository("reg.example/app")
	there, _ := name.NewRepository("ghcr.io/app")
	if _, err := r.Resolve(ctx, here, "v1"); err != nil {
		t.Errorf("resolving on the host: %v", err)
	}
	if _, err := r.Manifest(ctx, here, child); err != nil {
		t.Errorf("reading a manifest on the host: %v", err)
	}
	_, err1 := r.Resolve(ctx, there, "v1")
	_, err2 := r.Manifest(ctx, there, child)
	err3 := r.Blob(ctx, there, child)
	for i, err := range []error{err1, err2, err3} {
		if err == nil || errors.Is(err, types.ErrNotFound) || types.FaultCode(err) == "" {
			t.Errorf("call %d on another host: %v, want a fault", i, err)
		}
	}
}

// TestStorageHost is gc-check's rule, shared: --registry, else the one host.
func TestStorageHost(t *testing.T) {
	ts := func(refs ...string) []types.Target {
		var out []types.Target
		for _, r := range refs {
			out = append(out, types.Target{Ref: r})
		}
		return out
	}
	for _, tc := range []struct {
		flag    string
		targets []types.Target
		want    string
		err     bool
	}{
		{"", ts("reg.example/a:v1", "reg.example/b@sha256:"+strings.Repeat("a", 64)), "reg.example", false},
		{"", ts("Not/Valid:Ref:x"), "", false},
		{"", ts("reg.example/a", "nginx"), "", true},
		{"index.docker.io", ts("reg.example/a", "nginx"), "index.docker.io", false},
	} {
		t.Run(fmt.Sprint(tc.flag, tc.targets), func(t *testing.T) {
			got, err := storageHost(tc.flag, tc.targets, "images")
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("host %q, error %v; want %q, error %t", got, err, tc.want, tc.err)
			}
		})
	}
}
