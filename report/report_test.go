package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/types"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	indexDigest = "sha256:daf12a12d7854d40f9055e8980fee37dfacffc1399c26768eb897ed6c30082b7"
	childDigest = "sha256:3e191394b1008e11cd85b092d540ce09682f7a8d70789139c741ddfbb6a85fe4"
	attDigest   = "sha256:2d70ba5b4282f059b084303eefc9771ec0daf88f213b48123b2182ad6ea92504"
	okDigest    = "sha256:1905ffd07d0677e04eabe8620ef5624130c22d3d8d455f9bb9247e7db9e0ac8a"
)

// result is a scan result as the demo produces it, in input order: ok
// first, so that rendering must sort.
func result() *types.Result {
	return &types.Result{
		Started:  time.Date(2026, 11, 11, 5, 8, 0, 0, time.UTC),
		Duration: 59 * time.Millisecond,
		Images: []*types.Image{
			{
				Reference: "127.0.0.1:5055/demo/single:v1", Digest: okDigest,
				MediaType: "application/vnd.docker.distribution.manifest.v2+json", Verdict: types.OK, Findings: []types.Finding{},
				Uses:      []types.Use{{Source: "file", File: "examples/manifests/coturn.yaml", Line: 19, Kind: "Deployment", Namespace: "dam-prod", Name: "dam-coturn", Container: "coturn", PullPolicy: "Always"}},
				Manifests: 1, Blobs: 3,
				Tree: &types.Node{Kind: "manifest", Digest: okDigest, MediaType: "application/vnd.docker.distribution.manifest.v2+json"},
			},
			{
				Reference: "127.0.0.1:5055/demo/buildx:v1", Digest: indexDigest,
				MediaType: "application/vnd.oci.image.index.v1+json", Verdict: types.Broken,
				Findings: []types.Finding{
					{Code: types.ChildMissing, Severity: types.SeverityCritical, Digest: childDigest, Platform: "linux/amd64",
						Message: "the index lists a linux/amd64 manifest " + childDigest + " that the registry no longer serves",
						Advice:  "rebuild and push; the tag resolves but its linux/amd64 manifest sha256:3e191394b100 is gone"},
					{Code: types.AttestationMissing, Severity: types.SeverityWarning, Digest: attDigest, Platform: "unknown/unknown",
						Message: "attestation manifest " + attDigest + " (for " + childDigest + ") is gone"},
				},
				Uses:      []types.Use{{Source: "file", File: "examples/manifests/signaling.yaml", Line: 19, Kind: "Deployment", Namespace: "dam-prod", Name: "signaling", Container: "signaling"}},
				Manifests: 3, Blobs: 0,
				Tree: &types.Node{Kind: "index", Digest: indexDigest, MediaType: "application/vnd.oci.image.index.v1+json", Children: []*types.Node{
					{Kind: "manifest", Label: "linux/amd64", Digest: childDigest, State: "missing", Code: types.ChildMissing},
					{Kind: "attestation", Label: "unknown/unknown", Digest: attDigest, Subject: childDigest, State: "missing", Code: types.AttestationMissing},
				}},
			},
			{
				Reference: "registry.example/app:v1", Verdict: types.Unknown,
				Findings: []types.Finding{{Code: types.Unauthorized, Severity: types.SeverityWarning, Message: "GET https://registry.example/v2/: 401 Unauthorized"}},
				Uses:     []types.Use{{Source: "args"}, {Source: "images-from", File: "images.txt", Line: 3}},
			},
		},
		InputErrors: []types.InputError{
			{Source: "examples/manifests/broken.yaml", Line: 3, Message: "did not find expected ',' or ']'"},
			{Source: "examples/chart/templates/deploy.yaml", Message: "skipped: Helm template", Notice: true},
			{Source: "stdin", Line: 2, Message: "bufio.Scanner: token too long"},
		},
		Requests: []types.RequestCount{
			{Host: "127.0.0.1:5055", Kind: "blob-head", Status: "200", Count: 3},
			{Host: "127.0.0.1:5055", Kind: "manifest-get", Status: "200", Count: 3},
			{Host: "127.0.0.1:5055", Kind: "manifest-get", Status: "404", Count: 2},
			{Host: "registry.example", Kind: "ping", Status: "401", Count: 1},
		},
	}
}

