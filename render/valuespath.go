package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ValuesPath is the path of a key in a Helm values file, as render writes
// it in Key and Edit and pin reads it back: mapping keys joined by dots
// (image.tag), a list index in brackets (images[0].tag), and a key that is
// empty or holds a dot, a bracket or a double quote in Go's quotes
// (podAnnotations."example.com/image"). "" is the top of the file.
type ValuesPath string

// Step is one step of a ValuesPath: into a mapping by Key, or, when
// IsIndex, into a list by Index.
type Step struct {
	Key     string
	Index   int
	IsIndex bool
}

// Key is p followed by the mapping key k.
func (p ValuesPath) Key(k string) ValuesPath {
	if k == "" || strings.ContainsAny(k, `.[]"`) {
		k = strconv.Quote(k)
	}
	if p == "" {
		return ValuesPath(k)
	}
	return p + "." + ValuesPath(k)
}

// Index is p followed by the list index i.
func (p ValuesPath) Index(i int) ValuesPath {
	return p + "[" + ValuesPath(strconv.Itoa(i)) + "]"
}

// with is p followed by st.
func (p ValuesPath) with(st Step) ValuesPath {
	if st.IsIndex {
		return p.Index(st.Index)
	}
	return p.Key(st.Key)
}

// Steps reads p back into its steps. A path not written as Key and Index
// write it is an error.
func (p ValuesPath) Steps() ([]Step, error) {
	var out []Step
	for s := string(p); s != ""; {
		var st Step
		var err error
		switch {
		case s[0] == '[':
			st, s, err = indexStep(s)
		case len(out) > 0 && s[0] != '.':
			err = fmt.Errorf("%q follows a step", s)
		case len(out) > 0:
			st, s, err = keyStep(s[1:])
		default:
			st, s, err = keyStep(s)
		}
		if err != nil {
			return nil, fmt.Errorf("values path %q: %w", string(p), err)
		}
		out = append(out, st)
	}
	return out, nil
}

// indexStep reads the "[n]" s starts with, and returns the rest of s.
func indexStep(s string) (Step, string, error) {
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return Step{}, "", errors.New("unclosed [")
	}
	digits := s[1:end]
	n, err := strconv.Atoi(digits)
	if err != nil || strings.Trim(digits, "0123456789") != "" {
		return Step{}, "", fmt.Errorf("[%s] is not a list index", digits)
	}
	return Step{Index: n, IsIndex: true}, s[end+1:], nil
}

// keyStep reads the key s starts with, quoted or not, and returns the
// rest of s.
func keyStep(s string) (Step, string, error) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return Step{}, "", fmt.Errorf("%s: %w", s, err)
		}
		k, err := strconv.Unquote(q)
		return Step{Key: k}, s[len(q):], err
	}
	end := strings.IndexAny(s, `.[]"`)
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return Step{}, "", errors.New("a key is missing")
	}
	return Step{Key: s[:end]}, s[end:], nil
}

// Split is the path of the mapping that holds p's last key, and that key;
// false when p is the top, ends with a list index or does not read back.
func (p ValuesPath) Split() (ValuesPath, string, bool) {
	steps, err := p.Steps()
	if err != nil || len(steps) == 0 || steps[len(steps)-1].IsIndex {
		return "", "", false
	}
	var parent ValuesPath
	for _, st := range steps[:len(steps)-1] {
		parent = parent.with(st)
	}
	return parent, steps[len(steps)-1].Key, true
}

// keys are p's steps when each is a mapping key.
func (p ValuesPath) keys() ([]string, bool) {
	steps, err := p.Steps()
	if err != nil {
		return nil, false
	}
	out := []string{}
	for _, st := range steps {
		if st.IsIndex {
			return nil, false
		}
		out = append(out, st.Key)
	}
	return out, true
}

// Find is the node at p under doc (a document, or the node one holds),
// the last of equal keys winning; nil when there is none or p does not
// read back.
func (p ValuesPath) Find(doc *yaml.Node) *yaml.Node {
	steps, err := p.Steps()
	if err != nil {
		return nil
	}
	return find(doc, steps)
}

func find(doc *yaml.Node, steps []Step) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for _, st := range steps {
		var next *yaml.Node
		switch {
		case st.IsIndex && n.Kind == yaml.SequenceNode && st.Index < len(n.Content):
			next = n.Content[st.Index]
		case !st.IsIndex && n.Kind == yaml.MappingNode:
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == st.Key {
					next = n.Content[j+1]
				}
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// Mapping is the mapping at p in the last of docs that has one there, and
// that document's index; nil and 0 when none has.
func (p ValuesPath) Mapping(docs []*yaml.Node) (*yaml.Node, int) {
	steps, err := p.Steps()
	if err != nil {
		return nil, 0
	}
	var found *yaml.Node
	at := 0
	for i, d := range docs {
		if n := find(d, steps); n != nil && n.Kind == yaml.MappingNode {
			found, at = n, i
		}
	}
	return found, at
}
