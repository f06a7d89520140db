package report_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/types"
)

const (
	digestA = "sha256:3e191394b1008e11cd85b092d540ce09682f7a8d70789139c741ddfbb6a85fe4"
	digestB = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
)

// published is a scan's result with an image of each verdict, one
// reference listed twice (one entry per running digest), findings of each
// severity, uses from workloads and from arguments, requests, rate limits,
// inputs not read (errors and notices), and a start and duration.
func published() *types.Result {
	deploy := types.Use{Source: "cluster", Kind: "Deployment", Namespace: "shop", Name: "cart", Container: "cart", Pod: "cart-1"}
	return &types.Result{
		Started:  time.Date(2026, 11, 11, 5, 8, 0, 250_000_000, time.UTC),
		Duration: 1500 * time.Millisecond,
		Images: []*types.Image{
			{Reference: "registry.example/shop/web:v1", Verdict: types.OK, Findings: []types.Finding{},
				Uses: []types.Use{{Source: "file", File: "web.yaml", Kind: "Deployment", Namespace: "shop", Name: "web", Container: "web"}}},
			{Reference: "registry.example/shop/cart:v2", Verdict: types.Broken,
				Findings: []types.Finding{
					{Code: types.ChildMissing, Severity: types.SeverityCritical, Platform: "linux/amd64"},
					{Code: types.ChildMissing, Severity: types.SeverityCritical, Platform: "linux/arm64"},
					{Code: types.AttestationMissing, Severity: types.SeverityWarning},
				},
				Uses: []types.Use{deploy, {Source: "cluster", Kind: "Deployment", Namespace: "shop", Name: "cart", Container: "cart", Pod: "cart-2"}}},
			{Reference: "registry.example/shop/cart:v2", Verdict: types.AtRisk,
				Findings: []types.Finding{{Code: types.Drift, Severity: types.SeverityWarning, Digest: digestB}, {Code: types.ChildMissing, Severity: types.SeverityCritical}},
				Uses:     []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "shop", Name: "cart", Container: "cart", Pod: "cart-3", RunningDigest: digestA}}},
			{Reference: "registry.example/ops/job:latest", Verdict: types.AtRisk,
				Findings: []types.Finding{{Code: types.PullAlwaysMutable, Severity: types.SeverityWarning}},
				Uses:     []types.Use{{Source: "cluster", Kind: "CronJob", Namespace: "ops", Name: "nightly", Container: "job", PullPolicy: "Always"}}},
			{Reference: "robot:s3cret@private.example/app:v1", Verdict: types.Unknown,
				Findings: []types.Finding{{Code: types.Unauthorized, Severity: types.SeverityWarning}},
				Uses:     []types.Use{{Source: "args"}}},
		},
		Requests: []types.RequestCount{
			{Host: "registry.example", Kind: "ping", Status: "200", Count: 1},
			{Host: "registry.example", Kind: "manifest-get", Status: "200", Count: 4},
			{Host: "registry.example", Kind: "manifest-get", Status: "404", Count: 2},
			{Host: "registry.example", Kind: "blob-head", Status: "200", Count: 7},
			{Host: "private.example", Kind: "ping", Status: "401", Count: 1},
		},
		RateLimits: []types.RateLimit{
			{Host: "registry.example", Reported: true, Limit: 100, Remaining: 40, WindowSeconds: 21600, Reserve: 10, Pulls: 4, Withheld: 0},
			{Host: "private.example", MaxPulls: 5, Pulls: 5, Withheld: 3},
		},
		InputErrors: []types.InputError{
			{Source: "manifests/broken.yaml", Line: 3, Message: "did not find expected ',' or ']'"},
			{Source: "chart/templates/deploy.yaml", Message: "skipped: Helm template", Notice: true},
			{Source: "stdin", Line: 2, Message: "bufio.Scanner: token too long"},
		},
	}
}

