//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/grafana"
	"github.com/regcheck/regcheck/internal/testing/promql"
)

var dashboardFile = filepath.Join("..", "deploy", "grafana", "regcheck.json")

// TestDashboard: every query of the Grafana dashboard parses with the real
// promtool; against a real kube-apiserver and distribution 3.1.2, a real
// `regcheck watch` and the CronJob's record and scan pushed to a real
// Pushgateway serve every series the queries name (ALERTS only for alerts
// of deploy/prometheus); the real promtool evaluates each query over
// those series and the alert rules, and the panels, rendered from those
// values, are screenshot in headless Chromium.
func TestDashboard(t *testing.T) {
	d, err := grafana.Load(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("promtool parses every query", func(t *testing.T) { promtoolParses(t, qs) })
	if t.Failed() {
		return
	}
	run := newDashboardRun(t)
	t.Run("every series is served", func(t *testing.T) { everySeriesServed(t, qs, run) })
	t.Run("panels over the real run", func(t *testing.T) { panelsOverRun(t, d, qs, run) })
}

// promtoolParses writes every query as a recording rule and runs
// promtool check rules on the file (promtool v3.16 has no command that
// only parses an expression without --experimental); a file with one
// query broken is refused, so the check can fail.
func promtoolParses(t *testing.T, qs []grafana.Query) {
	write := func(exprs []string) string {
		var rules []map[string]string
		for i, e := range exprs {
			rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:query%d", i), "expr": e})
		}
		data, err := yaml.Marshal(map[string]any{"groups": []map[string]any{{"name": "dashboard", "rules": rules}}})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var exprs []string
	for _, q := range qs {
		exprs = append(exprs, q.Expr)
	}
	out := promtool(t, "check", "rules", write(exprs))
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(exprs)); !strings.Contains(out, want) {
		t.Errorf("promtool check rules: %s, want %q", out, want)
	}
	t.Logf("%s: check rules over the dashboard's %d queries: %s", promtoolVersion(t), len(exprs), strings.TrimSpace(out))

	bin, err := bins.Path(promtoolBin)
	if err != nil {
		t.Fatal(err)
	}
	broken := append(slices.Clone(exprs), `sum by (host) (regcheck_registry_requests`)
	if out, err := exec.Command(bin, "check", "rules", write(broken)).CombinedOutput(); err == nil {
		t.Errorf("promtool check rules passed a query with no closing parenthesis:\n%s", out)
	}
}

// dashboardRun is what a real run served: the watcher's /metrics (with
// the job and instance a scrape adds) and the CronJob's groups on the
// Pushgateway (job="regcheck").
type dashboardRun struct {
	watcher, pushed []series
	watchStarted    time.Time // when the watcher's counters were 0
	scraped         time.Time // the last scrape
	// What the run made, for the panels to show.
	gone, stuck, from, to string
}

// newDashboardRun starts the rig: workloads in namespace shop whose
// images live in distribution 3.1.2 (coturn:latest, web:1.0, gone:v1 whose
// manifest is then deleted) or on a host nothing listens on (legacy); a
// watcher; the coturn tag moves and its pod restarts onto it (an
// unplanned upgrade). record runs before and after the change, then scan
// --cluster, each pushing to a Pushgateway as the CronJob does.
func newDashboardRun(t *testing.T) *dashboardRun {
	r := newWatchRig(t)
	run := &dashboardRun{stuck: loopbackAddr(t)}
	coturn := r.ref("coturn", "latest")
	run.from = pushSingle(t, coturn, "coturn 4.6")
	cpod := r.deploy(t, "coturn", "latest", run.from)
	r.deploy(t, "web", "1.0", pushSingle(t, r.ref("web", "1.0"), "web 1.0"))
	run.gone = r.ref("gone", "v1")
	g1 := pushSingle(t, run.gone, "gone 1")
	r.deploy(t, "gone", "v1", g1)
	req, _ := http.NewRequest(http.MethodDelete, "http://"+r.reg.Host()+"/v2/watch/gone/manifests/"+g1, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("deleting %s: %v %v", g1, err, resp)
	}
	resp.Body.Close()
	legacy := run.stuck + "/legacy/app:v1"
	workload(t, t.Context(), r.cs, r.ns, "legacy", legacy, "IfNotPresent", "node-a", run.stuck+"/legacy/app@sha256:"+strings.Repeat("1", 64))

	out := filepath.Join(t.TempDir(), "history.json")
	run.watchStarted = time.Now()
	w := r.startWatcher(t, []string{"--out", out}, "--walk-debounce", "1s", "--timeout", "5s")
	w.waitReady(t, time.Minute)
	waitTransition(t, fileHistory(out), 30*time.Second, firstSeen("coturn", run.from))
	cron := newCronJob(t, r)
	cron.run(t, cli.ExitClean, "record") // the snapshot before the change
	run.to = pushSingle(t, coturn, "coturn 4.7")
	r.restart(t, cpod, "coturn", coturn, run.to, 1, "Error", 1)
	waitTransition(t, fileHistory(out), 30*time.Second, changed("coturn", run.from, run.to, 1))
	run.waitWalked(t, w)
	cron.run(t, cli.ExitClean, "record")
	cron.run(t, cli.ExitFindings, "scan", "--cluster", "--timeout", "5s", "--no-cache")
	run.pushed = cron.served(t)
	run.watcher, _ = w.scrape(t)
	run.scraped = time.Now()
	for i := range run.watcher { // as Prometheus scrapes the pod
		run.watcher[i].labels["job"], run.watcher[i].labels["instance"] = "regcheck-watch", w.addr
	}
	return run
}

// waitWalked waits until the watcher serves the unplanned upgrade and its
// deep walk's verdicts on gone (broken) and legacy (unknown).
func (run *dashboardRun) waitWalked(t *testing.T, w *watcher) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		all, text := w.scrape(t)
		up := find(all, "regcheck_unplanned_upgrade", map[string]string{"owner_name": "coturn", "from": run.from, "to": run.to})
		gone := find(all, "regcheck_use_findings", map[string]string{"workload": "gone", "verdict": "broken"})
		legacy := find(all, "regcheck_use_findings", map[string]string{"workload": "legacy", "verdict": "unknown"})
		if len(up) == 1 && len(gone) > 0 && len(legacy) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90s the watcher serves upgrade %v, gone %v, legacy %v:\n%s\n%s", up, gone, legacy, text, w.tail())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// cronJob runs what the nightly CronJob runs, record then scan, each
// pushing its group to a real Pushgateway, record with a history file of
// its own.
type cronJob struct {
	gw, history string
	common      []string
}

func newCronJob(t *testing.T, r *watchRig) *cronJob {
	gw := startPushgateway(t)
	return &cronJob{gw: gw, history: filepath.Join(t.TempDir(), "history.json"),
		common: []string{"-A", "--kubeconfig", r.kc.Kubeconfig, "--pushgateway", gw, "--pushgateway-grouping", "instance=dashboard"}}
}

// run runs regcheck with args in process and fails unless it exits want.
func (c *cronJob) run(t *testing.T, want int, args ...string) {
	if args[0] == "record" {
		args = append(args, "--out", c.history)
	}
	args = append(args, c.common...)
	var out, errb bytes.Buffer
	if code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args); code != want {
		t.Fatalf("regcheck %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
}

// served returns the series of job regcheck the Pushgateway serves.
func (c *cronJob) served(t *testing.T) []series {
	resp, err := http.Get(c.gw + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	var out []series
	for _, s := range parseText(t, buf.Bytes()) {
		if s.labels["job"] == "regcheck" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the Pushgateway serves no series of job regcheck:\n%s", buf.String())
	}
	return out
}

// served returns the metric names each source served.
func (run *dashboardRun) served() map[string][]string {
	out := map[string][]string{}
	for src, all := range map[string][]series{"the watcher": run.watcher, "the Pushgateway": run.pushed} {
		for _, s := range all {
			if !slices.Contains(out[s.name], src) {
				out[s.name] = append(out[s.name], src)
			}
		}
	}
	return out
}

// alertNames are the alerts of deploy/prometheus/regcheck.rules.yml.
func alertNames(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rulesDir, "regcheck.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r.Alert)
			}
		}
	}
	return out
}

