package admission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

func readTestPolicies(t *testing.T) *Policies {
	t.Helper()
	ps, problems := ReadFiles([]string{"testdata/policies.yaml"})
	if len(problems) > 0 {
		t.Fatalf("problems: %+v", problems)
	}
	return ps
}

func TestReadFiles(t *testing.T) {
	ps := readTestPolicies(t)
	var got []string
	for _, r := range ps.Rules {
		got = append(got, fmt.Sprintf("%s|%s|%v|%+v", r.String(), r.Source, r.Images, presenceOnly(r.Alternatives)))
	}
	want := []string{
		"kyverno ClusterPolicy check-signed, rule verify-signature (Enforce)|testdata/policies.yaml:2|[registry.example.com/team/*]|[{Signature:true Predicates:[] Format:legacy}]",
		"kyverno ClusterPolicy audit-provenance, rule provenance (Audit)|testdata/policies.yaml:27|[registry.example.com/*]|[{Signature:false Predicates:[https://slsa.dev/provenance/v1] Format:bundle}]",
		"kyverno Policy shop/shop-signed, rule sig (Enforce)|testdata/policies.yaml:51|[*]|[{Signature:true Predicates:[] Format:legacy}]",
		"policy-controller ClusterImagePolicy signed-team (enforce)|testdata/policies.yaml:73|[registry.example.com/team/**]|[{Signature:true Predicates:[] Format:legacy}]",
		"policy-controller ClusterImagePolicy warn-sbom (warn)|testdata/policies.yaml:84|[**]|[{Signature:false Predicates:[https://spdx.dev/Document] Format:bundle}]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if l := ps.Labels["shop"]; l[includeLabel] != "true" || ps.LabelsKnown {
		t.Errorf("labels = %v, known %v; want shop's, not all known", ps.Labels, ps.LabelsKnown)
	}
}

func TestReadFilesProblems(t *testing.T) {
	dir := t.TempDir()
	bad := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: x}\nspec:\n  rules: 3\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notyaml.yml"), []byte("kyverno.io: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, problems := ReadFiles([]string{dir})
	if len(ps.Rules) != 0 || len(problems) != 2 {
		t.Fatalf("rules %d, problems %+v; want none and 2", len(ps.Rules), problems)
	}
	for _, p := range problems {
		bad := strings.HasSuffix(p.Source, "bad.yaml")
		if p.Warning != bad || p.Source == "" || bad && p.Line != 1 {
			t.Errorf("problem %+v: want a warning at bad.yaml:1, a notice for notyaml.yml", p)
		}
	}
}

// TestApplying: which rules apply to which use, by image, namespace,
// kind (autogen), exclusions, a namespaced Policy, namespace labels.
func TestApplying(t *testing.T) {
	ps := readTestPolicies(t)
	ps.Labels["dev"] = map[string]string{}
	ps.Labels["kube-system"] = map[string]string{}
	ps.LabelsKnown = true
	for _, c := range []struct {
		name  string
		use   types.Use
		image string
		want  []string
	}{
		{"team image in shop, a Deployment", types.Use{Kind: "Deployment", Namespace: "shop", Name: "web"}, "registry.example.com/team/web:v1",
			[]string{"check-signed", "audit-provenance", "shop-signed", "signed-team", "warn-sbom"}},
		{"team image in dev: no labels, no Policy", types.Use{Kind: "Deployment", Namespace: "dev", Name: "web"}, "registry.example.com/team/web:v1",
			[]string{"check-signed"}},
		{"skipped image", types.Use{Kind: "Pod", Namespace: "dev", Name: "dbg"}, "registry.example.com/team/debug:1", nil},
		{"excluded namespace", types.Use{Kind: "DaemonSet", Namespace: "kube-system", Name: "x"}, "registry.example.com/team/agent:1", nil},
		{"bare Pod in shop: the Deployment-only rules do not apply", types.Use{Kind: "Pod", Namespace: "shop", Name: "p"}, "registry.example.com/team/web:v1",
			[]string{"check-signed", "signed-team", "warn-sbom"}},
		{"StatefulSet in shop: autogen none keeps shop-signed to Deployments", types.Use{Kind: "StatefulSet", Namespace: "shop", Name: "db"}, "docker.io/library/postgres:17",
			[]string{"warn-sbom"}},
		{"other registry", types.Use{Kind: "Deployment", Namespace: "dev", Name: "web"}, "ghcr.io/org/app:v1", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref, err := imageref.Parse(c.image)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range ps.Applying(c.use, ref) {
				got = append(got, a.Rule.Name)
				if a.Unsure {
					t.Errorf("%s unsure with every label known", a.Rule.Name)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("applying = %v, want %v", got, c.want)
			}
		})
	}
}

