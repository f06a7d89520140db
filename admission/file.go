package admission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxFile bounds a file read for policies, as the image reader does.
const maxFile = 16 << 20

// ReadFiles reads the image policies (and Namespace objects, for their
// labels) among the YAML documents of paths: files, and folders read
// recursively (*.yaml, *.yml, *.json; dot folders skipped; regular
// files only). A policy that does not parse is a warning with its
// file:line; a file that is not YAML is a notice (the image reader
// reports it); other objects are passed over. "-" (stdin) is not read
// here: the image reader has read it.
func ReadFiles(paths []string) (*Policies, []Problem) {
	ps := &Policies{Labels: map[string]map[string]string{}}
	var problems []Problem
	for _, root := range paths {
		if root == "-" {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && p != root && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			case d.IsDir() || p != root && !policyFile(p) || !regular(p):
				return nil // a pipe, a device, a symlink to nothing: the image reader says so
			}
			problems = append(problems, ps.readFile(p)...)
			return nil
		})
		if err != nil {
			problems = append(problems, Problem{Warning: true, Source: root, Message: err.Error()})
		}
	}
	return ps, problems
}

// regular reports whether p is, or links to, a regular file.
func regular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// policyFile reports whether a file found in a folder may hold policies.
func policyFile(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readFile reads one file's documents.
func (ps *Policies) readFile(p string) []Problem {
	f, err := os.Open(p)
	if err != nil {
		return []Problem{{Warning: true, Source: p, Message: err.Error()}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	switch {
	case err != nil:
		return []Problem{{Warning: true, Source: p, Message: err.Error()}}
	case len(data) > maxFile:
		return []Problem{{Warning: true, Source: p, Message: "larger than 16 MiB: not read for policies"}}
	case !bytes.Contains(data, []byte("kyverno.io")) && !bytes.Contains(data, []byte("policy.sigstore.dev")) && !bytes.Contains(data, []byte("Namespace")):
		return nil // the common case: no object of interest, no second parse
	}
	return ps.readDocuments(p, data)
}

// readDocuments decodes each YAML document of data, keeping its line.
func (ps *Policies) readDocuments(p string, data []byte) []Problem {
	var problems []Problem
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return problems
		}
		if err != nil {
			// The image reader reports a file that is not YAML (or skips a
			// Helm template): a notice here, not a second input error.
			return append(problems, Problem{Source: p, Message: fmt.Sprintf("not read for policies: not YAML: %v", err)})
		}
		var obj map[string]any
		if node.Decode(&obj) != nil || obj == nil {
			continue
		}
		line := node.Line
		if len(node.Content) > 0 {
			line = node.Content[0].Line
		}
		if err := ps.add(&unstructured.Unstructured{Object: jsonish(obj).(map[string]any)}, fmt.Sprintf("%s:%d", p, line)); err != nil {
			problems = append(problems, Problem{Warning: true, Source: p, Line: line, Message: err.Error()})
		}
	}
}

// add takes in one object read from a file.
func (ps *Policies) add(obj *unstructured.Unstructured, source string) error {
	if obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" {
		ps.Labels[obj.GetName()] = obj.GetLabels()
		return nil
	}
	rules, err := rulesOf(obj, source)
	if err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), objName(obj), err)
	}
	ps.Rules = append(ps.Rules, rules...)
	return nil
}

// jsonish turns what yaml.v3 decodes into the types unstructured reads
// (map[string]any, []any, int64, float64, string, bool).
func jsonish(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonish(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = jsonish(e)
		}
		return x
	case int:
		return int64(x)
	}
	return v
}
