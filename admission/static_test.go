package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

// TestStaticAuthority: a policy-controller authority with static.action
// fail admits nothing (pkg/webhook/validator.go, ValidatePolicy: the
// authority's error is "disallowed by static policy: MESSAGE", and the
// policy passes only when some authority has no error); pass admits
// everything; either beside a key authority is one alternative of several.
func TestStaticAuthority(t *testing.T) {
	signed := artifacts.Set{Artifacts: []artifacts.Artifact{sig(artifacts.CosignTag, true)}}
	for _, c := range []struct {
		name, mode, authorities string
		set                     artifacts.Set
		want                    types.Verdict
		codes, mentions         string
	}{
		{name: "static fail: refused whatever the image carries", authorities: "[{static: {action: fail, message: no images from here}}]", set: signed,
			want: types.Broken, codes: "signature-refused/critical", mentions: `authorities[0] (authority-0), refuses sha256:111111111111 for Deployment prod/web whatever it carries: "disallowed by static policy: no images from here": the pod will be refused`},
		{name: "static fail under warn: admitted, reported", mode: "warn", authorities: "[{name: deny, static: {action: fail}}]",
			want: types.AtRisk, codes: "signature-refused/warning", mentions: `authorities[0] (deny)`},
		{name: "static pass: nothing required", authorities: "[{static: {action: pass}}]", want: types.OK},
		{name: "static fail beside a key authority met by presence", authorities: "[{static: {action: fail}}, {key: {data: k}}]", set: signed, want: types.OK},
		{name: "static fail beside a key authority with no signature: missing", authorities: "[{key: {data: k}}, {static: {action: fail}}]",
			want: types.Broken, codes: "signature-missing/critical", mentions: "requires a signature"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &Policies{Labels: map[string]map[string]string{"prod": {includeLabel: "true"}}, LabelsKnown: true}
			doc := "apiVersion: policy.sigstore.dev/v1beta1\nkind: ClusterImagePolicy\nmetadata: {name: cip}\nspec:\n  images: [{glob: 'registry.example.com/**'}]\n  authorities: " + c.authorities + "\n"
			if c.mode != "" {
				doc += "  mode: " + c.mode + "\n"
			}
			if problems := ps.readObjects(yamlfile.File{Name: "cip.yaml", Data: []byte(doc)}); len(problems) > 0 {
				t.Fatalf("problems %+v", problems)
			}
			chk := &Checker{Policies: ps, Finder: &fakeFinder{set: c.set}, Parse: scan.ParseReference}
			im := &types.Image{Reference: "registry.example.com/team/web:v1", Digest: imgDigest, Verdict: types.OK,
				Uses: []types.Use{{Source: "cluster", Kind: "Deployment", Namespace: "prod", Name: "web"}}}
			if err := chk.Apply(context.Background(), &types.Result{Images: []*types.Image{im}}); err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, fd := range im.Findings {
				codes = append(codes, fmt.Sprintf("%s/%s", fd.Code, fd.Severity))
			}
			if got := strings.Join(codes, " "); got != c.codes || im.Verdict != c.want {
				t.Errorf("findings %q verdict %s, want %q %s: %+v", got, im.Verdict, c.codes, c.want, im.Findings)
			}
			if c.mentions != "" && !strings.Contains(fmt.Sprint(im.Findings), c.mentions) {
				t.Errorf("no finding says %q: %+v", c.mentions, im.Findings)
			}
		})
	}
}
