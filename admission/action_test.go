package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

// readDoc reads one ClusterPolicy named p with the given spec.
func readDoc(t *testing.T, spec string) *Policies {
	t.Helper()
	ps := &Policies{Labels: map[string]map[string]string{}}
	doc := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n" + spec
	if problems := ps.readObjects(yamlfile.File{Name: "p.yaml", Data: []byte(doc)}); len(problems) > 0 {
		t.Fatalf("problems: %+v", problems)
	}
	return ps
}

// TestRuleAction: a rule's failure action as Kyverno 1.19 resolves it
// (engineapi.EngineResponse.ruleAction): any verifyImages entry that
// enforces makes the whole rule enforce; else the first entry's action;
// else the spec's, for every entry.
func TestRuleAction(t *testing.T) {
	entry := func(action string) string {
		a := ""
		if action != "" {
			a = ", failureAction: " + action
		}
		return `{imageReferences: ["*"]` + a + `, attestors: [{entries: [{keys: {publicKeys: k}}]}]}`
	}
	for _, c := range []struct {
		name, specAction string
		entries          []string // each entry's failureAction
		want             string   // each Rule's Mode
	}{
		{"one entry enforces: the rule does", "Audit", []string{"Audit", "Enforce"}, "Enforce Enforce"},
		{"an entry's Audit over the spec's Enforce", "Enforce", []string{"", "Audit"}, "Audit Audit"},
		{"no entry says: the spec", "Enforce", []string{"", ""}, "Enforce Enforce"},
		{"nothing says: Audit", "", []string{""}, "Audit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var es []string
			for _, e := range c.entries {
				es = append(es, entry(e))
			}
			spec := "spec:\n  rules:\n    - name: r\n      verifyImages: [" + strings.Join(es, ", ") + "]\n"
			if c.specAction != "" {
				spec = strings.Replace(spec, "spec:\n", "spec:\n  validationFailureAction: "+c.specAction+"\n", 1)
			}
			var got []string
			for _, r := range readDoc(t, spec).Rules {
				got = append(got, r.Mode())
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("modes %q, want %q", got, c.want)
			}
		})
	}
}

// TestActionOverrides: validationFailureActionOverrides decide per
// namespace when the rule sets no action of its own, first match wins: an
// Enforce policy audited in dev-* says a warning there and critical
// elsewhere; an override by label, with the labels not known, a warning.
func TestActionOverrides(t *testing.T) {
	const spec = `spec:
  validationFailureAction: Enforce
  validationFailureActionOverrides:
    - action: Audit
      namespaces: ["dev-*"]
    - action: Audit
      namespaceSelector: {matchLabels: {tier: sandbox}}
  rules:
    - name: r
      match: {any: [{resources: {kinds: [Pod]}}]}
      verifyImages: [{imageReferences: ["registry.example.com/*"], attestors: [{entries: [{keys: {publicKeys: k}}]}]}]
`
	ref, _ := imageref.Parse("registry.example.com/web:v1")
	for _, c := range []struct {
		name   string
		ns     string
		labels map[string]map[string]string // nil: not known
		want   types.Severity
		mode   string
	}{
		{"audited by name", "dev-1", map[string]map[string]string{"dev-1": {}}, types.SeverityWarning, "Audit in this namespace"},
		{"enforced elsewhere", "prod", map[string]map[string]string{"prod": {}}, types.SeverityCritical, ""},
		{"audited by label", "play", map[string]map[string]string{"play": {"tier": "sandbox"}}, types.SeverityWarning, "Audit in this namespace"},
		{"labels not known", "play", nil, types.SeverityWarning, "namespace labels that are not known"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readDoc(t, spec)
			if c.labels != nil {
				ps.Labels, ps.LabelsKnown = c.labels, true
			}
			im := &types.Image{Reference: ref.Normalized(), Digest: imgDigest,
				Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: c.ns, Name: "web"}}}
			ch := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Artifacts: []artifacts.Artifact{}}}, Parse: scan.ParseReference}
			fs := ch.Findings(context.Background(), im)
			if len(fs) != 1 || fs[0].Code != types.SignatureMissing || fs[0].Severity != c.want || !strings.Contains(fs[0].Message, c.mode) {
				t.Errorf("findings %s, want one signature-missing at %v saying %q", fmt.Sprint(fs), c.want, c.mode)
			}
		})
	}
}