// TestApplyingUnsure: from files without the Namespace object, a rule
// that turns on its labels applies, unsure.
func TestApplyingUnsure(t *testing.T) {
	ps := readTestPolicies(t)
	ref, _ := imageref.Parse("registry.example.com/team/web:v1")
	got := map[string]bool{}
	for _, a := range ps.Applying(types.Use{Kind: "Deployment", Namespace: "elsewhere", Name: "web"}, ref) {
		got[a.Rule.Name] = a.Unsure
	}
	want := map[string]bool{"check-signed": false, "audit-provenance": true, "signed-team": true, "warn-sbom": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("applying = %v, want %v", got, want)
	}
}

// TestKyvernoForms: the older and newer ways a Kyverno policy says its
// images, its failure action and its requirements.
func TestKyvernoForms(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      string // String() and Alternatives, or "" for no rule
	}{
		{"validate.failureAction over the spec's", `
spec:
  validationFailureAction: Audit
  rules:
    - name: r
      validate: {failureAction: Enforce}
      verifyImages: [{imageReferences: ["*"], attestors: [{entries: [{keys: {publicKeys: k}}]}]}]`,
			"kyverno ClusterPolicy p, rule r (Enforce) [{Signature:true Predicates:[] Format:legacy}]"},
		{"the entry's failureAction first", `
spec:
  validationFailureAction: Enforce
  rules:
    - name: r
      verifyImages: [{imageReferences: ["*"], failureAction: Audit, attestors: [{entries: [{keys: {publicKeys: k}}]}]}]`,
			"kyverno ClusterPolicy p, rule r (Audit) [{Signature:true Predicates:[] Format:legacy}]"},
		{"no action: Audit, Kyverno's default", `
spec:
  rules:
    - name: r
      verifyImages: [{image: "ghcr.io/*", key: k}]`,
			"kyverno ClusterPolicy p, rule r (Audit) [{Signature:true Predicates:[] Format:legacy}]"},
		{"older predicateType", `
spec:
  rules:
    - name: r
      verifyImages: [{imageReferences: ["*"], attestations: [{predicateType: "https://cyclonedx.org/bom"}]}]`,
			"kyverno ClusterPolicy p, rule r (Audit) [{Signature:false Predicates:[https://cyclonedx.org/bom] Format:legacy}]"},
		// ImageVerification.Convert gives the deprecated key to the
		// attestations, then puts them back as written: the key requires
		// nothing, the attestation Kyverno's empty attestor.
		{"the deprecated key with attestations: no signature required", `
spec:
  rules:
    - name: r
      verifyImages: [{image: "ghcr.io/*", key: k, attestations: [{type: "https://slsa.dev/provenance/v1"}]}]`,
			"kyverno ClusterPolicy p, rule r (Audit) [{Signature:false Predicates:[https://slsa.dev/provenance/v1] Format:legacy}]"},
		{"Notary is not read", `
spec:
  rules:
    - name: r
      verifyImages: [{imageReferences: ["*"], type: Notary, attestors: [{entries: [{certificates: {cert: c}}]}]}]`, ""},
		{"no attestors, no attestations: nothing required", `
spec:
  rules:
    - name: r
      verifyImages: [{imageReferences: ["*"], mutateDigest: true}]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := "apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: p}" + c.doc
			ps := &Policies{Labels: map[string]map[string]string{}}
			if problems := ps.readObjects(yamlfile.File{Name: "p.yaml", Data: []byte(doc)}); len(problems) > 0 {
				t.Fatalf("problems: %+v", problems)
			}
			var got string
			for _, r := range ps.Rules {
				got += fmt.Sprintf("%s %+v", r.String(), presenceOnly(r.Alternatives))
			}
			if got != c.want {
				t.Errorf("rules %q, want %q", got, c.want)
			}
		})
	}
}

// TestAutogenAnnotation: the controllers a Pod rule extends to.
func TestAutogenAnnotation(t *testing.T) {
	for _, c := range []struct {
		annotation string
		kind       string
		want       bool
	}{
		{"", "Deployment", true}, {"", "CronJob", true}, {"none", "Deployment", false},
		{"Deployment,StatefulSet", "StatefulSet", true}, {"Deployment,StatefulSet", "DaemonSet", false},
	} {
		autogen := podControllers
		if c.annotation != "" {
			autogen = splitList(c.annotation)
		}
		if got := kindMatches([]string{"Pod"}, c.kind, autogen); got != c.want {
			t.Errorf("annotation %q, kind %s: %v, want %v", c.annotation, c.kind, got, c.want)
		}
	}
}
