//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// A string in an image field that is no image reference (a placeholder, a
// shell or envsubst variable, a parameter left unresolved, an empty
// string) and a dashboard JSON beside the manifests are notices, in every
// format: the one real image, served by a loopback registry, is the only
// one walked, and the scan is clean (exit 0), neither broken nor
// incomplete.
func TestScanNotAnImage(t *testing.T) {
	t.Parallel()
	ref := testRegistry(t)
	dir := t.TempDir()
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n" +
		"      - name: a\n        image: <YOUR-CONTAINER-IMAGE>\n" + // line 9
		"      - name: b\n        image: ${IMAGE}\n" + // 11
		"      - name: c\n        image: $IMAGE\n" + // 13
		"      - name: d\n        image: $(params.builder-image)\n" + // 15
		"      - name: e\n        image: \"\"\n" + // 17
		"      - name: f\n        image: REPLACE_ME\n" + // 19
		"      - name: real\n        image: " + ref + "\n" // 21
	dashboard := `{"title": "Requests", "panels": [{"links": [{"url": "https:\/\/grafana.example\/d\/x"}], "legendFormat": "{{path}}"}]}`
	for name, c := range map[string]string{"deploy.yaml": manifest, "dashboard.json": dashboard} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deploy := filepath.Join(dir, "deploy.yaml")
	want := []types.InputError{
		{Source: filepath.Join(dir, "dashboard.json"), Message: "skipped: JSON that holds no Kubernetes object", Notice: true},
		{Source: deploy, Line: 9, Column: 16, Message: `not an image reference: "<YOUR-CONTAINER-IMAGE>"`, Notice: true},
		{Source: deploy, Line: 11, Column: 16, Message: `not an image reference: "${IMAGE}"`, Notice: true},
		{Source: deploy, Line: 13, Column: 16, Message: `not an image reference: "$IMAGE"`, Notice: true},
		{Source: deploy, Line: 15, Column: 16, Message: `not an image reference: "$(params.builder-image)"`, Notice: true},
		{Source: deploy, Line: 17, Column: 16, Message: `not an image reference: ""`, Notice: true},
		{Source: deploy, Line: 19, Column: 16, Message: `not an image reference: "REPLACE_ME"`, Notice: true},
	}
	for _, format := range outputFormats() {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runCmd(t, "scan", "-o", format, "-f", dir)
			if code != ExitClean {
				t.Fatalf("exit %d, want %d\n%s%s", code, ExitClean, out, errs)
			}
			if format == "json" {
				checkNotImageJSON(t, out, ref, want)
				return
			}
			if format == "prom" {
				// Prometheus labels say the source, not the message.
				if !strings.Contains(out, fmt.Sprintf("regcheck_inputs_skipped{kind=\"notice\"} %d", len(want))) ||
					!strings.Contains(out, `deploy.yaml"} 1`) || !strings.Contains(out, `dashboard.json"} 1`) {
					t.Errorf("prom output lacks the notices:\n%s", out)
				}
				return
			}
			text := unescape(out)
			for _, ie := range want {
				if !strings.Contains(text, filepath.Base(ie.Source)) || !strings.Contains(text, ie.Message) {
					t.Errorf("%s output lacks %s: %s:\n%s", format, ie.Source, ie.Message, text)
				}
			}
		})
	}
}

// unescape undoes the escapes of the HTML, Markdown and JSON formats, so
// that a message reads as written.
func unescape(s string) string {
	s = strings.NewReplacer(`\"`, `"`, `\u003c`, "<", `\u003e`, ">", `\u0026`, "&", `\_`, "_").Replace(s)
	return html.UnescapeString(s)
}

// checkNotImageJSON checks the JSON report: one image, ok, and the notices.
func checkNotImageJSON(t *testing.T, out, ref string, want []types.InputError) {
	t.Helper()
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Images) != 1 || doc.Images[0].Reference != ref || doc.Images[0].Verdict != types.OK {
		t.Errorf("images %+v, want %s ok alone", doc.Images, ref)
	}
	got := fmt.Sprintf("%+v", doc.InputErrors)
	if w := fmt.Sprintf("%+v", want); got != w {
		t.Errorf("input errors\n%s\nwant\n%s", got, w)
	}
}

// A Tekton Task's $(params.x) is scanned as the image its default and the
// values passed to it name (here one served by a loopback registry, passed
// by a TaskRun in another file): ok, exit 0, each use at the value's
// line; a parameter given no value is a notice naming it, not broken.
func TestScanTektonParams(t *testing.T) {
	t.Parallel()
	ref := testRegistry(t)
	dir := t.TempDir()
	files := map[string]string{
		"task.yaml": "apiVersion: tekton.dev/v1\nkind: Task\nmetadata: {name: build}\nspec:\n  params:\n    - name: builder\n    - name: other\n  steps:\n" +
			"    - name: build\n      image: $(params.builder)\n" + // line 10
			"    - name: other\n      image: $(params.other)\n", // line 12
		"run.yaml": "apiVersion: tekton.dev/v1\nkind: TaskRun\nmetadata: {name: run}\nspec:\n  taskRef: {name: build}\n  params:\n    - name: builder\n" +
			"      value: " + ref + "\n", // line 8
	}
	for name, c := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCmd(t, "scan", "-o", "json", "-f", dir)
	if code != ExitClean {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitClean, out, errs)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Images) != 1 || doc.Images[0].Reference != ref || doc.Images[0].Verdict != types.OK ||
		len(doc.Images[0].Uses) != 1 || doc.Images[0].Uses[0].File != filepath.Join(dir, "run.yaml") || doc.Images[0].Uses[0].Line != 8 {
		t.Errorf("images %+v, want %s ok, used at run.yaml:8", doc.Images, ref)
	}
	if len(doc.InputErrors) != 1 || !doc.InputErrors[0].Notice || doc.InputErrors[0].Line != 12 ||
		!strings.Contains(doc.InputErrors[0].Message, "parameter other has no default") {
		t.Errorf("input errors %+v, want one notice at task.yaml:12 naming parameter other", doc.InputErrors)
	}
}