// TestOverrideNoNamespaces: an override with namespaces: [] applies in
// no namespace (Kyverno's matchOverride ranges over the list), one with
// no namespaces field, or null, in every one.
func TestOverrideNoNamespaces(t *testing.T) {
	ref, _ := imageref.Parse("registry.example.com/web:v1")
	for _, c := range []struct {
		field string
		want  bool // enforced in prod
	}{{"namespaces: []", true}, {"namespaces: null", false}, {"", false}} {
		t.Run(c.field, func(t *testing.T) {
			ps := readDoc(t, `spec:
  validationFailureAction: Enforce
  validationFailureActionOverrides:
    - action: Audit
      `+c.field+`
  rules:
    - name: r
      match: {any: [{resources: {kinds: [Pod]}}]}
      verifyImages: [{imageReferences: ["registry.example.com/*"], attestors: [{entries: [{keys: {publicKeys: k}}]}]}]
`)
			ps.Labels, ps.LabelsKnown = map[string]map[string]string{"prod": {}}, true
			as := ps.Applying(types.Use{Kind: "Deployment", Namespace: "prod", Name: "web"}, ref)
			if len(as) != 1 || as[0].Enforce != c.want {
				t.Errorf("applying %+v, want enforce %v", as, c.want)
			}
		})
	}
}

// TestWorkloadOnlyRule: a rule on the Deployment kind alone does not
// check the Pod a restart creates: a warning that the next change of the
// workload is refused, not a refused pod; a Pod rule's is critical.
func TestWorkloadOnlyRule(t *testing.T) {
	ref, _ := imageref.Parse("registry.example.com/web:v1")
	for _, c := range []struct {
		kinds, mention string
		want           types.Severity
	}{
		{"[Deployment]", "the rule selects the workload, not the Pod a restart creates", types.SeverityWarning},
		{"[Pod]", "the pod will be refused", types.SeverityCritical},
		{"[Deployment, StatefulSet]", "the next change of the workload's image will be refused", types.SeverityWarning},
	} {
		t.Run(c.kinds, func(t *testing.T) {
			ps := readDoc(t, `spec:
  validationFailureAction: Enforce
  rules:
    - name: r
      match: {any: [{resources: {kinds: `+c.kinds+`}}]}
      verifyImages: [{imageReferences: ["registry.example.com/*"], attestors: [{entries: [{keys: {publicKeys: k}}]}]}]
`)
			ps.Labels, ps.LabelsKnown = map[string]map[string]string{"prod": {}}, true
			im := &types.Image{Reference: ref.Normalized(), Digest: imgDigest,
				Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "prod", Name: "web"}}}
			ch := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Artifacts: []artifacts.Artifact{}}}, Parse: scan.ParseReference}
			fs := ch.Findings(context.Background(), im)
			if len(fs) != 1 || fs[0].Code != types.SignatureMissing || fs[0].Severity != c.want || !strings.Contains(fs[0].Message, c.mention) {
				t.Errorf("findings %s, want one signature-missing at %v saying %q", fmt.Sprint(fs), c.want, c.mention)
			}
		})
	}
}

