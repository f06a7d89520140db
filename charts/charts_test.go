package charts

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/regcheck/regcheck/internal/cli"
)

// digest is an image digest for the renders (any well-formed one).
const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// pinned are the values helm install --set image.digest=… gives.
func pinned() map[string]any {
	return map[string]any{"image": map[string]any{"digest": digest}}
}

// object is one rendered object: decoded by client-go's scheme (strict)
// when the scheme knows its kind, else unstructured.
type object struct {
	u   *unstructured.Unstructured
	obj runtime.Object // nil for custom resources
}

// objects decodes every object of a render, in Helm's install order.
func objects(t *testing.T, r Rendered) []object {
	t.Helper()
	m, err := r.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(m)))
	var out []object
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%v:\n%s", err, doc)
		}
		if len(u.Object) == 0 {
			continue
		}
		o := object{u: u}
		if scheme.Scheme.Recognizes(u.GroupVersionKind()) {
			if o.obj, _, err = dec.Decode(doc, nil, nil); err != nil {
				t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
		out = append(out, o)
	}
}

// render renders the chart as the release regcheck in namespace regcheck.
func render(t *testing.T, values map[string]any) Rendered {
	t.Helper()
	r, err := Render(t.Context(), DeployRelease, values)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLint: Helm's own lint (helm lint's rules: Chart.yaml, values and
// their schema, every template rendered and parsed, the objects' API
// versions) finds nothing above INFO, with the defaults and every part on.
func TestLint(t *testing.T) {
	for name, values := range map[string]map[string]any{"defaults": pinned(), "every part": allOn()} {
		t.Run(name, func(t *testing.T) {
			l := lint.RunAll(Name, values, "regcheck")
			for _, m := range l.Messages {
				t.Log(m.Error())
			}
			if l.HighestSeverity > support.InfoSev {
				t.Errorf("helm lint: highest severity %d, want INFO at most", l.HighestSeverity)
			}
		})
	}
}

// TestSchema: values.schema.json refuses a bad value before anything
// renders, naming the key (and the chart a name Kubernetes would refuse);
// a good one passes.
func TestSchema(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values string
		key    string // in the error (the schema's, but for the name's length); "" for valid values
	}{
		{"a tag as a digest", "image: {digest: latest}", "digest"},
		{"a tag in the repository", "image: {repository: 'registry.example.com/regcheck:v1', digest: " + digest + "}", "repository"},
		{"no replica", "watcher: {replicas: 0}", "replicas"},
		{"a misspelt key", "watcher: {replica: 2}", "replica"},
		{"a Pushgateway without its scheme", "pushgateway: pushgateway.monitoring:9091", "pushgateway"},
		{"a pool named in capitals", "cronjob: {nodePools: [{name: K3s, registriesConfig: {path: /etc/rancher/k3s/registries.yaml}}]}", "name"},
		{"a pool without its configuration", "cronjob: {nodePools: [{name: k3s}]}", "registriesConfig"},
		{"a relative hostPath", "credentialProvider: {enabled: true, config: etc/config.yaml}", "config"},
		{"GOMEMLIMIT without a unit", "watcher: {gomemlimit: 400M}", "gomemlimit"},
		{"a CronJob name too long", "image: {digest: " + digest + "}\nfullnameOverride: regcheck-with-a-very-long-name-prefix\ncronjob: {nodePools: [{name: production-pool, registriesConfig: {path: /etc/rancher/k3s/registries.yaml}}]}", "52"},
		{"valid", "image: {digest: " + digest + "}\ncronjob: {nodePools: [{name: k3s, registriesConfig: {path: /etc/rancher/k3s/registries.yaml}}]}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := loader.LoadValues(strings.NewReader(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Render(t.Context(), DeployRelease, v)
			switch {
			case tc.key == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.key != "" && err == nil:
				t.Errorf("accepted %s", tc.values)
			case tc.key != "" && !strings.Contains(err.Error(), tc.key):
				t.Errorf("error %q does not name %s", err, tc.key)
			case tc.key != "" && tc.key != "52" && !strings.Contains(err.Error(), "schema"):
				t.Errorf("error %q is not the schema's", err)
			}
		})
	}
}

// TestImageRequired: with no digest and no tag the chart refuses to
// render, saying what to set; with a digest the image is pinned.
func TestImageRequired(t *testing.T) {
	_, err := Render(t.Context(), DeployRelease, nil)
	if err == nil || !strings.Contains(err.Error(), "image.digest") {
		t.Fatalf("rendered without an image digest or tag: %v", err)
	}
	for _, o := range objects(t, render(t, pinned())) {
		for _, c := range containers(o) {
			if want := "registry.example.com/tools/regcheck@" + digest; c.Image != want {
				t.Errorf("%s %s runs %s, want %s", o.u.GetKind(), c.Name, c.Image, want)
			}
		}
	}
}

// containers are the containers (init ones first) of a workload object.
func containers(o object) []corev1.Container {
	var spec *corev1.PodSpec
	switch v := o.obj.(type) {
	case *batchv1.CronJob:
		spec = &v.Spec.JobTemplate.Spec.Template.Spec
	case *appsv1.Deployment:
		spec = &v.Spec.Template.Spec
	default:
		return nil
	}
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

// TestFlagsExist: every container's arguments, with the defaults and with
// every part on, parse as regcheck's own command line: the subcommand
// exists, and so does each flag, with a value of its type.
func TestFlagsExist(t *testing.T) {
	for name, values := range map[string]map[string]any{"defaults": pinned(), "every part": allOn()} {
		t.Run(name, func(t *testing.T) {
			n := 0
			for _, o := range objects(t, render(t, values)) {
				for _, c := range containers(o) {
					n++
					root := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
					cmd, rest, err := root.Find(c.Args)
					if err != nil || cmd == root {
						t.Errorf("%s %s: no subcommand %q: %v", o.u.GetName(), c.Name, c.Args, err)
						continue
					}
					if err := cmd.ParseFlags(rest); err != nil {
						t.Errorf("%s %s: regcheck %s: %v", o.u.GetName(), c.Name, strings.Join(c.Args, " "), err)
					}
					if err := cmd.ValidateFlagGroups(); err != nil {
						t.Errorf("%s %s: regcheck %s: %v", o.u.GetName(), c.Name, strings.Join(c.Args, " "), err)
					}
					if args := cmd.Flags().Args(); len(args) != 0 {
						t.Errorf("%s %s: positional arguments %q", o.u.GetName(), c.Name, args)
					}
				}
			}
			if n == 0 {
				t.Fatal("no container rendered")
			}
		})
	}
}

// TestDeployCurrent: deploy/'s generated files are what make deploy
// writes now, and deploy/ holds no generated file make deploy no longer
// writes.
func TestDeployCurrent(t *testing.T) {
	files, err := Deploy(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "deploy")
	for _, p := range DeployPaths() {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Errorf("%v: run make deploy", err)
			continue
		}
		if !bytes.Equal(got, files[p]) {
			t.Errorf("deploy/%s is not the chart's render: run make deploy", p)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if bytes.HasPrefix(data, []byte("# Generated by `make deploy`")) && !slices.Contains(DeployPaths(), filepath.ToSlash(rel)) {
			t.Errorf("deploy/%s was generated by make deploy, which no longer writes it: delete it", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
