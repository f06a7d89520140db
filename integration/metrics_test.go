//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/types"
)

// The versions hack/build-bins.sh builds.
const (
	pushgatewayBin = "pushgateway-v1.11.3"
	promtoolBin    = "promtool-v0.316.0"
)

// metricsScene is a GC-broken registry and manifests whose workloads use
// it: one image per finding class a scan of files can find.
type metricsScene struct {
	dir                                       string // the manifests, one of them not YAML
	buildx, single, gone, pinned, appB, stuck string // the references
	children                                  int    // buildx's platform children the GC deleted
}

// newMetricsScene starts docker/distribution 2.8.3 with the fixtures,
// runs its garbage collector (buildx loses its children), deletes a layer
// of app-b from its storage, and writes the manifests.
func newMetricsScene(t *testing.T) metricsScene {
	t.Helper()
	r, imgs := startRegistry(t, registry.V2)
	collect(t, r)
	s := metricsScene{dir: t.TempDir()}
	others := map[string]bool{}
	var appB []string
	for _, fx := range imgs {
		switch fx.Name {
		case "buildx":
			s.buildx = fx.Ref
			for _, c := range fx.UntaggedChildren() {
				if !c.Attestation {
					s.children++
				}
			}
		case "single":
			s.single = fx.Ref
		case "app-b":
			s.appB = fx.Ref
			for _, b := range fx.Blobs {
				appB = append(appB, b.String())
			}
			continue
		}
		for _, b := range fx.Blobs {
			others[b.String()] = true
		}
	}
	removed := false
	for _, b := range appB[1:] { // a layer no other fixture shares
		if others[b] {
			continue
		}
		hex := strings.TrimPrefix(b, "sha256:")
		if err := os.Remove(filepath.Join(r.Root, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")); err != nil {
			t.Fatal(err)
		}
		removed = true
		break
	}
	if !removed {
		t.Fatal("app-b has no layer of its own: the fixture changed")
	}
	s.gone = r.Host() + "/gc/single:gone"
	s.pinned = r.Host() + "/gc/single@sha256:" + strings.Repeat("0", 64)
	s.stuck = loopbackAddr(t) + "/legacy/app:v1" // nothing listens there

	manifests := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: signaling, namespace: shop}
spec:
  template:
    spec:
      containers:
        - {name: signaling, image: %q}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      containers:
        - {name: app, image: %q}
        - {name: sidecar, image: %q}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: report, namespace: ops}
spec:
  schedule: "0 1 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - {name: report, image: %q}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  template:
    spec:
      containers:
        - {name: agent, image: %q}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: legacy, namespace: shop}
spec:
  template:
    spec:
      containers:
        - {name: legacy, image: %q}
