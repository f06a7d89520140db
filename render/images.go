package render

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// withoutBadImages is a kustomization's bytes with each images: entry
// kustomize would refuse (newTag: 1.25, a number; a name that is a list)
// turned into comments, line for line, so that the other entries still
// apply and every line keeps its number; and an Error naming each such
// entry's line. An entry that does not have lines of its own (a flow
// sequence) is left as it is: kustomize then refuses the file, as before.
func withoutBadImages(file string, raw []byte) ([]byte, []*Error) {
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return raw, nil
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	var errs []*Error
	top := doc.Content[0].Content
	for j := 0; j+1 < len(top); j += 2 {
		if top[j].Value != "images" || top[j+1].Kind != yaml.SequenceNode || top[j+1].Style&yaml.FlowStyle != 0 {
			continue
		}
		for _, e := range top[j+1].Content {
			key, why := badEntry(e)
			if why == "" {
				continue
			}
			errs = append(errs, &Error{File: file, Line: e.Line, Msg: fmt.Sprintf("images entry %s: %s %s; the entry is not applied", entryName(e), key, why)})
			for l := e.Line; l <= lastLine(e) && l <= len(lines); l++ {
				lines[l-1] = append([]byte("#"), lines[l-1]...)
			}
		}
	}
	if len(errs) == 0 {
		return raw, nil
	}
	return bytes.Join(lines, nil), errs
}

// badEntry is the key of an images entry kustomize cannot read as a
// string, and why; "" when every key is one.
func badEntry(e *yaml.Node) (key, why string) {
	if e.Kind != yaml.MappingNode {
		return "entry", "is not a mapping"
	}
	for i := 0; i+1 < len(e.Content); i += 2 {
		v := e.Content[i+1]
		switch e.Content[i].Value {
		case "name", "newName", "newTag", "digest":
		default:
			continue
		}
		switch {
		case v.Kind != yaml.ScalarNode:
			return e.Content[i].Value, "is not a string"
		case v.Tag != "!!str" && v.Tag != "!!null":
			return e.Content[i].Value, fmt.Sprintf("%s is not a string (quote it: %q)", v.Value, v.Value)
		}
	}
	return "", ""
}

func entryName(e *yaml.Node) string {
	for i := 0; i+1 < len(e.Content); i += 2 {
		if e.Content[i].Value == "name" && e.Content[i+1].Kind == yaml.ScalarNode {
			return e.Content[i+1].Value
		}
	}
	return "?"
}

// lastLine is the last line a node's text is on (of its last scalar).
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	return last
}
