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

// ivpKeyA and ivpKeyB stand for two public keys.
var ivpKeyA, ivpKeyB = testPEM("ivp key A"), testPEM("ivp key B")

// ivpDoc is an ImageValidatingPolicy named p; body is its spec's lines
// (indented by two spaces), as Kyverno's documentation writes them.
func ivpDoc(body string) string {
	return "apiVersion: policies.kyverno.io/v1\nkind: ImageValidatingPolicy\nmetadata: {name: p}\nspec:\n" + body
}

// keyAttestor is a cosign key attestor named n with key pem, the log
// ignored when ignore.
func keyAttestor(n, pem string, ignore bool) string {
	s := "    - name: " + n + "\n      cosign:\n        key:\n          data: |-\n" + indent(pem, 12) + "\n"
	if ignore {
		s += "        ctlog:\n          insecureIgnoreTlog: true\n"
	}
	return s
}

// ivpBody is a spec: Deny (or the actions given), images under
// registry.example.com/team/*, the attestors and validations given.
func ivpBody(actions, attestors string, validations ...string) string {
	s := "  validationActions: [" + actions + "]\n" +
		"  matchConstraints:\n    resourceRules:\n      - apiGroups: ['']\n        apiVersions: [v1]\n        operations: [CREATE]\n        resources: [pods]\n" +
		"  matchImageReferences:\n    - glob: 'registry.example.com/team/*'\n" +
		"  attestors:\n" + attestors + "  validations:\n"
	for _, v := range validations {
		s += "    - expression: >-\n        " + v + "\n      message: failed\n"
	}
	return s
}

const (
	sigAny = "images.containers.map(image, verifyImageSignatures(image, [attestors.a])).all(e, e > 0)"
	sigAB  = "images.containers.map(image, verifyImageSignatures(image, [attestors.a, attestors.b])).all(e, e > 0)"
	sigAll = "images.containers.map(image, verifyImageSignatures(image, [attestors.a, attestors.b])).all(e, e == 2)"
)

// readIVP reads one document as ReadFiles does.
func readIVP(t *testing.T, doc string) *Policies {
	t.Helper()
	ps := &Policies{Labels: map[string]map[string]string{}}
	if problems := ps.readObjects(yamlfile.File{Name: "p.yaml", Data: []byte(doc)}); len(problems) > 0 {
		t.Fatalf("problems: %+v\n%s", problems, doc)
	}
	return ps
}

// shownRule states what was read of an ImageValidatingPolicy: its mode,
// images, each need's sets (count, then each entry as
// path/tlog/repository, or path/unverifiable) and predicates, and what
// is not evaluated.
func shownRule(r *Rule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s images=%v", r.Kind, r.Mode(), r.Images)
	for _, n := range r.Alternatives {
		fmt.Fprintf(&b, " sig=%v pred=%v", n.Signature, n.Predicates)
		shownSets(&b, n.Sets)
		for _, a := range n.Attestations {
			fmt.Fprintf(&b, " att(%s at %s:", a.PredicateType, a.Path)
			shownSets(&b, a.Sets)
			b.WriteString(")")
		}
	}
	if len(r.ivp.unevaluated) > 0 {
		fmt.Fprintf(&b, " unevaluated=%d", len(r.ivp.unevaluated))
	}
	return b.String()
}

// shownSets states attestor sets for shownRule.
func shownSets(b *strings.Builder, sets []AttestorSet) {
	for _, s := range sets {
		fmt.Fprintf(b, " set(%d:", s.Count)
		for _, e := range s.Entries {
			switch {
			case e.Unverifiable != "":
				fmt.Fprintf(b, " %s/unverifiable", e.Path)
			default:
				fmt.Fprintf(b, " %s/tlog=%v/repo=%s", e.Path, e.Tlog, e.Repository)
			}
		}
		b.WriteString(")")
	}
}