`, s.buildx, s.single, s.gone, s.pinned, s.appB, s.stuck)
	if err := os.WriteFile(filepath.Join(s.dir, "workloads.yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "broken.yaml"), []byte("kind: Pod\nspec: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// scan runs regcheck scan in process on the scene's manifests with extra
// flags: exit 1, the broken images.
func (s metricsScene) scan(t *testing.T, extra ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	args := append([]string{"scan", "--timeout", "5s", "-f", s.dir}, extra...)
	if code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, args); code != cli.ExitFindings {
		t.Fatalf("regcheck %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, cli.ExitFindings, out.String(), errb.String())
	}
}

// TestMetricsAndAlerts: a real scan of GC-broken images publishes its
// metrics to a real Pushgateway and to a textfile; the alert rules pass
// promtool's checks and, over the series that file holds, fire the alerts
// that name each workload and image and say what to run. The cluster's
// findings are TestClusterMetricsAndAlerts'.
func TestMetricsAndAlerts(t *testing.T) {
	s := newMetricsScene(t)
	t.Run("pushgateway", func(t *testing.T) { testPushgateway(t, s) })
	t.Run("check rules", testCheckRules)
	t.Run("alerts over a real scan", func(t *testing.T) { testAlertsFromScan(t, s) })
	t.Run("alerts over other findings", testAlertsFromOtherFindings)
}

// loopbackAddr returns a 127.0.0.1 address nothing listens on now.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startPushgateway starts the real Pushgateway on 127.0.0.1 with a
// persistence file in a temporary folder, and returns its URL; it stops
// with the test.
func startPushgateway(t *testing.T) string {
	t.Helper()
	bin, err := bins.Path(pushgatewayBin)
	if err != nil {
		t.Fatal(err)
	}
	addr := loopbackAddr(t)
	dir := t.TempDir()
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--web.listen-address="+addr, "--persistence.file="+filepath.Join(dir, "metrics.db"), "--persistence.interval=1s")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case <-done:
			t.Fatalf("the Pushgateway exited: %s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Pushgateway is not ready after 30s: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// series is one sample as a Prometheus server sees it: labels with a
// value (an empty one is no label) and the value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

func (s series) String() string {
	var pairs []string
	for k, v := range s.labels {
		pairs = append(pairs, k+"="+strconv.Quote(v))
	}
	sort.Strings(pairs)
	return s.name + "{" + strings.Join(pairs, ",") + "}"
}

// parseText parses the text exposition format with expfmt.
func parseText(t *testing.T, text []byte) []series {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	var out []series
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			s := series{name: name, labels: map[string]string{}, value: value(mf, m)}
			for _, l := range m.Label {
				if l.GetValue() != "" {
					s.labels[l.GetName()] = l.GetValue()
				}
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func value(mf *dto.MetricFamily, m *dto.Metric) float64 {
	switch mf.GetType() {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	}
	return m.GetUntyped().GetValue()
}

// find returns the series of name whose labels include want.
func find(all []series, name string, want map[string]string) []series {
	var out []series
	for _, s := range all {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range want {
			if s.labels[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, s)
		}
	}
	return out
}

func testPushgateway(t *testing.T, s metricsScene) {
	gw := startPushgateway(t)
	withCreds := strings.Replace(gw, "http://", "http://robot:s3cret@", 1)
	before := time.Now()
	s.scan(t, "-o", "json", "--pushgateway", withCreds, "--pushgateway-grouping", "instance=nightly")
	after := time.Now()

	served := func() ([]series, string) {
		resp, err := http.Get(gw + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		return parseText(t, buf.Bytes()), buf.String()
	}
	all, text := served()
	group := map[string]string{"job": "regcheck", "command": "scan", "instance": "nightly"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range group {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"child-missing names the workload", "regcheck_use_findings", with("namespace", "shop", "workload_kind", "Deployment", "workload", "signaling", "container", "signaling",
			"image", s.buildx, "verdict", "broken", "code", "child-missing"), float64(s.children)},
		{"a tag gone", "regcheck_use_findings", with("namespace", "shop", "workload", "web", "container", "sidecar", "image", s.gone, "verdict", "broken", "code", "tag-missing"), 1},
		{"a digest gone", "regcheck_use_findings", with("namespace", "ops", "workload_kind", "CronJob", "workload", "report", "image", s.pinned, "code", "manifest-missing"), 1},
		{"a blob gone", "regcheck_use_findings", with("namespace", "kube-system", "workload_kind", "DaemonSet", "workload", "agent", "image", s.appB, "code", "blob-missing"), 1},
		{"a registry not reached", "regcheck_use_findings", with("workload", "legacy", "image", s.stuck, "verdict", "unknown", "code", "unreachable"), 1},
		{"ok, no code", "regcheck_use_findings", with("workload", "web", "container", "app", "image", s.single, "verdict", "ok"), 0},
		{"the input not read", "regcheck_inputs_skipped", with("kind", "error"), 1},
		{"the broken gauge", "regcheck_image_broken", with("reference", s.buildx), 1},
		{"404s on manifests", "regcheck_registry_requests", with("kind", "manifest-get", "status", "404"), -1},
		{"the group was pushed", "push_time_seconds", group, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := find(all, tc.metric, tc.labels)
			if tc.name == "ok, no code" {
				got = slices.DeleteFunc(got, func(s series) bool { return s.labels["code"] != "" })
			}
			if len(got) != 1 || (tc.want >= 0 && got[0].value != tc.want) || (tc.want < 0 && got[0].value <= 0) {
				t.Errorf("%s%v: got %v, want one with value %v\n%s", tc.metric, tc.labels, got, tc.want, text)
			}
		})
	}
	last := find(all, "regcheck_last_success_timestamp_seconds", group)
	if len(last) != 1 || last[0].value < float64(before.Unix()) || last[0].value > float64(after.Unix()+1) {
		t.Errorf("last success %v, want one between %v and %v", last, before.Unix(), after.Unix())
	}
	if strings.Contains(text, "s3cret") || strings.Contains(text, "robot") {
		t.Errorf("a credential of the URL reached the Pushgateway's metrics")
	}

	// The next run replaces the group: what it did not find is gone.
	var out, errb bytes.Buffer
	if code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb},
		[]string{"scan", "--pushgateway", gw, "--pushgateway-grouping", "instance=nightly", s.single}); code != cli.ExitClean {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	all, text = served()
	if got := find(all, "regcheck_use_findings", group); len(got) != 1 || got[0].labels["image"] != s.single {
		t.Errorf("after a second push: %v\n%s", got, text)
	}
}

// promtool runs the real promtool and fails the test on an error.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := bins.Path(promtoolBin)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var rulesDir = filepath.Join("..", "deploy", "prometheus")

// promtool check rules passes the rule file and the PrometheusRule's spec.
func testCheckRules(t *testing.T) {
	out := promtool(t, "check", "rules", filepath.Join(rulesDir, "regcheck.rules.yml"))
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(metrics.Alerts())); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: %s, want %q", out, want)
	}
	data, err := os.ReadFile(filepath.Join(rulesDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &pr); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.Marshal(&pr.Spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(path, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := promtool(t, "check", "rules", path); !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules on the PrometheusRule's spec: %s", out)
	}
}

// inputSeries turns metrics regcheck wrote into promtool's input_series,
// each held for hours at one sample a minute, as a scrape every minute
// of the same file or Pushgateway group sees it. Timestamps are moved so that
// the scan started at the test's time 0 (promtool's clock starts at the
// Unix epoch).
func inputSeries(all []series, hours int) []map[string]string {
	var start float64
	for _, s := range all {
		if s.name == "regcheck_scan_timestamp_seconds" {
			start = s.value
		}
	}
	var out []map[string]string
	for _, s := range all {
		v := s.value
		if strings.HasSuffix(s.name, "_timestamp_seconds") {
			v -= start
		}
		out = append(out, map[string]string{"series": s.String(), "values": fmt.Sprintf("%sx%d", strconv.FormatFloat(v, 'f', -1, 64), hours*60)})
	}
	return out
}

// firing is an alert expected at an eval time: its series' labels, its
// value, and the rule's own labels.
type firing struct {
	alert  string
	labels map[string]string
	value  float64
}

// promtoolTest writes a promtool unit test over input, expecting at each
// eval time exactly the alerts of want (every alert not listed: none), with
// the annotations Prometheus renders from the rule's templates, and runs it.
func promtoolTest(t *testing.T, input []map[string]string, want map[string][]firing) {
	t.Helper()
	rules := map[string]metrics.Rule{}
	for _, g := range metrics.Rules() {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	type expAlert struct {
		Labels      map[string]string `yaml:"exp_labels"`
		Annotations map[string]string `yaml:"exp_annotations"`
	}
	type alertTest struct {
		EvalTime  string     `yaml:"eval_time"`
		Alertname string     `yaml:"alertname"`
		ExpAlerts []expAlert `yaml:"exp_alerts"`
	}
	var tests []alertTest
	var times []string
	for at := range want {
		times = append(times, at)
	}
	sort.Strings(times)
	for _, at := range times {
		for _, name := range metrics.Alerts() {
			at := alertTest{EvalTime: at, Alertname: name, ExpAlerts: []expAlert{}}
			for _, f := range want[at.EvalTime] {
				if f.alert != name {
					continue
				}
				r := rules[name]
				e := expAlert{Labels: map[string]string{}, Annotations: map[string]string{}}
				for k, v := range f.labels {
					e.Labels[k] = v
				}
				for k, v := range r.Labels {
					e.Labels[k] = v
				}
				for k, text := range r.Annotations {
					got, err := metrics.Render(text, f.labels, f.value)
					if err != nil {
						t.Fatal(err)
					}
					e.Annotations[k] = got
				}
				at.ExpAlerts = append(at.ExpAlerts, e)
			}
			tests = append(tests, at)
		}
	}
	abs, err := filepath.Abs(filepath.Join(rulesDir, "regcheck.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"rule_files":          []string{abs},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":        "1m",
			"input_series":    input,
			"alert_rule_test": tests,
		}},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "regcheck.test.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "test", "rules", path)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: %s", out)
	}
	t.Logf("promtool test rules over %d series, %d cases: %s", len(input), len(tests), strings.TrimSpace(out))
}

// A real scan writes --metrics-file; over those series the broken and
// at-risk alerts fire at once, naming workload and image, the unknown
// ones after two nightly runs, and the staleness alert once no run has
// succeeded for 26 hours.
func testAlertsFromScan(t *testing.T, s metricsScene) {
	file := filepath.Join(t.TempDir(), "regcheck.prom")
	s.scan(t, "--metrics-file", file)
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	all := parseText(t, text)

	use := func(ns, kind, name, container, image, verdict, code string) map[string]string {
		return map[string]string{"namespace": ns, "workload_kind": kind, "workload": name, "container": container, "image": image, "verdict": verdict, "code": code}
	}
	broken := []firing{
		{"RegcheckChildMissing", use("shop", "Deployment", "signaling", "signaling", s.buildx, "broken", "child-missing"), float64(s.children)},
		{"RegcheckAttestationMissing", use("shop", "Deployment", "signaling", "signaling", s.buildx, "broken", "attestation-missing"), 1},
		{"RegcheckTagMissing", use("shop", "Deployment", "web", "sidecar", s.gone, "broken", "tag-missing"), 1},
		{"RegcheckManifestMissing", use("ops", "CronJob", "report", "report", s.pinned, "broken", "manifest-missing"), 1},
		{"RegcheckBlobMissing", use("kube-system", "DaemonSet", "agent", "agent", s.appB, "broken", "blob-missing"), 1},
	}
	unknown := []firing{
		{"RegcheckImageUnknown", use("shop", "Deployment", "legacy", "legacy", s.stuck, "unknown", "unreachable"), 1},
		{"RegcheckInputsNotRead", map[string]string{"kind": "error"}, 1},
	}
	lastSuccess := -1.0
	for _, sr := range inputSeries(all, 30) {
		if strings.HasPrefix(sr["series"], "regcheck_last_success_timestamp_seconds{") {
			lastSuccess, _ = strconv.ParseFloat(strings.TrimSuffix(sr["values"], "x1800"), 64)
		}
	}
	if lastSuccess < 0 {
		t.Fatalf("no last success in the metrics file:\n%s", text)
	}
	stale := firing{"RegcheckNoRecentSuccess", map[string]string{"command": "scan"}, (27*3600 - lastSuccess) / 3600}
	promtoolTest(t, inputSeries(all, 30), map[string][]firing{
		"1h":  broken,                                                  // unknown ones pending
		"26h": append(slices.Clone(broken), unknown...),                // two nightly runs
		"27h": append(append(slices.Clone(broken), unknown...), stale), // no run for 26 hours
	})

	// What a person reads, independently of the template engine.
	desc, err := metrics.Render(metrics.Rules()[0].Rules[0].Annotations["description"], broken[0].labels, broken[0].value)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := metrics.Render(metrics.Rules()[0].Rules[0].Annotations["summary"], broken[0].labels, broken[0].value)
	for _, want := range []string{"the tag resolves but its platform manifest is gone; rebuild and push, or `regcheck rescue " + s.buildx + "`, and do not restart the pod until then"} {
		if !strings.Contains(desc, want) {
			t.Errorf("child-missing description %q lacks %q", desc, want)
		}
	}
	if want := "Deployment shop/signaling (container signaling) uses " + s.buildx; !strings.HasPrefix(sum, want) {
		t.Errorf("child-missing summary %q, want it to start %q", sum, want)
	}
}

// The broken codes no fixture makes here (a registry serving bytes that
// do not match their digest, a reference that does not parse), written by
// regcheck's metrics code to a file, fire their alerts.
func testAlertsFromOtherFindings(t *testing.T) {
	started := time.Date(2026, 12, 1, 3, 17, 0, 0, time.UTC)
	res := &types.Result{Started: started, Duration: 2 * time.Second}
	var want []firing
	for i, c := range []struct {
		code  types.Code
		alert string
	}{
		{types.DigestMismatch, "RegcheckDigestMismatch"},
		{types.InvalidReference, "RegcheckInvalidReference"},
	} {
		ref := fmt.Sprintf("registry.example/shop/app%d:v1", i)
		f := types.Finding{Code: c.code, Severity: c.code.Severity()}
		im := &types.Image{Reference: ref, Findings: []types.Finding{f},
			Uses: []types.Use{{Source: "cluster", Kind: "StatefulSet", Namespace: "shop", Name: fmt.Sprintf("app%d", i), Container: "app", Pod: fmt.Sprintf("app%d-0", i)}}}
		im.UpdateVerdict()
		res.Images = append(res.Images, im)
		want = append(want, firing{c.alert, map[string]string{"namespace": "shop", "workload_kind": "StatefulSet", "workload": fmt.Sprintf("app%d", i),
			"container": "app", "image": ref, "verdict": string(im.Verdict), "code": string(c.code)}, 1})
	}
	file := filepath.Join(t.TempDir(), "regcheck.prom")
	if err := metrics.WriteFile(file, metrics.ScanSeries(res)); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	promtoolTest(t, inputSeries(parseText(t, text), 3), map[string][]firing{"1h": want})
}

// TestClusterMetricsAndAlerts: against a real API server and a GC-broken
// registry, `scan --cluster` and `record` publish to one real Pushgateway
// (a group each, side by side), and over the series the cluster scan's
// --metrics-file holds, the cluster findings' alerts fire: drift, pull
// Always on a tag, a pinned digest no tag holds, a running digest gone,
// and the GC's broken index.
func TestClusterMetricsAndAlerts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := startCluster(t)
	cs, err := kc.Client()
	if err != nil {
		t.Fatal(err)
	}
	reg, imgs := startRegistry(t, registry.V2)
	collect(t, reg)
	ref := func(repo, rest string) string { return reg.Host() + "/" + repo + rest }
	var buildx string
	for _, fx := range imgs {
		if fx.Name == "buildx" {
			buildx = fx.Digest.String()
		}
	}
	coturnA := pushSingle(t, ref("c/coturn", ":latest"), "coturn 4.17")
	orphanO1 := pushSingle(t, ref("c/orphanpin", ":v1"), "orphan pin, first build")
	goneG1 := pushSingle(t, ref("c/gone", ":v1"), "gone, first build")

	ns := "dam-prod"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller-manager: create the namespace's default service account.
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	workload(t, ctx, cs, ns, "signaling", ref("gc/buildx", ":v1"), "IfNotPresent", "node-a", ref("gc/buildx", "@"+buildx))
	workload(t, ctx, cs, ns, "coturn", ref("c/coturn", ":latest"), "Always", "node-a", "docker-pullable://"+ref("c/coturn", "@"+coturnA))
	workload(t, ctx, cs, ns, "orphanpin", ref("c/orphanpin", ":v1@"+orphanO1), "IfNotPresent", "node-a", ref("c/orphanpin", "@"+orphanO1))
	workload(t, ctx, cs, ns, "gone", ref("c/gone", ":v1"), "IfNotPresent", "node-a", ref("c/gone", "@"+goneG1))
	// Upstream moves on after the pods started; the digest gone ran is
	// deleted from the registry.
	coturnB := pushSingle(t, ref("c/coturn", ":latest"), "coturn 4.18 (rejects --no-dtls)")
	pushSingle(t, ref("c/orphanpin", ":v1"), "orphan pin, rebuilt")
	pushSingle(t, ref("c/gone", ":v1"), "gone, rebuilt")
	req, _ := http.NewRequest(http.MethodDelete, "http://"+ref("v2/c/gone", "/manifests/"+goneG1), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting %s: %v %v", goneG1, err, resp)
	}
	resp.Body.Close()

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, "k3s-prod", adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	gw := startPushgateway(t)
	dir := t.TempDir()
	run := func(want int, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		args = append(args, "-A", "--kubeconfig", kubeconfig, "--pushgateway", gw, "--pushgateway-grouping", "instance=k3s-prod")
		if code := cli.Run(context.Background(), cli.Streams{Out: &out, Err: &errb}, args); code != want {
			t.Fatalf("regcheck %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
		}
	}
	history := filepath.Join(dir, "history.json")
	run(cli.ExitClean, "record", "--out", history, "--metrics-file", filepath.Join(dir, "record.prom"))
	scanFile := filepath.Join(dir, "scan.prom")
	run(cli.ExitFindings, "scan", "--cluster", "--metrics-file", scanFile)
	// The coturn pod restarts onto the tag's new digest.
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=coturn"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("coturn pod: %v", err)
	}
	pod := pods.Items[0]
	pod.Status.ContainerStatuses[0].ImageID = ref("c/coturn", "@"+coturnB)
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	run(cli.ExitClean, "record", "--out", history, "--metrics-file", filepath.Join(dir, "record.prom"))

	resp, err = http.Get(gw + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	served := parseText(t, buf.Bytes())
	for _, command := range []string{"scan", "record"} {
		if got := find(served, "regcheck_last_success_timestamp_seconds", map[string]string{"job": "regcheck", "instance": "k3s-prod", "command": command}); len(got) != 1 {
			t.Errorf("last success of %s: %v\n%s", command, got, buf.String())
		}
	}
	recordGroup := map[string]string{"job": "regcheck", "instance": "k3s-prod", "command": "record"}
	if got := find(served, "regcheck_record_digest_changed", recordGroup); len(got) != 1 ||
		got[0].String() != (series{name: "regcheck_record_digest_changed", labels: map[string]string{"job": "regcheck", "instance": "k3s-prod", "command": "record",
			"namespace": ns, "workload_kind": "Deployment", "workload": "coturn", "container": "coturn", "image": ref("c/coturn", ":latest")}}).String() {
		t.Errorf("digest changes pushed by record: %v\n%s", got, buf.String())
	}
	if got := find(served, "regcheck_record_containers", recordGroup); len(got) != 1 || got[0].value != 4 {
		t.Errorf("containers recorded: %v", got)
	}
	if got := find(served, "regcheck_use_findings", map[string]string{"command": "scan", "workload": "coturn", "code": "drift"}); len(got) != 1 {
		t.Errorf("the scan's group is still there beside record's: %v", got)
	}

	text, err := os.ReadFile(scanFile)
	if err != nil {
		t.Fatal(err)
	}
	use := func(name, image, verdict, code string) map[string]string {
		return map[string]string{"namespace": ns, "workload_kind": "Deployment", "workload": name, "container": name, "image": image, "verdict": verdict, "code": code}
	}
	signaling, coturn, orphan, gone := ref("gc/buildx", ":v1"), ref("c/coturn", ":latest"), ref("c/orphanpin", ":v1@"+orphanO1), ref("c/gone", ":v1")
	promtoolTest(t, inputSeries(parseText(t, text), 2), map[string][]firing{"1h": {
		{"RegcheckChildMissing", use("signaling", signaling, "broken", "child-missing"), 1},
		{"RegcheckAttestationMissing", use("signaling", signaling, "broken", "attestation-missing"), 1},
		{"RegcheckDrift", use("coturn", coturn, "at-risk", "drift"), 1},
		{"RegcheckPullAlwaysMutable", use("coturn", coturn, "at-risk", "pull-always-mutable"), 1},
		{"RegcheckPinnedDigestUntagged", use("orphanpin", orphan, "at-risk", "pinned-digest-untagged"), 1},
		{"RegcheckDrift", use("gone", gone, "at-risk", "drift"), 1},
		{"RegcheckRunningDigestMissing", use("gone", gone, "at-risk", "running-digest-missing"), 1},
	}})
}