// recorded is a record run's snapshot and what saving it did.
func recorded() (recordresult.Snapshot, recordresult.Result, time.Time, time.Time) {
	start := time.Date(2026, 11, 11, 6, 0, 0, 0, time.UTC)
	snap := recordresult.Snapshot{Cluster: "prod", Time: start, Entries: []recordresult.Entry{
		{Namespace: "shop", OwnerKind: "Deployment", OwnerName: "cart", Pod: "cart-1", Container: "cart", Image: "registry.example/shop/cart:v2", Digest: digestA},
		{Namespace: "shop", OwnerKind: "Deployment", OwnerName: "web", Pod: "web-1", Container: "web", Image: "registry.example/shop/web:v1", Digest: digestB},
	}}
	res := recordresult.Result{UpdateResult: recordresult.UpdateResult{Trimmed: 2}, Snapshot: snap, Changes: []recordresult.Change{
		{Cluster: "prod", Namespace: "shop", OwnerKind: "Deployment", OwnerName: "cart", Container: "cart", Pod: "cart-1",
			Image: "user:tok@registry.example/shop/cart:v2", From: []string{digestB}, To: digestA},
	}}
	return snap, res, start, start.Add(2250 * time.Millisecond)
}

// What --metrics-file writes and what --pushgateway pushes (its path, the
// grouping key sorted, the hash of its body and the body in the text format), for scan and
// record, stay byte for byte what they were: the golden files were
// written before the metric names moved to package metrics.
func TestPublishedMetrics(t *testing.T) {
	snap, rec, start, end := recorded()
	for _, tc := range []struct {
		name     string
		metrics  func() prometheus.Gatherer
		grouping map[string]string
	}{
		{"scan", func() prometheus.Gatherer { return metrics.ScanSeries(published()) }, map[string]string{"command": "scan", "instance": "prod", "shard": "0/2"}},
		{"record", func() prometheus.Gatherer { return metrics.RecordSeries(snap, rec, start, end) }, map[string]string{"command": "record"}},
	} {
		t.Run(tc.name+" textfile", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "regcheck.prom")
			if err := metrics.WriteFile(path, tc.metrics()); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			publishedGolden(t, "published."+tc.name+".prom.golden", got)
		})
		t.Run(tc.name+" pushgateway", func(t *testing.T) {
			var pushed bytes.Buffer
			gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Error(err)
				}
				fmt.Fprintf(&pushed, "# %s %s\n# Content-Type: %s\n# sha256 of the body: %x\n", r.Method, groupingPath(r.URL.Path), r.Header.Get("Content-Type"), sha256.Sum256(body))
				if err := protoToText(&pushed, bytes.NewReader(body)); err != nil {
					t.Error(err)
				}
				w.WriteHeader(http.StatusOK)
			}))
			defer gw.Close()
			p := metrics.Pushgateway{URL: gw.URL, Grouping: tc.grouping}
			if err := p.Push(context.Background(), tc.metrics()); err != nil {
				t.Fatal(err)
			}
			publishedGolden(t, "published."+tc.name+".push.golden", pushed.Bytes())
		})
	}
}

// groupingPath is a push's path with the grouping key's labels after the
// job sorted: the push names them in no particular order.
func groupingPath(path string) string {
	parts := strings.Split(path, "/") // "", metrics, job, regcheck, name, value, ...
	if len(parts) < 4 {
		return path
	}
	var pairs []string
	for i := 4; i+1 < len(parts); i += 2 {
		pairs = append(pairs, parts[i]+"/"+parts[i+1])
	}
	slices.Sort(pairs)
	return strings.Join(append(parts[:4:4], pairs...), "/")
}

// protoToText writes a push's body, delimited protocol buffers, in the
// text format.
func protoToText(w io.Writer, body io.Reader) error {
	dec := expfmt.NewDecoder(body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := enc.Encode(&mf); err != nil {
			return err
		}
	}
}

// publishedGolden compares got with testdata/name (rewritten with
// -update).
func publishedGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *report.Update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}