// TestIVPRules: ImageValidatingPolicy documents in the shapes of
// Kyverno's documentation and conformance tests
// (test/conformance/chainsaw/image-validating-policies), read into rules.
func TestIVPRules(t *testing.T) {
	a, b := keyAttestor("a", ivpKeyA, true), keyAttestor("b", ivpKeyB, false)
	for _, c := range []struct {
		name, doc string
		want      string // shownRule; "" for no rule
		mentions  string // an entry's Unverifiable or an unevaluated text says this
	}{
		{"one key, any", ivpDoc(ivpBody("Deny", a, sigAny)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=)", ""},
		{"two keys, any: count 1; the log required where not ignored", ivpDoc(ivpBody("Deny", a+b, sigAB)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(1: spec.attestors[0] (a).cosign.key.data/tlog=false/repo= spec.attestors[1] (b).cosign.key.data/tlog=true/repo=)", ""},
		{"two keys, == 2: all", ivpDoc(ivpBody("Deny", a+b, sigAll)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo= spec.attestors[1] (b).cosign.key.data/tlog=true/repo=)", ""},
		{"the all(image, ... > 0) form", ivpDoc(ivpBody("Deny", a, "images.containers.all(image, verifyImageSignatures(image, [attestors.a]) > 0)")),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=)", ""},
		{"Audit", ivpDoc(ivpBody("Audit", a, sigAny)),
			"ImageValidatingPolicy Audit images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=)", ""},
		{"signatures in another repository", ivpDoc(ivpBody("Deny", strings.Replace(a, "        key:", "        source:\n          repository: registry.example.com/sigs\n        key:", 1), sigAny)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=registry.example.com/sigs)", ""},
		{"keyless, one identity: through the ClusterPolicy path", ivpDoc(ivpBody("Deny",
			"    - name: a\n      cosign:\n        keyless:\n          identities:\n            - subject: https://github.com/org/repo/.github/workflows/build.yaml@refs/heads/main\n              issuer: https://token.actions.githubusercontent.com\n", sigAny)),
			// A keyless entry, verified with the trust material given
			// (--trusted-root, the roots): the log required by default.
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.keyless/tlog=true/repo=)", ""},
		{"a KMS key", ivpDoc(ivpBody("Deny", "    - name: a\n      cosign:\n        key:\n          kms: gcpkms://projects/p/keys/k\n", sigAny)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.kms/unverifiable)", "cosign.key.kms"},
		{"notary, as the conformance tests write it", ivpDoc(ivpBody("Deny", "    - name: notary\n      notary:\n        certs:\n          value: |-\n            -----BEGIN CERTIFICATE-----\n",
			"images.containers.map(image, verifyImageSignatures(image, [attestors.notary])).all(e, e > 0)")),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] unevaluated=1", "Notary"},
		{"an intoto attestation: its predicate type, signed by the attestor", ivpDoc(ivpBody("Deny", a,
			"images.containers.map(image, verifyAttestationSignatures(image, attestations.slsa, [attestors.a])).all(e, e > 0)") +
			"  attestations:\n    - name: slsa\n      intoto:\n        type: https://slsa.dev/provenance/v0.2\n"),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=false pred=[https://slsa.dev/provenance/v0.2] att(https://slsa.dev/provenance/v0.2 at spec.validations[0] (attestations.slsa): set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=))", ""},
		{"an attestation by two attestors, > 0: count 1; its attestor's repository", ivpDoc(ivpBody("Deny",
			strings.Replace(a, "        key:", "        source:\n          repository: registry.example.com/sigs\n        key:", 1)+b,
			"images.containers.map(image, verifyAttestationSignatures(image, attestations.slsa, [attestors.a, attestors.b])).all(e, e > 0)") +
			"  attestations:\n    - name: slsa\n      intoto:\n        type: https://slsa.dev/provenance/v0.2\n"),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=false pred=[https://slsa.dev/provenance/v0.2] att(https://slsa.dev/provenance/v0.2 at spec.validations[0] (attestations.slsa): set(1: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=registry.example.com/sigs spec.attestors[1] (b).cosign.key.data/tlog=true/repo=))", ""},
		{"an attestation by a Notary attestor: not evaluated", ivpDoc(ivpBody("Deny", "    - name: notary\n      notary:\n        certs:\n          value: x\n",
			"images.containers.map(image, verifyAttestationSignatures(image, attestations.slsa, [attestors.notary])).all(e, e > 0)") +
			"  attestations:\n    - name: slsa\n      intoto:\n        type: https://slsa.dev/provenance/v0.2\n"),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] unevaluated=1", "Notary"},
		{"extractPayload: not evaluated", ivpDoc(ivpBody("Deny", a, sigAny,
			"images.containers.map(image, extractPayload(image, attestations.sbom).bomFormat == 'CycloneDX').all(e, e)")),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=) unevaluated=1", "extractPayload"},
		{"== 1 over two attestors: not evaluated", ivpDoc(ivpBody("Deny", a+b,
			"images.containers.map(image, verifyImageSignatures(image, [attestors.a, attestors.b])).all(e, e == 1)")),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] unevaluated=1", "== 1"},
		{"an attestor not declared: not evaluated", ivpDoc(ivpBody("Deny", a,
			"images.containers.map(image, verifyImageSignatures(image, [attestors.zz])).all(e, e > 0)")),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] unevaluated=1", "attestors.zz"},
		{"no validationActions: Deny", ivpDoc(strings.Replace(ivpBody("Deny", a, sigAny), "  validationActions: [Deny]\n", "", 1)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=)", ""},
		{"Warn", ivpDoc(ivpBody("Warn", a, sigAny)),
			"ImageValidatingPolicy Warn images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=)", ""},
		{"keyless, subjectExpression: not evaluated", ivpDoc(ivpBody("Deny",
			"    - name: a\n      cosign:\n        keyless:\n          identities:\n            - subjectExpression: \"'a@' + 'example.com'\"\n              issuer: https://issuer.example.com\n", sigAny)),
			"ImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.keyless.identities[0].subjectExpression/unverifiable)", "CEL"},
		{"UPDATE only: a restart's pod is not seen", ivpDoc(strings.Replace(ivpBody("Deny", a, sigAny), "[CREATE]", "[UPDATE]", 1)), "", ""},
		{"namespaced", strings.Replace(ivpDoc(ivpBody("Deny", a, sigAny)), "kind: ImageValidatingPolicy\nmetadata: {name: p}", "kind: NamespacedImageValidatingPolicy\nmetadata: {name: p, namespace: shop}", 1),
			"NamespacedImageValidatingPolicy Deny images=[registry.example.com/team/*] sig=true pred=[] set(0: spec.attestors[0] (a).cosign.key.data/tlog=false/repo=)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readIVP(t, c.doc)
			if c.want == "" {
				if len(ps.Rules) != 0 {
					t.Fatalf("rules %v, want none", ps.Rules)
				}
				return
			}
			if len(ps.Rules) != 1 {
				t.Fatalf("%d rules, want 1\n%s", len(ps.Rules), c.doc)
			}
			r := ps.Rules[0]
			if got := shownRule(r); got != c.want {
				t.Errorf("read\n%s\nwant\n%s", got, c.want)
			}
			said := fmt.Sprint(r.ivp.unevaluated)
			for _, n := range r.Alternatives {
				for _, s := range n.Sets {
					for _, e := range s.Entries {
						said += " " + e.Unverifiable
					}
				}
			}
			if c.mentions != "" && !strings.Contains(said, c.mentions) {
				t.Errorf("nothing says %q: %s", c.mentions, said)
			}
		})
	}
}

// TestIVPFindings: the verdicts an ImageValidatingPolicy gives through
// the Checker, with the signature present and the verifier's answer per
// key: Deny refused is broken, Audit refused at-risk, verified ok; an
// image no glob matches has no finding; what is not evaluated is
// unknown under Deny, never ok.
func TestIVPFindings(t *testing.T) {
	good := map[string]Outcome{ivpKeyA: Verified}
	a, b := keyAttestor("a", ivpKeyA, true), keyAttestor("b", ivpKeyB, true)
	exprMatch := strings.Replace(ivpBody("Deny", a, sigAny), "    - glob: 'registry.example.com/team/*'\n", "    - expression: \"ref.startsWith('registry.example.com/')\"\n", 1)
	for _, c := range []struct {
		name, doc, image string
		sigs             []artifacts.Artifact
		want             types.Verdict
		codes            string
	}{
		{"Deny, verified", ivpDoc(ivpBody("Deny", a, sigAny)), "registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.OK, ""},
		{"Deny, a v3 bundle is seen too", ivpDoc(ivpBody("Deny", a, sigAny)), "registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.ReferrersAPI, true)}, types.OK, ""},
		{"Deny, another key", ivpDoc(ivpBody("Deny", b, strings.Replace(sigAny, "attestors.a", "attestors.b", 1))), "registry.example.com/team/web:v1",
			[]artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.Broken, "signature-refused/critical"},
		{"Deny, any of two: one verifies", ivpDoc(ivpBody("Deny", a+b, sigAB)), "registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.OK, ""},
		{"Deny, both required: one refuses", ivpDoc(ivpBody("Deny", a+b, sigAll)), "registry.example.com/team/web:v1",
			[]artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.Broken, "signature-refused/critical"},
		{"Deny, signature gone", ivpDoc(ivpBody("Deny", a, sigAny)), "registry.example.com/team/web:v1", nil, types.Broken, "signature-missing/critical"},
		{"Audit, another key", ivpDoc(ivpBody("Audit", b, strings.Replace(sigAny, "attestors.a", "attestors.b", 1))), "registry.example.com/team/web:v1",
			[]artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.AtRisk, "signature-refused/warning"},
		{"not matched by the glob", ivpDoc(ivpBody("Deny", a, sigAny)), "registry.example.com/other/web:v1", nil, types.OK, ""},
		{"Deny, verified, a validation not evaluated: unknown", ivpDoc(ivpBody("Deny", a, sigAny, "images.containers.all(image, image.startsWith('registry'))")),
			"registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.Unknown, "signature-unverifiable/warning"},
		{"Audit, a validation not evaluated: admitted", ivpDoc(ivpBody("Audit", a, sigAny, "images.containers.all(image, image.startsWith('registry'))")),
			"registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.OK, ""},
		{"matched only by an expression: unknown", ivpDoc(exprMatch), "registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.Unknown, "signature-unverifiable/warning"},
		{"keyless without trust material: unknown", ivpDoc(ivpBody("Deny", "    - name: a\n      cosign:\n        keyless:\n          identities:\n            - subject: a@example.com\n              issuer: https://issuer.example.com\n", sigAny)),
			"registry.example.com/team/web:v1", []artifacts.Artifact{sig(artifacts.CosignTag, true)}, types.Unknown, "signature-unverifiable/warning"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readIVP(t, c.doc)
			ps.LabelsKnown = true
			chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Artifacts: c.sigs}}, Parse: scan.ParseReference, Verifier: &fakeVerifier{outcomes: good}}
			im := &types.Image{Reference: c.image, Digest: imgDigest, Verdict: types.OK,
				Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "dev", Name: "web", Written: c.image}}}
			if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, fd := range im.Findings {
				codes = append(codes, fmt.Sprintf("%s/%s", fd.Code, fd.Severity))
			}
			if got := strings.Join(codes, " "); got != c.codes || im.Verdict != c.want {
				t.Errorf("verdict %s, findings %q; want %s, %q: %+v", im.Verdict, got, c.want, c.codes, im.Findings)
			}
			if len(im.Findings) > 0 && !strings.Contains(im.Findings[0].Message, "ImageValidatingPolicy p (") {
				t.Errorf("the finding does not name the policy: %s", im.Findings[0].Message)
			}
		})
	}
}

// TestIVPApplies: a namespaced policy applies in its own namespace only;
// a glob is Kyverno's (gobwas/glob without separators: * crosses /) on
// the image as written, not a normalised name.
func TestIVPApplies(t *testing.T) {
	ns := strings.Replace(ivpDoc(ivpBody("Deny", keyAttestor("a", ivpKeyA, true), sigAny)), "kind: ImageValidatingPolicy\nmetadata: {name: p}", "kind: NamespacedImageValidatingPolicy\nmetadata: {name: p, namespace: shop}", 1)
	cluster := strings.Replace(ivpDoc(ivpBody("Deny", keyAttestor("a", ivpKeyA, true), sigAny)), "registry.example.com/team/*", "nginx*", 1)
	for _, c := range []struct {
		name, doc, written, namespace string
		want                          bool
	}{
		{"namespaced, its namespace", ns, "registry.example.com/team/web:v1", "shop", true},
		{"namespaced, another namespace", ns, "registry.example.com/team/web:v1", "dev", false},
		{"* crosses /", ns, "registry.example.com/team/a/b:v1", "shop", true},
		{"the image as written: nginx", cluster, "nginx:1.27", "dev", true},
		{"not docker.io/library/nginx", cluster, "docker.io/library/nginx:1.27", "dev", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readIVP(t, c.doc)
			ps.LabelsKnown = true
			u := types.Use{Source: "cluster", Kind: "Deployment", Namespace: c.namespace, Name: "web", Written: c.written}
			got := len(ps.Applying(u, mustParse(t, c.written))) > 0
			if got != c.want {
				t.Errorf("applies = %v, want %v", got, c.want)
			}
		})
	}
}

// TestParseCall: the documented shapes and near misses.
func TestParseCall(t *testing.T) {
	for _, c := range []struct {
		expr string
		ok   bool
		want string
	}{
		{sigAny, true, "verifyImageSignatures  [a] > 0"},
		{"images.initContainers.map(i, verifyImageSignatures(i,[attestors.a,attestors.b])).all(x, x >= 2)", true, "verifyImageSignatures  [a b] >= 2"},
		{"images.containers.map(image, verifyAttestationSignatures(image, attestations.sbom ,[attestors.notary])).all(e, e > 0)", true, "verifyAttestationSignatures sbom [notary] > 0"},
		{"images.containers.map(image, verifyImageSignatures(other, [attestors.a])).all(e, e > 0)", false, ""},
		{"images.containers.map(image, verifyImageSignatures(image, [attestors.a])).all(e, f > 0)", false, ""},
		{"images.bar.map(image, verifyImageSignatures(image, [attestors.a])).all(e, e > 0)", false, ""},
		{"images.containers.map(image, verifyImageSignatures(image, [attestors.a])).exists(e, e > 0)", false, ""},
		{"images.containers.map(image, verifyImageSignatures(image, attestations.x, [attestors.a])).all(e, e > 0)", false, ""},
	} {
		t.Run(c.expr, func(t *testing.T) {
			got, ok := parseCall(c.expr)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, c.ok, got)
			}
			if ok {
				if s := fmt.Sprintf("%s %s %v %s %d", got.fn, got.attestation, got.attestors, got.op, got.n); s != c.want {
					t.Errorf("read %q, want %q", s, c.want)
				}
			}
		})
	}
}

// mustParse parses an image reference.
func mustParse(t *testing.T, s string) imageref.Ref {
	t.Helper()
	r, err := imageref.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
