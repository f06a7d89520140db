package render

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/yamlfile"
)

// valueKey is a values key a marker stands for.
type valueKey struct {
	Key
	column int
	block  int // the values' source's block (see source)
	// why is set when pin must not edit the key: a dependency's own
	// values, a value reached through an alias, a number Helm prints
	// otherwise than it is written.
	why string
}

// markValues returns a values file with each scalar that could be (part
// of) an image reference — its text is in one of refs between separators
// — replaced by a marker, registering each key in keys. Booleans, nulls,
// empty strings and numbers that appear in no reference are kept, so that
// the template's conditions and arithmetic see what they see without
// markers.
func markValues(file string, data []byte, refs []string, mk *markers, keys *[]valueKey, why string) ([]byte, error) {
	docs, err := yamlfile.Documents(data)
	if err != nil {
		return nil, err
	}
	shared := map[*yaml.Node]bool{}
	for _, d := range docs {
		yamlfile.Aliased(d, shared)
	}
	n := 0
	var walk func(node *yaml.Node, path ValuesPath, depth int, alias bool)
	walk = func(node *yaml.Node, path ValuesPath, depth int, alias bool) {
		if node == nil || depth > 1000 {
			return
		}
		alias = alias || shared[node] // under an anchor an alias names
		switch node.Kind {
		case yaml.DocumentNode:
			for _, c := range node.Content {
				walk(c, path, depth+1, alias)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				k := node.Content[i]
				if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
					continue
				}
				walk(node.Content[i+1], path.Key(k.Value), depth+1, alias)
			}
		case yaml.SequenceNode:
			for i, c := range node.Content {
				walk(c, path.Index(i), depth+1, alias)
			}
		case yaml.ScalarNode:
			if !candidate(node, refs) {
				return
			}
			k := valueKey{Key: Key{File: file, Line: node.Line, Path: path}, column: node.Column, why: why}
			switch printed := printedNumber(node); {
			case k.why != "":
			case alias:
				k.why = "reached through a YAML alias"
			case printed != "":
				k.why = fmt.Sprintf("%s is the number %s, which Helm prints as %s: quote it if %s is what is meant", path, node.Value, printed, node.Value)
			}
			*keys = append(*keys, k)
			node.Value, node.Tag, node.Style = mk.next(len(*keys)-1), "!!str", yaml.DoubleQuotedStyle
			n++
		}
	}
	for _, d := range docs {
		walk(d, "", 0, false)
	}
	if n == 0 {
		return data, nil
	}
	return encodeDocs(docs)
}

// printedNumber is how a template prints a number written otherwise
// (1.10 prints as 1.1), or "".
func printedNumber(n *yaml.Node) string {
	if n.Tag != "!!int" && n.Tag != "!!float" {
		return ""
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if p := strconv.FormatFloat(f, 'g', -1, 64); err == nil && p != n.Value {
		return p
	}
	return ""
}

// candidate reports whether a scalar's value, as a template prints it,
// is in one of refs between separators: the start or end, "/", ":" or
// "@", and for a string also "-", "_" and ".".
func candidate(n *yaml.Node, refs []string) bool {
	switch n.Tag {
	case "!!null", "!!bool":
		return false
	}
	if n.Value == "" {
		return false
	}
	forms, seps := []string{n.Value}, "/:@-_."
	if n.Tag == "!!int" || n.Tag == "!!float" {
		seps = "/:@"
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			forms = append(forms, strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	for _, ref := range refs {
		for _, f := range forms {
			if within(ref, f, seps) {
				return true
			}
		}
	}
	return false
}

// within reports whether s occurs in ref between separators.
func within(ref, s, seps string) bool {
	for off := 0; off < len(ref); {
		i := strings.Index(ref[off:], s)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(s)
		if (i == 0 || strings.IndexByte(seps, ref[i-1]) >= 0) && (end == len(ref) || strings.IndexByte(seps, ref[end]) >= 0) {
			return true
		}
		off = i + 1
	}
	return false
}
