package admission

import (
	"crypto"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	sgbundle "github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

// TestKyvernoBundleOptsRead: a ClusterPolicy attestor entry (keys,
// keyless, an attestation's, the deprecated key) carries its
// ctlog.ignoreSCT for the SigstoreBundle path, an absent ctlog as false;
// an ImageValidatingPolicy's entries carry none (it reads bundles
// through cosign).
func TestKyvernoBundleOptsRead(t *testing.T) {
	a := testPEM("key A")
	ignoreBoth := ignoreTlog + "                    ctlog:\n                      ignoreSCT: true\n"
	for _, c := range []struct {
		name, policy string
		want         *kyvernoBundleOpts
	}{
		{"keys, no ctlog", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreTlog)), &kyvernoBundleOpts{}},
		{"keys, ctlog.ignoreSCT", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n"+keyEntry(a, ignoreBoth)), &kyvernoBundleOpts{ignoreSCT: true}},
		{"keyless, ctlog.ignoreSCT", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          attestors:\n            - entries:\n                - keyless: {subject: s, issuer: i, ctlog: {ignoreSCT: true}}\n"), &kyvernoBundleOpts{ignoreSCT: true}},
		{"an attestation's keys, no ctlog", kyvernoRulePolicy("Enforce", "SigstoreBundle", attestationsBody(a, "")), &kyvernoBundleOpts{}},
		{"the deprecated key", kyvernoRulePolicy("Enforce", "SigstoreBundle", "          key: |-\n"+indent(a, 12)+"\n"), &kyvernoBundleOpts{}},
		{"an ImageValidatingPolicy's key attestor: none", ivpDoc(ivpBody("Deny", keyAttestor("a", a, true), sigAny)), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := onlyEntry(t, c.policy)
			if (e.kyvernoBundle == nil) != (c.want == nil) || c.want != nil && *e.kyvernoBundle != *c.want {
				t.Fatalf("kyvernoBundle %+v, want %+v (entry %+v)", e.kyvernoBundle, c.want, e)
			}
		})
	}
}

// onlyEntry reads policy and returns its one rule's first entry (the
// signature's, else the first attestation's).
func onlyEntry(t *testing.T, policy string) KeyEntry {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, problems := ReadFiles([]string{p})
	if len(ps.Rules) != 1 || len(ps.Rules[0].Alternatives) != 1 {
		t.Fatalf("rules %d, problems %v", len(ps.Rules), problems)
	}
	n := ps.Rules[0].Alternatives[0]
	if len(n.Sets) == 0 && len(n.Attestations) > 0 {
		n.Sets = n.Attestations[0].Sets
	}
	if len(n.Sets) == 0 || len(n.Sets[0].Entries) == 0 {
		t.Fatalf("no entry read: %+v", n)
	}
	return n.Sets[0].Entries[0]
}

// keySignedBundle signs digest's bytes with a fresh key into a sigstore
// bundle (a message signature, no log entry, no timestamp), with stamps
// RFC 3161 timestamps (not valid ones) added; and the key's verifier.
func keySignedBundle(t *testing.T, digest []byte, stamps int) (*sgbundle.Bundle, signature.Verifier) {
	t.Helper()
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: digest}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stamps > 0 {
		tv := &protobundle.TimestampVerificationData{}
		for range stamps {
			tv.Rfc3161Timestamps = append(tv.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: []byte("not a timestamp")})
		}
		pb.VerificationMaterial.TimestampVerificationData = tv
	}
	b, err := sgbundle.NewBundle(pb)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadVerifier(kp.GetPublicKey(), crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return b, sv
}

// TestKyvernoBundleTime holds a key-signed bundle that verifies to the
// time Kyverno's SigstoreBundle path requires (buildVerifyOptions): the
// log ignored and the SCT not, no timestamp carried: refused with
// sigstore-go's text and what to do; a timestamp carried and no trusted
// root: unknown; ignoreSCT, the log required, another engine: not this
// check's. The log required with ignoreSCT: no verifier, refused.
func TestKyvernoBundleTime(t *testing.T) {
	data := []byte("the image's manifest")
	sum := sha256.Sum256(data)
	policy := verify.WithArtifactDigest("sha256", sum[:])
	kyv := func(tlog, ignoreSCT bool) KeyEntry {
		return KeyEntry{Path: "attestors[0].entries[0].keys.publicKeys", Tlog: tlog, kyvernoBundle: &kyvernoBundleOpts{ignoreSCT: ignoreSCT}}
	}
	for _, c := range []struct {
		name   string
		e      KeyEntry
		stamps int
		want   Outcome
		says   []string
	}{
		{"log ignored, SCT not, no timestamp", kyv(false, false), 0, Refused,
			[]string{"threshold not met for verified signed & log entry integrated timestamps: 0 < 1", "ctlog: {ignoreSCT: true}", "carries no RFC 3161 timestamp"}},
		{"log ignored, SCT not, a timestamp, no trusted root", kyv(false, false), 1, Unverifiable, []string{"--trusted-root"}},
		{"log and SCT ignored", kyv(false, true), 0, Verified, nil},
		{"log required, SCT not: the log's check", kyv(true, false), 0, Verified, nil},
		{"an ImageValidatingPolicy entry", KeyEntry{Path: "spec.attestors[0]"}, 0, Verified, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, sv := keySignedBundle(t, data, c.stamps)
			got := CosignVerifier{}.kyvernoObserverTime(b, policy, c.e, sv)
			if got.Outcome != c.want {
				t.Fatalf("outcome %v (%s), want %v", got.Outcome, got.Reason, c.want)
			}
			for _, s := range c.says {
				if !strings.Contains(got.Reason, s) {
					t.Errorf("reason does not say %q: %s", s, got.Reason)
				}
			}
		})
	}
	for _, c := range []struct {
		name string
		e    KeyEntry
		want Outcome
	}{
		{"log required, SCT ignored: no verifier", kyv(true, true), Refused},
		{"log required, SCT not", kyv(true, false), Verified},
		{"both ignored", kyv(false, true), Verified},
		{"keyless, log required, SCT ignored", KeyEntry{Tlog: true, Keyless: &Keyless{IgnoreSCT: true}, kyvernoBundle: &kyvernoBundleOpts{ignoreSCT: true}}, Refused},
		{"another engine", KeyEntry{Tlog: true}, Verified},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := kyvernoUnbuildable(c.e)
			if got.Outcome != c.want || c.want == Refused && !strings.Contains(got.Reason, "you must specify at least one of") {
				t.Fatalf("outcome %v (%s), want %v with sigstore-go's text", got.Outcome, got.Reason, c.want)
			}
		})
	}
}