func TestRenderers(t *testing.T) {
	for _, format := range scanFormats() {
		t.Run(format, func(t *testing.T) {
			r, err := renderer(format)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := r.Render(&buf, result()); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "result."+format+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s:\n%s", format, golden, buf.String())
			}
		})
	}
}

// The JSON document keeps what the schema promises: a version, images worst
// first with full digests, and counts that add up.
func TestJSONDocument(t *testing.T) {
	var buf bytes.Buffer
	res := result()
	res.Reasked, res.Recovered = 3, 2
	if err := JSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion string
		Images        []struct {
			Reference, Verdict string
			Findings           []struct{ Code, Severity, Digest string }
		}
		InputErrors []types.InputError `json:"inputErrors"`
		Summary     struct {
			Images             int
			Verdicts           map[string]int
			Requests           map[string]int
			Reasked, Recovered int
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary.Reasked != 3 || doc.Summary.Recovered != 2 {
		t.Errorf("summary says %d asked again, %d recovered; want 3 and 2", doc.Summary.Reasked, doc.Summary.Recovered)
	}
	if doc.SchemaVersion != SchemaVersion {
		t.Errorf("schemaVersion %q", doc.SchemaVersion)
	}
	var order []string
	for _, im := range doc.Images {
		order = append(order, im.Verdict)
	}
	if want := []string{"broken", "unknown", "ok"}; !slices.Equal(order, want) {
		t.Errorf("verdict order %v, want %v", order, want)
	}
	if f := doc.Images[0].Findings[0]; f.Code != "child-missing" || f.Severity != "critical" || f.Digest != childDigest {
		t.Errorf("first finding %+v", f)
	}
	if !slices.Equal(doc.InputErrors, result().InputErrors) {
		t.Errorf("inputErrors %+v", doc.InputErrors)
	}
	if s := doc.Summary; s.Images != 3 || s.Verdicts["broken"] != 1 || s.Verdicts["at-risk"] != 0 || s.Requests["manifest-get"] != 5 {
		t.Errorf("summary %+v", s)
	}
}

func TestFor(t *testing.T) {
	if _, err := For("yaml"); err == nil {
		t.Error("For(yaml) should fail")
	}
	if _, err := For("prom"); err == nil {
		t.Error("For(prom): the textfile is metrics.WriteScan's")
	}
}

// scanFormats are scan's -o formats: report's, and the Prometheus
// textfile, which metrics writes.
func scanFormats() []string { return append(Formats(), "prom") }

// renderer is For, and metrics.WriteScan for prom: every -o format of scan.
func renderer(format string) (Renderer, error) {
	if format == "prom" {
		return RendererFunc(metrics.WriteScan), nil
	}
	return For(format)
}

// A result with no input errors still has "inputErrors": [], never null.
func TestJSONInputErrorsNeverNull(t *testing.T) {
	r := result()
	r.InputErrors = nil
	var buf bytes.Buffer
	if err := JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"inputErrors": []`)) {
		t.Errorf("no empty inputErrors:\n%s", buf.String())
	}
}

// TestImageVolumeUses: every format that names a use's container names an
// image volume's use by its volume; JSON keeps it as "volume".
func TestImageVolumeUses(t *testing.T) {
	r := &types.Result{Images: []*types.Image{{
		Reference: "reg.example/models:v3", Verdict: types.Broken,
		Findings: []types.Finding{{Code: types.ManifestMissing, Severity: types.SeverityCritical, Message: "gone"}},
		Uses: []types.Use{
			{Source: "cluster", Kind: "Deployment", Namespace: "ml", Name: "serve", Volume: "weights", Pod: "serve-1", Node: "node-a"},
			{Source: "file", File: "serve.yaml", Line: 21, Kind: "Deployment", Namespace: "ml", Name: "serve", Volume: "weights"},
		},
	}}}
	tests := []struct {
		format string
		want   string
	}{
		{"table", "volume weights"},
		{"markdown", "volume weights"},
		{"html", "volume weights"},
		{"json", `"volume": "weights"`},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			rd, err := renderer(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := rd.Render(&buf, r); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(buf.Bytes(), []byte(tt.want)) {
				t.Errorf("%s output does not say %q:\n%s", tt.format, tt.want, buf.String())
			}
			if bytes.Contains(buf.Bytes(), []byte("container weights")) {
				t.Errorf("%s output calls the volume a container:\n%s", tt.format, buf.String())
			}
		})
	}
}
