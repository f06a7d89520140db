package yamlfile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Image is one image reference found in a file.
type Image struct {
	Ref          string // the scalar's value as written (unquoted)
	File         string
	Line, Column int // 1-based position of the scalar; for an alias, of the alias
	// Kind is the workload kind (Pod, Deployment, StatefulSet, DaemonSet,
	// ReplicaSet, Job, CronJob, PodTemplate, ReplicationController; any
	// other kind with a pod spec or a known image field: Rollout, Task,
	// Cluster; HelmRelease and Application for their Helm values),
	// "Compose" for a docker-compose service, "Kustomization" for an
	// images: entry of a kustomization.
	Kind            string
	Namespace, Name string // metadata of the object (namespace may be empty); compose: the project name
	// Container is the container name; for an image volume, the volume's
	// name; compose: the service name; kustomize: the name: of the images
	// entry.
	Container string
	// Field is "containers", "initContainers", "ephemeralContainers",
	// "imageVolumes" (FieldImageVolumes: a pod spec's
	// volumes[].image.reference), "image" (compose) or "images"
	// (kustomize); for a known field of a custom kind, the key before
	// its image: (steps, sidecars, stepTemplate, container, script) or
	// the key itself (imageName, package, image); for a GitOps object,
	// where its values are (spec.values, spec.source.helm.valuesObject,
	// spec.sources[1].kustomize.images), Container then being the values
	// path (redis.image).
	Field      string
	PullPolicy string // imagePullPolicy (image volume: pullPolicy; compose: pull_policy) when set
	// Alias is set when the value is reached through a YAML alias or sits
	// under an anchor that an alias refers to: editing it would change
	// more than one place, so tools must report it and never edit it.
	Alias bool
}

// Site is an Image together with the YAML nodes it was read from, for tools
// that edit files in place (see package pin). The nodes belong to a tree
// parsed from the same bytes; their Line and Column are positions in them.
type Site struct {
	Image
	// Value is the image scalar (an image volume's reference:); for a
	// kustomization entry, the value of its name: key.
	Value *yaml.Node
	// PullPolicy is the container's imagePullPolicy scalar (an image
	// volume's pullPolicy), or nil (also when it is reached through an
	// alias and so must not be edited).
	PullPolicy *yaml.Node
	// Entry is the images: entry mapping of a kustomization, or nil.
	Entry *yaml.Node
	// Part is "" when Value holds the whole reference (after Prefix),
	// PartTag or PartDigest when it holds only that part of it (Helm
	// values image.tag); Written says what Value must read for a
	// reference.
	Part string
	// Prefix is what Value holds before the reference (an Argo CD
	// kustomize.images entry's "name=").
	Prefix string
	// Fixed, when not empty, says why tools must not edit Value (a
	// reference set inside a string written in a style not edited).
	Fixed string
	argo  bool // read from an argoproj.io object
}

// Parse finds the images in one file's bytes; name is used in errors and
// Image.File. A file that is not YAML yields a *ParseError naming
// file:line, a Helm template a *SkipError; either way no images.
func Parse(name string, data []byte) ([]Image, error) {
	sites, err := Sites(name, data)
	if err != nil {
		return nil, err
	}
	imgs := make([]Image, len(sites))
	for i, s := range sites {
		imgs[i] = s.Image
	}
	return imgs, nil
}

// Sites is Parse with the YAML nodes of every image, sorted by position.
func Sites(name string, data []byte) ([]Site, error) {
	sites, _, _, err := read(name, data)
	return sites, err
}

// Read is Parse with what was read in part on purpose: the images, and
// either the file's error (and no images) or a *Notice for each thing
// left out (a GitOps object's chart not rendered, its values from the
// cluster not read).
func Read(name string, data []byte) ([]Image, []error) {
	imgs, notes, _ := ReadCharts(name, data)
	return imgs, notes
}

// ReadCharts is Read with the charts the file's GitOps objects deploy.
func ReadCharts(name string, data []byte) ([]Image, []error, []ChartSource) {
	sites, notes, charts, err := read(name, data)
	if err != nil {
		return nil, []error{err}, nil
	}
	imgs := make([]Image, len(sites))
	for i, s := range sites {
		imgs[i] = s.Image
	}
	return imgs, notes, charts
}