// unserved returns why a selector names no served series: "" when its
// name was served, or it is ALERTS/ALERTS_FOR_STATE with an alertname
// matcher that matches an alert of the rule file.
func unserved(sel promql.Selector, served map[string][]string, alerts []string) string {
	if sel.Name != "ALERTS" && sel.Name != "ALERTS_FOR_STATE" {
		if len(served[sel.Name]) > 0 {
			return ""
		}
		return sel.Name + " is served neither by the watcher nor by the CronJob's push"
	}
	m, ok := sel.Matcher("alertname")
	if !ok {
		return sel.Name + " with no alertname matcher"
	}
	for _, a := range alerts {
		if ok, err := m.Matches(a); err != nil {
			return err.Error()
		} else if ok {
			return ""
		}
	}
	return fmt.Sprintf("%s{alertname%s%q} names no alert of deploy/prometheus", sel.Name, m.Op, m.Value)
}

// everySeriesServed: each selector of each query names a series the
// watcher or the CronJob's push served, or an alert of the rule file;
// names neither served nor alerts are refused.
func everySeriesServed(t *testing.T, qs []grafana.Query, run *dashboardRun) {
	served, alerts := run.served(), alertNames(t)
	for _, control := range []promql.Selector{
		{Name: "regcheck_gc_would_delete"},
		{Name: "ALERTS", Matchers: []promql.Matcher{{Name: "alertname", Op: "=", Value: "RegcheckGCWouldBreak"}}},
		{Name: "ALERTS"},
	} {
		if unserved(control, served, alerts) == "" {
			t.Errorf("the check takes %+v for served", control)
		}
	}
	names := map[string]bool{}
	for _, q := range qs {
		sels, err := promql.Selectors(q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		for _, s := range sels {
			if why := unserved(s, served, alerts); why != "" {
				t.Errorf("%s: %s", q.Where, why)
			}
			names[s.Name] = true
		}
	}
	var lines []string
	for _, n := range slices.Sorted(maps.Keys(names)) {
		lines = append(lines, fmt.Sprintf("%s (%s)", n, strings.Join(served[n], ", ")))
	}
	t.Logf("%d queries name %d series; the watcher served %d series, the Pushgateway %d of job regcheck:\n%s",
		len(qs), len(names), len(run.watcher), len(run.pushed), strings.Join(lines, "\n"))
}
