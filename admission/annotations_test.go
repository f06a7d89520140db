package admission

import (
	"strings"
	"testing"

	"github.com/sigstore/cosign/v3/pkg/oci"
	"github.com/sigstore/cosign/v3/pkg/oci/static"
)

// TestAnnotationsRead: the annotations each engine requires, read where
// the engine reads them: a Kyverno attestor entry's, else its
// verifyImages entry's (deprecated), checked in the payload; an
// ImageValidatingPolicy attestor's cosign.annotations, checked in the
// signature's layer annotations.
func TestAnnotationsRead(t *testing.T) {
	a := testPEM("key A")
	entryAnn := "                  annotations:\n                    env: prod\n"
	ruleAnn := "          annotations:\n            env: dev\n            team: web\n"
	for _, c := range []struct {
		name    string
		doc     string
		want    string // annotationsText of the first entry; "-" for none
		inLayer bool
	}{
		{"kyverno entry", kyvernoPolicy("Enforce", 0, keyEntry(a, ignoreTlog)+entryAnn), "env=prod", false},
		{"kyverno none", kyvernoPolicy("Enforce", 0, keyEntry(a, ignoreTlog)), "-", false},
		{"kyverno verifyImages annotations, the entry names none",
			strings.Replace(kyvernoPolicy("Enforce", 0, keyEntry(a, ignoreTlog)), "          attestors:\n", ruleAnn+"          attestors:\n", 1), "env=dev,team=web", false},
		{"kyverno entry's annotations win over verifyImages'",
			strings.Replace(kyvernoPolicy("Enforce", 0, keyEntry(a, ignoreTlog)+entryAnn), "          attestors:\n", ruleAnn+"          attestors:\n", 1), "env=prod", false},
		{"ImageValidatingPolicy cosign.annotations",
			ivpDoc(ivpBody("Deny", keyAttestor("a", a, true)+"        annotations:\n          env: prod\n", sigAny)), "env=prod", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := readIVP(t, c.doc)
			if len(ps.Rules) != 1 || len(ps.Rules[0].Alternatives) != 1 || len(ps.Rules[0].Alternatives[0].Sets) == 0 {
				t.Fatalf("rules read: %+v", ps.Rules)
			}
			e := ps.Rules[0].Alternatives[0].Sets[0].Entries[0]
			got := annotationsText(e.Annotations)
			if e.Annotations == nil {
				got = "-"
			}
			if got != c.want || e.annotationsInLayer != c.inLayer {
				t.Errorf("annotations %q in layer %v, want %q, %v", got, e.annotationsInLayer, c.want, c.inLayer)
			}
			if payload := claimAnnotations(e) != nil; payload != (c.want != "-" && !c.inLayer) {
				t.Errorf("handed to cosign as CheckOpts.Annotations: %v", payload)
			}
		})
	}
}

// TestLayerAnnotations: an ImageValidatingPolicy's annotations are met by
// a signature whose OCI layer annotations hold them (Kyverno's
// checkSignatureAnnotations), never by the payload's optional map alone,
// where cosign sign -a writes them.
func TestLayerAnnotations(t *testing.T) {
	payload := []byte(`{"critical":{"identity":{"docker-reference":"r"},"image":{"docker-manifest-digest":"sha256:1"},"type":"cosign container image signature"},"optional":{"env":"prod"}}`)
	sig := func(t *testing.T, layer map[string]string) oci.Signature {
		s, err := static.NewSignature(payload, "c2ln", static.WithAnnotations(layer))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e := KeyEntry{Path: "spec.attestors[0] (a).cosign.key.data", Annotations: map[string]string{"env": "prod"}, annotationsInLayer: true}
	for _, c := range []struct {
		name  string
		found []oci.Signature
		e     KeyEntry
		want  Outcome
		says  string
	}{
		{"in the layer", []oci.Signature{sig(t, map[string]string{"env": "prod"})}, e, Verified, ""},
		{"in the payload only", []oci.Signature{sig(t, nil)}, e, Refused, "annotations mismatch:  does not match expected value prod for key env"},
		{"one of two signatures", []oci.Signature{sig(t, map[string]string{"env": "dev"}), sig(t, map[string]string{"env": "prod"})}, e, Verified, ""},
		{"another value", []oci.Signature{sig(t, map[string]string{"env": "dev"})}, e, Refused, "dev does not match expected value prod"},
		{"a ClusterPolicy entry: not looked for in the layer", []oci.Signature{sig(t, nil)}, KeyEntry{Annotations: e.Annotations}, Verified, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := layerAnnotations(c.found, c.e)
			if v.Outcome != c.want || !strings.Contains(v.Reason, c.says) {
				t.Errorf("%v %q, want %v saying %q", v.Outcome, v.Reason, c.want, c.says)
			}
		})
	}
}
