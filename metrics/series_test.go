package metrics

import (
	"strings"
	"testing"

	"github.com/regcheck/regcheck/types"
)

// No credential reaches a label: not from a URL, not from a reference
// written with one in front of its host. A digest is no credential.
func TestLabelsDropUserinfo(t *testing.T) {
	const digest = "sha256:3e191394b1008e11cd85b092d540ce09682f7a8d70789139c741ddfbb6a85fe4"
	for _, tc := range []struct{ name, in, image, label string }{
		{"plain", "registry.example/app:v1", "registry.example/app:v1", "registry.example/app:v1"},
		{"digest", "registry.example/app@" + digest, "registry.example/app@" + digest, "registry.example/app@" + digest},
		{"digest, no host", "app@" + digest, "app@" + digest, "app@" + digest},
		{"user and token", "user:s3cret@registry.example/app:v1", "registry.example/app:v1", "user:s3cret@registry.example/app:v1"},
		{"token and a port", "tok@registry.example:5000", "registry.example:5000", "tok@registry.example:5000"},
		{"URL", "https://user:s3cret@registry.example/v2/app", "https://registry.example/v2/app", "https://registry.example/v2/app"},
		{"URL, at sign in the path", "https://registry.example/a@b", "https://registry.example/a@b", "https://registry.example/a@b"},
		{"path with an at sign", "k8s@v2/deploy.yaml", "v2/deploy.yaml", "k8s@v2/deploy.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ImageLabel(tc.in); got != tc.image {
				t.Errorf("ImageLabel(%q) = %q, want %q", tc.in, got, tc.image)
			}
			if got := LabelValue(tc.in); got != tc.label {
				t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.label)
			}
		})
	}
}

// Two image volumes of one owner are two series of
// regcheck_use_findings, each labelled by its volume (they shared
// container="" in scan --cluster's textfile).
func TestUseSeriesNamesVolumes(t *testing.T) {
	use := func(volume string) types.Use {
		return types.Use{Source: "cluster", Namespace: "ml", Kind: "Deployment", Name: "infer", Volume: volume}
	}
	r := &types.Result{Images: []*types.Image{{Reference: "registry.example/weights:1", Verdict: types.OK,
		Uses: []types.Use{use("weights"), use("tokenizer")}}}}
	var b strings.Builder
	if err := Write(&b, ScanSeries(r)); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"weights", "tokenizer"} {
		if !strings.Contains(b.String(), `container="`+v+`"`) {
			t.Errorf("no use series for volume %s:\n%s", v, b.String())
		}
	}
}

// regcheck_container_image_available is 1 for an image that pulls, 0 for
// a broken one, and absent while unknown: a fault is no answer, and an
// alert on 0 must not fire on it. Only uses seen in the cluster count.
func TestAvailabilitySeries(t *testing.T) {
	use := func(name string) []types.Use {
		return []types.Use{{Source: "cluster", Namespace: "prod", Kind: "Deployment", Name: name, Container: "app"},
			{Source: "file", File: "k8s/" + name + ".yaml", Name: name}}
	}
	r := &types.Result{Images: []*types.Image{
		{Reference: "registry.example/ok:1", Verdict: types.OK, Uses: use("ok")},
		{Reference: "registry.example/atrisk:1", Verdict: types.AtRisk, Uses: use("atrisk")},
		{Reference: "registry.example/broken:1", Verdict: types.Broken, Uses: use("broken")},
		{Reference: "registry.example/unknown:1", Verdict: types.Unknown, Uses: use("unknown")},
	}}
	var b strings.Builder
	if err := Write(&b, WalkSeries(r)); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, string(ContainerImageAvailable)+"{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `name="`)
		name, _, _ := strings.Cut(rest, `"`)
		got[name] = line[strings.LastIndexByte(line, ' ')+1:]
	}
	want := map[string]string{"ok": "1", "atrisk": "1", "broken": "0"}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// Two entries of one reference (one per running digest) naming one use
// give one regcheck_use_findings series per code, the larger count, and
// one availability series: a scrape never fails on a duplicate.
func TestUseSeriesOnePerUse(t *testing.T) {
	use := []types.Use{{Source: "cluster", Namespace: "prod", Kind: "Deployment", Name: "web", Pod: "web-1", Container: "app"}}
	f := types.Finding{Code: "missing-blob"}
	r := &types.Result{Images: []*types.Image{
		{Reference: "registry.example/web:1", Verdict: types.Broken, Uses: use, Findings: []types.Finding{f, f}},
		{Reference: "registry.example/web:1", Verdict: types.Broken, Uses: use, Findings: []types.Finding{f}},
		{Reference: "registry.example/ok:1", Verdict: types.OK, Uses: use},
		{Reference: "registry.example/ok:1", Verdict: types.OK, Uses: use},
	}}
	var b strings.Builder
	if err := Write(&b, WalkSeries(r)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`regcheck_use_findings{code="missing-blob",container="app",image="registry.example/web:1",namespace="prod",verdict="broken",workload="web",workload_kind="Deployment"} 2`,
		`regcheck_use_findings{code="",container="app",image="registry.example/ok:1",namespace="prod",verdict="ok",workload="web",workload_kind="Deployment"} 0`,
		`regcheck_container_image_available{container="app",image="registry.example/web:1",namespace="prod",owner_kind="Deployment",owner_name="web"} 0`,
	} {
		if strings.Count(b.String(), want) != 1 {
			t.Errorf("want once: %s\ngot:\n%s", want, b.String())
		}
	}
}
