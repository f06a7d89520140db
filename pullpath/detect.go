package pullpath

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/pelletier/go-toml/v2/unstable"
	yamlv2 "go.yaml.in/yaml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// tomlLine matches a line that can only start TOML: a table header or a
// key = value pair. YAML's "key: value" never matches.
var tomlLine = regexp.MustCompile(`^\s*(\[|[A-Za-z0-9_."'-]+\s*=)`)

// Top-level keys that name each TOML format.
var (
	hostsKeys = map[string]bool{"server": true, "host": true, "capabilities": true, "ca": true,
		"client": true, "skip_verify": true, "header": true, "override_path": true, "dial_timeout": true}
	regConfKeys = map[string]bool{"registry": true, "unqualified-search-registries": true, "registries": true,
		"short-name-mode": true, "aliases": true, "credential-helpers": true, "additional-layer-store-auth-helper": true}
)

// detect tells a file's format from its content.
func detect(path string, data []byte) (string, error) {
	first, ok := firstLine(data)
	if !ok {
		return "", fmt.Errorf("%s: empty file: %w", path, ErrUnknownFormat)
	}
	if !tomlLine.MatchString(first) {
		return detectYAML(path, data)
	}
	keys, err := topLevelKeys(data)
	if err != nil {
		return "", &ParseError{Path: path, Line: tomlErrLine(data, err), Err: err}
	}
	for _, k := range keys {
		switch {
		case regConfKeys[k]:
			return FormatRegistriesConf, nil
		case hostsKeys[k]:
			return FormatContainerd, nil
		}
	}
	return "", fmt.Errorf("%s: TOML with neither hosts.toml nor registries.conf keys: %w", path, ErrUnknownFormat)
}

// firstLine is the first line that is neither blank nor a # comment,
// however long: a line past bufio.Scanner's 64 KiB token made a file read
// as empty.
func firstLine(data []byte) (string, bool) {
	for rest := data; len(rest) > 0; {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		rest = after
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return string(bytes.TrimSuffix(line, []byte("\r"))), true
		}
	}
	return "", false
}

// topLevelKeys lists, in file order, the first part of every key before the
// first table header and of every table header.
func topLevelKeys(data []byte) ([]string, error) {
	var p unstable.Parser
	p.Reset(data)
	var keys []string
	inTable := false
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			inTable = true
		case unstable.KeyValue:
			if inTable {
				continue
			}
		default:
			continue
		}
		if it := e.Key(); it.Next() {
			keys = append(keys, string(it.Node().Data))
		}
	}
	return keys, p.Error()
}

// tomlErrLine finds the line a go-toml parser error points at.
func tomlErrLine(data []byte, err error) int {
	var pe *unstable.ParserError
	if !errors.As(err, &pe) || len(pe.Highlight) == 0 {
		return 0
	}
	var p unstable.Parser
	p.Reset(data)
	defer func() { _ = recover() }() // a highlight outside data has no line
	return p.Shape(p.Range(pe.Highlight)).Start.Line
}

// detectYAML accepts a mapping with a mirrors or configs key.
func detectYAML(path string, data []byte) (string, error) {
	var probe any
	if err := yamlv2.Unmarshal(data, &probe); err != nil {
		return "", &ParseError{Path: path, Line: yamlErrLine(err), Err: err}
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc)
	root := docRoot(&doc)
	if root == nil || root.Kind != yaml.MappingNode {
		return "", fmt.Errorf("%s: YAML that is not a mapping: %w", path, ErrUnknownFormat)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k == "mirrors" || k == "configs" {
			return FormatK3s, nil
		}
	}
	return "", fmt.Errorf("%s: YAML without mirrors or configs: %w", path, ErrUnknownFormat)
}

func docRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0]
	}
	return nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// yamlErrLine reads the line from a YAML error ("yaml: line 3: ...").
func yamlErrLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
