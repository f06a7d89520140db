package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/results/gcresult"
)

// gcStorage writes a storage holding app:v1, an OCI index of one child.
func gcStorage(t *testing.T) (root, child string) {
	t.Helper()
	root = t.TempDir()
	v2 := filepath.Join(root, "docker", "registry", "v2")
	write := func(rel, content string) {
		p := filepath.Join(v2, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blob := func(content string) string {
		h := fmt.Sprintf("%x", sha256.Sum256([]byte(content)))
		write(filepath.Join("blobs", "sha256", h[:2], h, "data"), content)
		return h
	}
	cfg, layer := blob("config"), blob("layer")
	for _, h := range []string{cfg, layer} {
		write(filepath.Join("repositories", "app", "_layers", "sha256", h, "link"), "sha256:"+h)
	}
	child = blob(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"digest":"sha256:%s"},"layers":[{"digest":"sha256:%s"}]}`, cfg, layer))
	idx := blob(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"sha256:%s","platform":{"os":"linux","architecture":"amd64"}}]}`, child))
	for _, h := range []string{child, idx} {
		write(filepath.Join("repositories", "app", "_manifests", "revisions", "sha256", h, "link"), "sha256:"+h)
	}
	write(filepath.Join("repositories", "app", "_manifests", "tags", "v1", "current", "link"), "sha256:"+idx)
	write(filepath.Join("repositories", "app", "_manifests", "tags", "v1", "index", "sha256", idx, "link"), "sha256:"+idx)
	return root, "sha256:" + child
}

func TestGCCheck(t *testing.T) {
	t.Parallel()
	root, child := gcStorage(t)
	for _, tc := range []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"2.8 delete-untagged breaks the index", []string{"--storage", root, "--delete-untagged", "reg.example/app:v1"}, ExitFindings, "WOULD BREAK"},
		{"2.8 without delete-untagged", []string{"--storage", root, "reg.example/app:v1"}, ExitClean, "0 would break"},
		{"3 delete-untagged keeps children", []string{"--storage", root, "--gc-model", "distribution-3", "--delete-untagged", "reg.example/app:v1"}, ExitClean, "0 would break"},
		{"no in-use set", []string{"--storage", root, "--delete-untagged"}, ExitClean, "0 would break, 0 already broken; would delete 1 manifests, 2 blobs"},
		{"two registries need --registry", []string{"--storage", root, "--delete-untagged", "reg.example/app:v1", "ghcr.io/org/app:v1"}, ExitUsage, ""},
		{"one of two registries named", []string{"--storage", root, "--delete-untagged", "--registry", "reg.example", "reg.example/app:v1", "ghcr.io/org/app:v1"}, ExitFindings, "WOULD BREAK (1)"},
		{"other host skipped", []string{"--storage", root, "--delete-untagged", "--registry", "reg.example", "other.example/app:v1"}, ExitClean, "skipped"},
		{"bad model", []string{"--storage", root, "--gc-model", "distribution-4"}, ExitUsage, ""},
		{"bad output", []string{"--storage", root, "-o", "yaml"}, ExitUsage, ""},
		{"not storage", []string{"--storage", t.TempDir()}, ExitUsage, ""},
		{"API mode needs an in-use set", []string{"--delete-untagged"}, ExitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"gc-check"}, tc.args...))
			if code != tc.want || !strings.Contains(out.String(), tc.out) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s%s", code, tc.want, tc.out, out.String(), errb.String())
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), Streams{Out: &out, Err: &errb}, []string{"gc-check", "--storage", root, "--delete-untagged", "-o", "json", "reg.example/app:v1"})
		if code != ExitFindings {
			t.Fatalf("exit %d\n%s", code, errb.String())
		}
		var rep gcresult.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.SchemaVersion != gcresult.SchemaVersion || len(rep.WouldBreak) != 1 || rep.WouldBreak[0].Lost[0] != child ||
			rep.Counts.Manifests != 1 || rep.Counts.Blobs != 2 || len(rep.WouldDelete.Repositories) != 1 {
			t.Errorf("report: %s", out.String())
		}
	})
}

// Without --gc-model, every output format names the model assumed first,
// and no advice tells the user to upgrade to what the registry may run.
func TestGCCheckModelAssumed(t *testing.T) {
	t.Parallel()
	root, _ := gcStorage(t)
	for _, tc := range []struct {
		name    string
		args    []string
		assumed bool
	}{
		{"table, no --gc-model", []string{"-o", "table"}, true},
		{"json, no --gc-model", []string{"-o", "json"}, true},
		{"table, --gc-model given", []string{"-o", "table", "--gc-model", "distribution-2.8"}, false},
		{"json, --gc-model given", []string{"-o", "json", "--gc-model", "distribution-2.8"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"gc-check", "--storage", root, "--delete-untagged", "reg.example/app:v1"}, tc.args...)
			if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args); code != ExitFindings {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitFindings, out.String(), errb.String())
			}
			var rep gcresult.Report
			if strings.Contains(strings.Join(tc.args, " "), "json") {
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					t.Fatal(err)
				}
				if rep.Model != gcresult.Distribution28 || rep.ModelAssumed != tc.assumed || !strings.Contains(out.String(), `"modelAssumed": `) {
					t.Errorf("model %q modelAssumed %v, want %q %v", rep.Model, rep.ModelAssumed, gcresult.Distribution28, tc.assumed)
				}
			} else {
				first, _, _ := strings.Cut(out.String(), "\n")
				if !strings.Contains(first, "distribution-2.8") || strings.Contains(first, "assumed") != tc.assumed {
					t.Errorf("first line %q: want the model named, assumed=%v", first, tc.assumed)
				}
			}
			if tc.assumed {
				if strings.Contains(out.String(), "upgrade") {
					t.Errorf("advice tells the user to upgrade:\n%s", out.String())
				}
				if !strings.Contains(out.String(), "if the registry runs distribution 2.x") {
					t.Errorf("advice not conditional on the model:\n%s", out.String())
				}
				if !strings.Contains(errb.String(), "--gc-model") {
					t.Errorf("stderr does not say how to name the model: %s", errb.String())
				}
			}
		})
	}
}

