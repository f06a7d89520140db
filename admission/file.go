package admission

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/regcheck/regcheck/yamlfile"
)

// ReadFiles reads the image policies (and Namespace objects, for their
// labels) among the YAML documents of paths, from the files
// yamlfile.Walk yields: the image reader's files, under its rules, decoded
// once each by yamlfile. A policy that does not parse is a warning with
// its file:line; a file not read or not YAML is a notice (the image
// reader reports it); other objects are passed over. "-" (stdin) is not
// read here: the image reader has read it.
func ReadFiles(paths []string) (*Policies, []Problem) {
	ps := &Policies{Labels: map[string]map[string]string{}}
	var problems []Problem
	for f, err := range yamlfile.Walk(withoutStdin(paths)) {
		switch {
		case err != nil:
			problems = append(problems, Problem{Source: sourceOf(f, err), Message: "not read for policies: " + err.Error()})
		case mayHold(f.Data):
			problems = append(problems, ps.readObjects(f)...)
		}
	}
	return ps, problems
}

// withoutStdin is paths but "-".
func withoutStdin(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p != "-" {
			out = append(out, p)
		}
	}
	return out
}

// sourceOf names the file or folder err is about.
func sourceOf(f yamlfile.File, err error) string {
	var pe *fs.PathError
	if f.Name == "" && errors.As(err, &pe) {
		return pe.Path
	}
	return f.Name
}

// mayHold reports whether data may hold an object of interest: the common
// case, a file without one, is not decoded.
func mayHold(data []byte) bool {
	return bytes.Contains(data, []byte("kyverno.io")) || bytes.Contains(data, []byte("policy.sigstore.dev")) || bytes.Contains(data, []byte("Namespace"))
}

// readObjects takes in the objects of one file, keeping each one's line.
func (ps *Policies) readObjects(f yamlfile.File) []Problem {
	objs, err := f.Objects()
	if err != nil {
		// The image reader reports a file that is not YAML (or skips a
		// Helm template): a notice here, not a second input error.
		return []Problem{{Source: f.Name, Message: fmt.Sprintf("not read for policies: not YAML: %v", err)}}
	}
	var problems []Problem
	for _, o := range objs {
		if !reads(o.TypeMeta()) {
			continue
		}
		obj, err := o.Map()
		if err != nil {
			problems = append(problems, Problem{Warning: true, Source: f.Name, Line: lineOf(err, o.Line), Message: "not read: " + messageOf(err)})
			continue
		}
		if err := ps.addObject(&unstructured.Unstructured{Object: obj}, fmt.Sprintf("%s:%d", o.File, o.Line)); err != nil {
			problems = append(problems, Problem{Warning: true, Source: f.Name, Line: o.Line, Message: err.Error()})
		}
	}
	return problems
}

// lineOf is the line a *yamlfile.ParseError names, or line.
func lineOf(err error, line int) int {
	var pe *yamlfile.ParseError
	if errors.As(err, &pe) && pe.Line > 0 {
		return pe.Line
	}
	return line
}

// messageOf is a *yamlfile.ParseError's message without its file:line
// (the Problem says them), or err's text.
func messageOf(err error) string {
	var pe *yamlfile.ParseError
	if errors.As(err, &pe) {
		return pe.Msg
	}
	return err.Error()
}

// addObject is add at an input boundary: a panic while reading the object
// (a shape the unstructured helpers do not expect) is an error about it,
// never the end of the run.
func (ps *Policies) addObject(obj *unstructured.Unstructured, source string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s %s: not read: unexpected shape (%v)", obj.GetKind(), objName(obj), r)
		}
	}()
	return ps.add(obj, source)
}

// add takes in one object read from a file.
func (ps *Policies) add(obj *unstructured.Unstructured, source string) error {
	if obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" {
		ps.Labels[obj.GetName()] = obj.GetLabels()
		return nil
	}
	if isTrustRoot(obj.GetAPIVersion(), obj.GetKind()) {
		ps.addTrustRoot(obj)
		return nil
	}
	rules, err := rulesOf(obj, source)
	if err != nil {
		return fmt.Errorf("%s %s: %w", obj.GetKind(), objName(obj), err)
	}
	ps.Rules = append(ps.Rules, rules...)
	return nil
}
