package admission

import (
	"context"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// testPEM is a PEM block standing for a public key named n.
func testPEM(n string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte(n)}))
}

// indent indents s's lines by n spaces, for a YAML block scalar.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+pad)
}

// fakeVerifier answers by key: the outcome of each key's PEM, and counts
// the verifications asked for.
type fakeVerifier struct {
	outcomes map[string]Outcome
	tlogSeen []bool
	calls    int
}

func (f *fakeVerifier) VerifyLegacy(_ context.Context, _ name.Digest, _ name.Repository, e KeyEntry) Verdict {
	f.calls++
	if e.Unverifiable != "" {
		return Verdict{Outcome: Unverifiable, Reason: e.Unverifiable}
	}
	if e.Keyless != nil {
		// As CosignVerifier with no trusted root given.
		return Verdict{Outcome: Unverifiable, Reason: supplyCA}
	}
	f.tlogSeen = append(f.tlogSeen, e.Tlog)
	o, ok := f.outcomes[e.PEM]
	if !ok {
		o = Refused
	}
	return Verdict{Outcome: o, Reason: "error verifying bundle: invalid signature when validating ASN.1 encoded signature"}
}

// kyvernoPolicy is an Enforce (or Audit) ClusterPolicy on team images
// with one attestor set of the given entries and count.
func kyvernoPolicy(action string, count int, entries ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed
spec:
  validationFailureAction: %s
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["registry.example.com/team/*"]
          attestors:
            - count: %d
              entries:
`, action, count)
	for _, e := range entries {
		b.WriteString(e)
	}
	return b.String()
}

// keyEntry is an attestor entry with inline keys and a rekor block.
func keyEntry(pems, rekor string) string {
	return "                - keys:\n                    publicKeys: |-\n" + indent(pems, 22) + "\n" + rekor
}

const ignoreTlog = "                    rekor:\n                      ignoreTlog: true\n"

// cipPolicy is a ClusterImagePolicy on team images with key authorities.
func cipPolicy(authorities ...string) string {
	return `apiVersion: policy.sigstore.dev/v1beta1
kind: ClusterImagePolicy
metadata:
  name: signed
spec:
  images:
    - glob: "registry.example.com/team/**"
  authorities:
` + strings.Join(authorities, "")
}

// keyAuthority is a key.data authority; ctlog adds a log to it.
func keyAuthority(p string, ctlog bool) string {
	s := "    - key:\n        data: |-\n" + indent(p, 10) + "\n"
	if ctlog {
		s += "      ctlog:\n        url: https://rekor.example.com\n"
	}
	return s
}

// TestVerifyFindings: a present legacy signature verified against the
// policy's keys, with the engines' combination rules: Kyverno's attestor
// count (0: all), policy-controller's any authority; refused under
// Enforce is broken, under Audit at-risk; what cannot be decided offline
// is unknown, never ok. The log requirement follows the engine.
func TestVerifyFindings(t *testing.T) {
	a, b, other := testPEM("key A"), testPEM("key B"), testPEM("key C")
	good := map[string]Outcome{a: Verified}
	for _, c := range []struct {
		name     string
		policy   string
		want     types.Verdict
		codes    string
		mentions string
		tlog     string // the Tlog of each entry verified, in order
	}{
		{"kyverno, the key verifies", kyvernoPolicy("Enforce", 0, keyEntry(a, ignoreTlog)), types.OK, "", "", "false"},
		{"kyverno, another key: broken", kyvernoPolicy("Enforce", 0, keyEntry(b, ignoreTlog)), types.Broken, "signature-refused/critical",
			"attestors[0].entries[0].keys.publicKeys for Deployment dev/web; the signature is there, and cosign refuses it: error verifying bundle", "false"},
		{"kyverno, another key under Audit: at-risk", kyvernoPolicy("Audit", 0, keyEntry(b, ignoreTlog)), types.AtRisk, "signature-refused/warning", "the pod is admitted", "false"},
		{"kyverno, no rekor block: the log is required", kyvernoPolicy("Enforce", 0, keyEntry(a, "")), types.OK, "", "", "true"},
		{"kyverno, two keys in one publicKeys, count 1", kyvernoPolicy("Enforce", 1, keyEntry(b+a, ignoreTlog)), types.OK, "", "", "false false"},
		{"kyverno, two keys in one publicKeys, all required", kyvernoPolicy("Enforce", 0, keyEntry(b+a, ignoreTlog)), types.Broken, "signature-refused/critical", "", "false false"},
		{"kyverno, a KMS key: unknown", kyvernoPolicy("Enforce", 0, "                - keys:\n                    kms: gcpkms://projects/p/keys/k\n"), types.Unknown,
			"signature-unverifiable/warning", "a KMS key (keys.kms) cannot be read offline", ""},
		{"kyverno, a k8s:// Secret not read: unknown", kyvernoPolicy("Enforce", 0, keyEntry("k8s://ns/cosign", "")), types.Unknown, "signature-unverifiable/warning", "the key is kept in Secret ns/cosign (cosign.pub), which is read only with the cluster's policies", ""},
		{"kyverno, keyless: unknown", kyvernoPolicy("Enforce", 0, "                - keyless:\n                    subject: a@example.com\n"), types.Unknown, "signature-unverifiable/warning", "keyless", ""},
		{"kyverno, count 1, a KMS key and a refused key: unknown", kyvernoPolicy("Enforce", 1, keyEntry(b, ignoreTlog), "                - keys:\n                    kms: awskms:///k\n"),
			types.Unknown, "signature-unverifiable/warning", "", "false"},
		{"policy-controller, the key verifies, no ctlog: log ignored", cipPolicy(keyAuthority(a, false)), types.OK, "", "", "false"},
		{"policy-controller, ctlog: log required", cipPolicy(keyAuthority(a, true)), types.OK, "", "", "true"},
		{"policy-controller, another key: broken", cipPolicy(keyAuthority(b, false)), types.Broken, "signature-refused/critical", "by authorities[0] (authority-0).key.data", "false"},
		{"policy-controller, any authority: one refused, one verified", cipPolicy(keyAuthority(b, false), keyAuthority(a, false)), types.OK, "", "", "false false"},
		{"policy-controller, no authority verifies: each one named", cipPolicy(keyAuthority(b, false), keyAuthority(other, false)), types.Broken, "signature-refused/critical",
			"by any of authorities[0] (authority-0).key.data, authorities[1] (authority-1).key.data for Deployment dev/web; the signature is there, and cosign refuses it: authorities[0] (authority-0).key.data: error verifying bundle", "false false"},
		{"policy-controller, two keys in key.data: the first is the key (another)", cipPolicy(keyAuthority(b+a, false)), types.Broken, "signature-refused/critical", "", "false"},
		{"policy-controller, two keys in key.data: the first is the key (it verifies)", cipPolicy(keyAuthority(a+b, false)), types.OK, "", "", "false"},
		// spec.policy is evaluated once an authority passes (ValidatePolicy):
		// not by regcheck, so unknown, never ok by silence.
		{"policy-controller, the key verifies, spec.policy: unknown", cipPolicy(keyAuthority(a, false)) + "  policy:\n    type: cue\n    data: 'before: \"2030-01-01\"'\n",
			types.Unknown, "signature-unverifiable/warning", "the policy's spec.policy (cue), which the engine evaluates next, is not evaluated", "false"},
		{"policy-controller, another key, spec.policy: broken", cipPolicy(keyAuthority(b, false)) + "  policy:\n    type: rego\n    data: 'package sigstore'\n",
			types.Broken, "signature-refused/critical", "", "false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readPolicy(t, c.policy)
			v := &fakeVerifier{outcomes: good}
			chk := &Checker{Policies: ps, Finder: &fakeFinder{set: artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true)}}},
				Parse: scan.ParseReference, Verifier: v}
			im := applyDev(t, chk)
			wantFindings(t, im, c.want, c.codes, c.mentions)
			if got := strings.Trim(fmt.Sprint(v.tlogSeen), "[]"); got != c.tlog {
				t.Errorf("entries verified with tlog %q, want %q", got, c.tlog)
			}
		})
	}
}

// shownNeeds is Needs without its attestor sets, as the tables of what
// each rule requires state them (TestVerifyFindings checks the sets).
type shownNeeds struct {
	Signature  bool
	Predicates []string
	Format     Format
}

// presenceOnly shows alts without their attestor sets.
func presenceOnly(alts []Needs) []shownNeeds {
	out := make([]shownNeeds, len(alts))
	for i, n := range alts {
		out[i] = shownNeeds{n.Signature, n.Predicates, n.Format}
	}
	return out
}