// TestObjectSelectors: a rule that matches (or excludes) by the pod's own
// labels or annotations, which a use does not carry, applies unsure: a
// warning, never broken.
func TestObjectSelectors(t *testing.T) {
	ref, _ := imageref.Parse("registry.example.com/web:v1")
	for _, c := range []struct{ name, filters string }{
		{"match by selector", `match: {any: [{resources: {kinds: [Pod], selector: {matchLabels: {app: web}}}}]}`},
		{"match by annotations", `match: {any: [{resources: {kinds: [Pod], annotations: {signed: "true"}}}]}`},
		{"exclude by selector", `match: {any: [{resources: {kinds: [Pod]}}]}
      exclude: {any: [{resources: {selector: {matchLabels: {unsigned: "ok"}}}}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readDoc(t, `spec:
  validationFailureAction: Enforce
  rules:
    - name: r
      `+c.filters+`
      verifyImages: [{imageReferences: ["registry.example.com/*"], attestors: [{entries: [{keys: {publicKeys: k}}]}]}]
`)
			ps.LabelsKnown = true
			as := ps.Applying(types.Use{Kind: "Deployment", Namespace: "prod", Name: "web"}, ref)
			if len(as) != 1 || !as[0].Unsure || !as[0].Enforce {
				t.Errorf("applying %+v, want the rule, enforcing, unsure", as)
			}
		})
	}
}

// TestClusterImagePolicyMatch: spec.match limits a ClusterImagePolicy to
// the resources it lists (policy-controller's GetMatchingPolicies); an
// entry with a label selector matches unsure.
func TestClusterImagePolicyMatch(t *testing.T) {
	ref, _ := imageref.Parse("registry.example.com/web:v1")
	for _, c := range []struct {
		name, match     string
		kind            string
		applies, unsure bool
	}{
		{"no match: everything", "", "Deployment", true, false},
		{"pods", "match: [{version: v1, resource: pods}]", "Deployment", true, false},
		{"deployments, any version", "match: [{group: apps, version: '*', resource: deployments}]", "Deployment", true, false},
		{"jobs only", "match: [{group: batch, version: v1, resource: jobs}]", "Deployment", false, false},
		{"pods by label", "match: [{version: v1, resource: pods, selector: {matchLabels: {app: web}}}]", "Deployment", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &Policies{Labels: map[string]map[string]string{"prod": {includeLabel: "true"}}, LabelsKnown: true}
			doc := "apiVersion: policy.sigstore.dev/v1beta1\nkind: ClusterImagePolicy\nmetadata: {name: cip}\nspec:\n  images: [{glob: 'registry.example.com/**'}]\n  authorities: [{key: {data: k}}]\n"
			if c.match != "" {
				doc += "  " + c.match + "\n"
			}
			if problems := ps.readObjects(yamlfile.File{Name: "cip.yaml", Data: []byte(doc)}); len(problems) > 0 || len(ps.Rules) != 1 {
				t.Fatalf("rules %d, problems %+v", len(ps.Rules), problems)
			}
			as := ps.Applying(types.Use{Kind: c.kind, Namespace: "prod", Name: "web"}, ref)
			if len(as) == 1 != c.applies || c.applies && as[0].Unsure != c.unsure {
				t.Errorf("applying %+v, want applies %v, unsure %v", as, c.applies, c.unsure)
			}
		})
	}
}

// TestFaultCause: the fault a finding cites is one that hides the image's
// own artifacts, not a child's.
func TestFaultCause(t *testing.T) {
	ps := readDoc(t, `spec:
  validationFailureAction: Enforce
  rules:
    - name: r
      match: {any: [{resources: {kinds: [Pod]}}]}
      verifyImages: [{imageReferences: ["registry.example.com/*"], attestors: [{entries: [{keys: {publicKeys: k}}]}]}]
`)
	child := "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	set := artifacts.Set{Artifacts: []artifacts.Artifact{}, Faults: []types.Finding{
		types.NewFinding(types.RateLimited, child, "linux/arm64", "the child's lookup was rate limited"),
		types.NewFinding(types.RegistryFault, imgDigest, "", "GET referrers: 503")}}
	ref, _ := imageref.Parse("registry.example.com/web:v1")
	im := &types.Image{Reference: ref.Normalized(), Digest: imgDigest, Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "prod", Name: "web"}}}
	ch := &Checker{Policies: ps, Finder: &fakeFinder{set: set}, Parse: scan.ParseReference}
	fs := ch.Findings(context.Background(), im)
	if len(fs) != 1 || fs[0].Code != types.RegistryFault || !strings.Contains(fs[0].Message, "503") {
		t.Errorf("findings %v, want one registry-error citing the 503", fs)
	}
}
