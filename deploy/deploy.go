// Package deploy holds regcheck's Kubernetes manifests, a kustomize base (kustomization.yaml), and renders them as kubectl apply -k does.
package deploy

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Files are the manifests of this folder, the base and the examples
// beside it (prometheus/ and rescue/ are not among them).
//
//go:embed *.yaml
var Files embed.FS

// Render renders the base with kustomize (sigs.k8s.io/kustomize/api, as
// kubectl apply -k) in an in-memory filesystem: the base's files under
// /base and, when overlay is not empty, overlay as /overlay/kustomization.yaml
// (its resources name ../base), rendered instead. It returns the objects
// as multi-document YAML.
func Render(overlay string) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	names, err := fs.Glob(Files, "*.yaml")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		data, err := Files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		if err := mem.WriteFile(path.Join("/base", n), data); err != nil {
			return nil, err
		}
	}
	dir := "/base"
	if overlay != "" {
		dir = "/overlay"
		if err := mem.WriteFile("/overlay/kustomization.yaml", []byte(overlay)); err != nil {
			return nil, err
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return res.AsYaml()
}