// An in-use image whose manifest data in the storage is not a manifest
// cannot be checked: the report is printed, and the run is incomplete.
func TestGCCheckStorageIncomplete(t *testing.T) {
	t.Parallel()
	root, _ := gcStorage(t)
	v2 := filepath.Join(root, "docker", "registry", "v2")
	body := "not a manifest"
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(body)))
	for rel, content := range map[string]string{
		filepath.Join("blobs", "sha256", h[:2], h, "data"):                                             body,
		filepath.Join("repositories", "bad", "_manifests", "revisions", "sha256", h, "link"):           "sha256:" + h,
		filepath.Join("repositories", "bad", "_manifests", "tags", "v1", "current", "link"):            "sha256:" + h,
		filepath.Join("repositories", "bad", "_manifests", "tags", "v1", "index", "sha256", h, "link"): "sha256:" + h,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(v2, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(v2, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, []string{"gc-check", "--storage", root, "--gc-model", "distribution-3", "reg.example/bad:v1"})
	if code != ExitIncomplete || !strings.Contains(out.String(), "skipped reg.example/bad:v1") || !strings.Contains(out.String(), "manifest-unreadable") {
		t.Fatalf("exit %d, want %d with the report:\n%s%s", code, ExitIncomplete, out.String(), errb.String())
	}
}

// gcRegistry serves an in-memory registry holding gc/single:v1 and, in
// the same repository, a push by digest only (returned); its _catalog
// answers with catalog (status and body) when catalog is set.
func gcRegistry(t *testing.T, catalog func(w http.ResponseWriter)) (host, byDigest string) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if catalog != nil && r.URL.Path == "/v2/_catalog" {
			catalog(w)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	pushTest(t, host+"/gc/single:v1", "tagged")
	byDigest = pushTest(t, host+"/gc/single:gone", "pushed by digest")
	deleteManifest(t, srv.URL, "gc/single", "gone") // the tag alone
	return host, byDigest
}

// TestGCCheckAPIHints: API mode's notes and problems name the flags that
// act on them (the gc package says what, gc-check which flag), in the
// table, in JSON and in the log. {host} and {digest} stand for the
// registry and its manifest no tag names.
func TestGCCheckAPIHints(t *testing.T) {
	t.Parallel()
	refused := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"no catalog for you"}]}`)
	}
	garbled := func(w http.ResponseWriter) { fmt.Fprint(w, "not JSON") }
	for _, tc := range []struct {
		name     string
		catalog  func(http.ResponseWriter)
		args     []string
		code     int
		notes    []string
		problems []string
	}{
		{"in-use repositories only", nil, []string{"--delete-untagged", "{host}/gc/single:v1"}, ExitClean,
			[]string{"only the repositories of in-use images on {host} were examined; --all-repositories examines every repository its _catalog lists",
				"which blobs the run deletes is known only in storage mode (--storage)"}, nil},
		{"undecided under distribution 3", nil,
			[]string{"--gc-model", "distribution-3", "--delete-untagged", "{host}/gc/single:v1", "{host}/gc/single@{digest}"}, ExitIncomplete,
			[]string{"{host}/gc/single@{digest}: no tag of the examined repositories reaches it; distribution 3 keeps it if a tag in another repository does (--all-repositories decides)"},
			[]string{"{host}/gc/single@{digest}: undecided without --all-repositories"}},
		{"catalog refused", refused, []string{"--all-repositories", "--delete-untagged", "{host}/gc/single:v1"}, ExitIncomplete,
			[]string{"{host} does not list its repositories (_catalog: unauthorized)"},
			[]string{"--all-repositories: {host} does not list its repositories: "}},
		{"catalog garbled", garbled, []string{"--all-repositories", "--delete-untagged", "{host}/gc/single:v1"}, ExitIncomplete,
			[]string{"listing the repositories of {host} failed"},
			[]string{"--all-repositories: listing the repositories of {host}: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host, byDigest := gcRegistry(t, tc.catalog)
			fill := strings.NewReplacer("{host}", host, "{digest}", byDigest)
			args := []string{"gc-check"}
			for _, a := range tc.args {
				args = append(args, fill.Replace(a))
			}
			for _, format := range []string{"table", "json"} {
				var out, errb bytes.Buffer
				code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append(args, "-o", format))
				if code != tc.code {
					t.Fatalf("%s: exit %d, want %d\n%s%s", format, code, tc.code, out.String(), errb.String())
				}
				notes := out.String()
				if format == "json" {
					var rep struct{ Notes []string }
					if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
						t.Fatal(err)
					}
					notes = strings.Join(rep.Notes, "\n")
				}
				for _, w := range tc.notes {
					if !strings.Contains(notes, fill.Replace(w)) {
						t.Errorf("%s: the notes lack %q:\n%s", format, fill.Replace(w), notes)
					}
				}
				for _, w := range tc.problems {
					if !strings.Contains(errb.String(), fill.Replace(w)) {
						t.Errorf("%s: stderr lacks %q:\n%s", format, fill.Replace(w), errb.String())
					}
				}
			}
		})
	}
}
