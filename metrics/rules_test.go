package metrics

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite charts/regcheck/rules/regcheck.rules.yml from Rules")

// ruleFile is the chart's copy of the rules: its PrometheusRule holds it,
// and make deploy copies it and renders the PrometheusRule into
// deploy/prometheus/.
var ruleFile = filepath.Join("..", "charts", "regcheck", "rules", "regcheck.rules.yml")

// The chart's rule file is generated from Rules; deploy/prometheus/'s
// rule file and PrometheusRule (make deploy) hold the same rules.
func TestRulesFiles(t *testing.T) {
	want, err := RuleFile()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(ruleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what Rules generates: go test ./metrics -run TestRulesFiles -update, then make deploy", ruleFile)
	}
	groups := map[string][]RuleGroup{}
	for _, path := range []string{ruleFile, filepath.Join("..", "deploy", "prometheus", "regcheck.rules.yml"), filepath.Join("..", "deploy", "prometheus", "prometheusrule.yaml")} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string
			Metadata   map[string]any
			Groups     []RuleGroup
			Spec       struct{ Groups []RuleGroup }
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		groups[path] = append(doc.Groups, doc.Spec.Groups...)
		if strings.HasSuffix(path, "prometheusrule.yaml") && (doc.APIVersion != "monitoring.coreos.com/v1" || doc.Kind != "PrometheusRule") {
			t.Errorf("%s is a %s %s", path, doc.APIVersion, doc.Kind)
		}
	}
	for path, g := range groups {
		if len(g) == 0 || !reflect.DeepEqual(g, groups[ruleFile]) {
			t.Errorf("%s holds other rules than %s: make deploy", path, ruleFile)
		}
	}
}

// One alert per finding class, each labelled and saying what to run.
func TestRulesClasses(t *testing.T) {
	want := []string{
		"RegcheckChildMissing", "RegcheckBlobMissing", "RegcheckManifestMissing", "RegcheckTagMissing", "RegcheckDigestMismatch", "RegcheckInvalidReference",
		"RegcheckDrift", "RegcheckRunningDigestMissing", "RegcheckPullAlwaysMutable", "RegcheckAttestationMissing", "RegcheckPinnedDigestUntagged",
		"RegcheckImageUnknown", "RegcheckInputsNotRead",
		"RegcheckNoRecentSuccess", "RegcheckNeverSucceeded",
		"RegcheckUnplannedUpgrade",
	}
	if got := Alerts(); !slices.Equal(got, want) {
		t.Errorf("alerts %v\nwant %v", got, want)
	}
	labels := map[string]string{"namespace": "web", "workload_kind": "Deployment", "workload": "app", "container": "c",
		"image": "reg.example/app:v1", "verdict": "broken", "code": "unauthorized", "command": "scan"}
	for _, g := range Rules() {
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				if r.Labels["severity"] == "" || r.Labels["class"] == "" {
					t.Errorf("labels %v", r.Labels)
				}
				for _, k := range []string{"summary", "description"} {
					text, err := Render(r.Annotations[k], labels, 2)
					if err != nil {
						t.Fatalf("%s: %v", k, err)
					}
					if strings.Contains(text, "<no value>") || strings.Contains(text, "{{") {
						t.Errorf("%s renders %q", k, text)
					}
				}
				if d := r.Annotations["description"]; !strings.Contains(d, "`regcheck ") && !strings.Contains(d, "`kubectl ") && r.Alert != "RegcheckInputsNotRead" && r.Alert != "RegcheckInvalidReference" {
					t.Errorf("the description names no command to run: %q", d)
				}
			})
		}
	}
	child, err := Render(Rules()[0].Rules[0].Annotations["description"], labels, 1)
	if err != nil || !strings.Contains(child, "the tag resolves but its platform manifest is gone; rebuild and push, or `regcheck rescue reg.example/app:v1`, and do not restart the pod until then") {
		t.Errorf("child-missing says %q (%v)", child, err)
	}
	unknown, err := Render(Rules()[1].Rules[0].Annotations["description"], labels, 1)
	if err != nil || !strings.Contains(unknown, "Give regcheck credentials for this registry") {
		t.Errorf("unknown (unauthorized) says %q (%v)", unknown, err)
	}
}