// read is Sites with the notices and the charts.
func read(name string, data []byte) (sites []Site, notes []error, charts []ChartSource, err error) {
	defer func() {
		// The YAML library is not supposed to panic; if it does, the file
		// is reported as unparseable rather than taking the caller down.
		if r := recover(); r != nil {
			sites, notes, charts, err = nil, nil, nil, &ParseError{File: name, Msg: fmt.Sprintf("YAML parser panic: %v", r)}
		}
	}()
	template := bytes.Contains(data, []byte("{{"))
	docs, err := decode(data)
	if err != nil {
		if notObjects(data) {
			return nil, nil, nil, &SkipError{File: name, Reason: "JSON that holds no Kubernetes object"}
		}
		if template {
			return nil, nil, nil, &SkipError{File: name, Reason: "Helm template"}
		}
		return nil, nil, nil, parseErrorAt(name, data, err)
	}
	if strings.EqualFold(filepath.Ext(name), ".json") && notObjects(data) {
		// JSON the YAML parser reads too (most Grafana dashboards): the
		// same notice as for the JSON it refuses.
		return nil, nil, nil, &SkipError{File: name, Reason: "JSON that holds no Kubernetes object"}
	}
	if template && hasComplexKey(docs) {
		return nil, nil, nil, &SkipError{File: name, Reason: "Helm template"}
	}
	w := &walker{file: name, base: filepath.Base(name), referenced: map[*yaml.Node]bool{}, data: data}
	for _, d := range docs {
		collectAliases(d, w.referenced, 0)
	}
	for _, d := range docs {
		if d.Kind == yaml.DocumentNode && len(d.Content) == 1 {
			w.document(d.Content[0])
		}
		if w.budget > maxVisits {
			return nil, nil, nil, &ParseError{File: name, Msg: "too many aliases"}
		}
	}
	if template {
		for _, s := range w.sites {
			// Argo Workflows write their own {{inputs.parameters.x}}:
			// an argoproj.io object is no Helm template (see params.go).
			if strings.Contains(s.Ref, "{{") && !s.argo {
				return nil, nil, nil, &SkipError{File: name, Reason: "Helm template"}
			}
		}
	}
	slices.SortStableFunc(w.sites, func(a, b Site) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return w.sites, w.notes, w.charts, nil
}

// Documents parses every YAML document of data, as Sites reads them:
// tools that rewrite a file's nodes start from these.
func Documents(data []byte) ([]*yaml.Node, error) { return decode(data) }

func decode(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &n)
	}
}

// Find reads the files Walk yields (recursively, skipping folders whose
// name starts with a dot; *.yaml, *.yml and *.json files; a file named
// explicitly is read whatever its name; "-" is standard input) and returns
// every image plus one error per file that could not be read or parsed. A
// bad file never stops the walk. Files are read with ReadFile: what is not
// a regular file is skipped (a *SkipError), as is a Helm template.
func Find(paths []string) ([]Image, []error) {
	var (
		imgs []Image
		errs []error
	)
	for f, err := range Walk(paths) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found, problems := Read(f.Name, f.Data)
		errs = append(errs, problems...)
		imgs = append(imgs, found...)
	}
	return imgs, errs
}

// Files lists the manifest files under roots, in order: a root that is a
// file is listed whatever its name; a folder is walked recursively in
// lexical order, skipping folders whose name starts with a dot, for
// *.yaml, *.yml and *.json files. exclude, when not nil, is asked about
// each path relative to its root (for a root that is a file, its base
// name): an excluded folder is not walked, an excluded file not listed; a
// root folder itself is always walked. Problems reading the tree are
// returned as *fs.PathError, one per path, and never stop the walk.
func Files(roots []string, exclude func(rel string) bool) ([]string, []error) {
	var (
		out  []string
		errs []error
	)
	skip := func(rel string) bool { return exclude != nil && exclude(rel) }
	for _, root := range roots {
		fi, err := os.Stat(root)
		if err != nil {
			errs = append(errs, pathError(root, err))
			continue
		}
		if !fi.IsDir() {
			if !skip(filepath.Base(root)) {
				out = append(out, root)
			}
			continue
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, pathError(p, err))
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				if p != root && (strings.HasPrefix(d.Name(), ".") || skip(rel)) {
					return filepath.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
			default:
				return nil
			}
			if !skip(rel) {
				out = append(out, p)
			}
			return nil
		})
	}
	return out, errs
}

// pathError makes sure err names path.
func pathError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: "walk", Path: path, Err: err}
}
