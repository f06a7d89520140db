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

var update = flag.Bool("update", false, "rewrite deploy/prometheus/ from Rules")

var ruleFiles = map[string]func() ([]byte, error){
	"regcheck.rules.yml":  RuleFile,
	"prometheusrule.yaml": PrometheusRule,
}

// The rule file and the PrometheusRule are generated from Rules, and hold
// the same rules.
func TestRulesFiles(t *testing.T) {
	groups := map[string][]RuleGroup{}
	for name, gen := range ruleFiles {
		want, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "deploy", "prometheus", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what Rules generates: go test ./metrics -run TestRulesFiles -update", path)
		}
		var doc struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string
			Groups     []RuleGroup
			Spec       struct{ Groups []RuleGroup }
		}
		if err := yaml.Unmarshal(got, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		groups[name] = append(doc.Groups, doc.Spec.Groups...)
		if name == "prometheusrule.yaml" && (doc.APIVersion != "monitoring.coreos.com/v1" || doc.Kind != "PrometheusRule") {
			t.Errorf("%s is a %s %s", path, doc.APIVersion, doc.Kind)
		}
	}
	if a, b := groups["regcheck.rules.yml"], groups["prometheusrule.yaml"]; len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("the rule file and the PrometheusRule hold different rules")
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
