package yamlfile

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// maxExpansions bounds the nodes Map copies through aliases, as the walk's
// maxVisits bounds its own: a small file of nested aliases cannot make a
// decoded object explode.
const maxExpansions = maxVisits

// Map decodes the object into the values a Kubernetes object holds as
// JSON (map[string]any, []any, string, int64, float64, bool, nil): the one
// conversion every reader of objects (admission, the image walk, render)
// goes through, so that no caller meets a map with a non-string key (the
// YAML `{1: x}`), which client-go's unstructured helpers panic on. Such a
// key, and a document that is not a mapping, is a *ParseError at the
// file:line of the offending node.
func (o Object) Map() (map[string]any, error) {
	n := o.Node
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	c := converter{file: o.File}
	v, err := c.value(n, 0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &ParseError{File: o.File, Line: n.Line, Msg: "not a mapping"}
	}
	return m, nil
}

// converter copies YAML nodes into JSON values, counting alias expansions.
type converter struct {
	file     string
	expanded int
}

func (c *converter) fail(n *yaml.Node, format string, args ...any) error {
	return &ParseError{File: c.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

func (c *converter) value(n *yaml.Node, depth int) (any, error) {
	if depth > 10_000 {
		return nil, c.fail(n, "nested too deep")
	}
	switch n.Kind {
	case yaml.AliasNode:
		if c.expanded++; c.expanded > maxExpansions {
			return nil, c.fail(n, "too many alias expansions (more than %d)", maxExpansions)
		}
		return c.value(n.Alias, depth+1)
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		return c.scalar(n)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth+1)
	}
	return nil, c.fail(n, "unexpected YAML node")
}

// mapping copies a mapping, merge keys (<<) included, refusing a key that
// is not a string.
func (c *converter) mapping(n *yaml.Node, depth int) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merged []map[string]any
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			m, err := c.merge(v, depth)
			if err != nil {
				return nil, err
			}
			merged = append(merged, m...)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, c.fail(k, "a mapping key that is not a string (%s %q): Kubernetes objects have string keys", k.ShortTag(), k.Value)
		}
		val, err := c.value(v, depth+1)
		if err != nil {
			return nil, err
		}
		out[k.Value] = val
	}
	for _, m := range merged {
		for k, v := range m {
			if _, ok := out[k]; !ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

// merge reads the value of a merge key: a mapping or a list of them.
func (c *converter) merge(v *yaml.Node, depth int) ([]map[string]any, error) {
	x, err := c.value(v, depth+1)
	if err != nil {
		return nil, err
	}
	switch x := x.(type) {
	case map[string]any:
		return []map[string]any{x}, nil
	case []any:
		var out []map[string]any
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out, nil
	}
	return nil, c.fail(v, "a merge key (<<) whose value is not a mapping")
}

// scalar reads a scalar as yaml.v3 resolves its tag, integers as int64.
func (c *converter) scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.fail(n, "%v", err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, c.fail(n, "%v", err)
		}
		return f, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, c.fail(n, "%v", err)
		}
		return f, nil
	}
	return n.Value, nil
}

// TypeMeta is the object's apiVersion and kind as written at its top
// level, read without converting the rest: a reader can tell whether the
// object is one it reads before it asks for Map.
func (o Object) TypeMeta() (apiVersion, kind string) {
	n := o.Node
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return "", ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			continue
		}
		switch k.Value {
		case "apiVersion":
			apiVersion = v.Value
		case "kind":
			kind = v.Value
		}
	}
	return apiVersion, kind
}
