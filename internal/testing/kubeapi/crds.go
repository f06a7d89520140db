package kubeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The image-policy engines whose CRDs PolicyCRDs installs, as module
// versions on the Go module proxy.
const (
	KyvernoModule          = "github.com/kyverno/kyverno@v1.19.1"
	PolicyControllerModule = "github.com/sigstore/policy-controller@v0.13.1"
)

// policyCRDFiles are, per module, the CRD files (relative to the module's
// root) of the policy kinds regcheck reads.
var policyCRDFiles = []struct{ module, file string }{
	{KyvernoModule, "config/crds/kyverno/kyverno.io_clusterpolicies.yaml"},
	{KyvernoModule, "config/crds/kyverno/kyverno.io_policies.yaml"},
	{KyvernoModule, "config/crds/policies.kyverno.io/policies.kyverno.io_imagevalidatingpolicies.yaml"},
	{KyvernoModule, "config/crds/policies.kyverno.io/policies.kyverno.io_namespacedimagevalidatingpolicies.yaml"},
	{PolicyControllerModule, "config/300-clusterimagepolicy.yaml"},
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ModuleDir returns the module cache folder of module@version, downloading
// it through the Go module proxy (go mod download) when it is not there.
// It runs outside any module, so that no go.mod is consulted or changed.
func ModuleDir(ctx context.Context, moduleAtVersion string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", moduleAtVersion)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", moduleAtVersion, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s", moduleAtVersion, err, stderr.String())
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no Dir in %q", moduleAtVersion, out)
	}
	return info.Dir, nil
}

// PolicyCRDs returns the paths of Kyverno's ClusterPolicy, Policy,
// ImageValidatingPolicy and NamespacedImageValidatingPolicy CRDs and
// policy-controller's ClusterImagePolicy CRD, from their modules.
func PolicyCRDs(ctx context.Context) ([]string, error) {
	dirs := map[string]string{}
	var out []string
	for _, f := range policyCRDFiles {
		dir, ok := dirs[f.module]
		if !ok {
			var err error
			if dir, err = ModuleDir(ctx, f.module); err != nil {
				return nil, err
			}
			dirs[f.module] = dir
		}
		p := filepath.Join(dir, f.file)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s has no CRD %s: %w", f.module, f.file, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// InstallPolicyCRDs applies the image-policy CRDs of PolicyCRDs to the
// cluster and waits until each is Established. No controller runs: the
// policies are stored and listed, never enforced, and policy-controller's
// conversion webhook is not there (create and list ClusterImagePolicies
// as v1alpha1, the stored version).
func (c *Cluster) InstallPolicyCRDs(ctx context.Context) error {
	paths, err := PolicyCRDs(ctx)
	if err != nil {
		return err
	}
	return ApplyCRDs(ctx, c.Config, paths...)
}

// ApplyCRDs creates the CustomResourceDefinitions in the YAML files
// (an existing one is left as it is) and waits until each is Established.
func ApplyCRDs(ctx context.Context, cfg *rest.Config, paths ...string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	var names []string
	for _, p := range paths {
		crds, err := readCRDs(p)
		if err != nil {
			return err
		}
		for _, crd := range crds {
			_, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s from %s: %w", crd.GetName(), p, err)
			}
			names = append(names, crd.GetName())
		}
	}
	for _, n := range names {
		if err := waitEstablished(ctx, dyn, n); err != nil {
			return err
		}
	}
	return nil
}

// readCRDs reads the CustomResourceDefinitions of one YAML file.
func readCRDs(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 1<<20)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		if obj != nil && u.GetKind() == "CustomResourceDefinition" {
			out = append(out, u)
		}
	}
}

// waitEstablished polls a CRD until its Established condition is True,
// for at most 30 seconds.
func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil && established(crd) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not Established: %w (last error: %v)", name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// established reports whether the CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, raw := range conds {
		c, _ := raw.(map[string]any)
		if c["type"] == "Established" && c["status"] == "True" {
			return true
		}
	}
	return false
}
