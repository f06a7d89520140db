package cosign_test

import (
	"context"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/bins"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
)

// TestSignAttestVerify signs, attests and verifies on the real
// distribution v3.1.2, in both formats. Verifying expecting the legacy
// format does not see bundles; verifying expecting bundles falls back to
// the legacy tags when the image has no bundle (cosign v3's verify does).
func TestSignAttestVerify(t *testing.T) {
	bin, err := registry.Binary(registry.V3)
	bins.Require(t, err, "registry")
	ctx := context.Background()
	c, err := cosign.New(ctx, t.TempDir())
	if err != nil {
		bins.Require(t, err, "cosign") // the binary is not built
	}
	reg, err := registry.Start(ctx, bin, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	pred := []byte(`{"buildType":"https://example.com/build","builder":{"id":"https://example.com/b"}}`)
	for _, tt := range []struct {
		name   string
		format cosign.Format
		other  cosign.Format // expecting it, verify passes too
		passes bool
	}{{"bundle", cosign.Bundle, cosign.Legacy, false}, {"legacy", cosign.Legacy, cosign.Bundle, true}} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := fixture.PushSingle(ctx, reg.Host()+"/"+tt.name+":v1", tt.name)
			if err != nil {
				t.Fatal(err)
			}
			ref := reg.Host() + "/" + tt.name + "@" + d
			if ok, out, err := c.Verify(ctx, ref, tt.format); ok || err != nil {
				t.Fatalf("verify before signing: passed %v, err %v\n%s", ok, err, out)
			}
			if err := c.Sign(ctx, ref, tt.format, false); err != nil {
				t.Fatal(err)
			}
			if err := c.Attest(ctx, ref, "slsaprovenance", pred, tt.format); err != nil {
				t.Fatal(err)
			}
			for what, verify := range map[string]func(cosign.Format) (bool, string, error){
				"verify":             func(f cosign.Format) (bool, string, error) { return c.Verify(ctx, ref, f) },
				"verify-attestation": func(f cosign.Format) (bool, string, error) { return c.VerifyAttestation(ctx, ref, "slsaprovenance", f) },
			} {
				if ok, out, err := verify(tt.format); !ok || err != nil {
					t.Errorf("%s: passed %v, err %v\n%s", what, ok, err, out)
				}
				if ok, out, _ := verify(tt.other); ok != tt.passes {
					t.Errorf("%s expecting the other format: passed %v, want %v\n%s", what, ok, tt.passes, out)
				}
			}
		})
	}
}
