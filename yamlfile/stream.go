package yamlfile

import (
	"fmt"
	"iter"
	"os"

	"go.yaml.in/yaml/v3"
)

// File is one file of the -f trees, read as Find reads it.
type File struct {
	Name string // its path as walked; "-" for standard input
	Data []byte
}

// Object is one YAML document of a File, decoded once.
type Object struct {
	File string
	Line int        // the line of its first key (of the document, when it has none)
	Node *yaml.Node // the document node
}

// Walk yields, in order, every file of paths that Find reads, under the
// one set of rules every reader of the -f trees shares: a path that is a
// file is read whatever its name; a folder is walked recursively in
// lexical order for *.yaml, *.yml and *.json files, skipping folders whose
// name starts with a dot and not following symlinked folders (Files); a
// file is read only if it is, or links to, a regular file of at most
// MaxFileSize bytes (ReadFile); "-" is standard input. What kept a folder
// or a file from being read is yielded as an error (with the File's Name
// when a file), once, and the walk goes on.
func Walk(paths []string) iter.Seq2[File, error] {
	return func(yield func(File, error) bool) {
		for _, root := range paths {
			if root == "-" {
				data, err := readCapped("stdin", os.Stdin)
				if err != nil {
					err = fmt.Errorf("reading stdin: %w", err)
				}
				if !yield(File{Name: "-", Data: data}, err) {
					return
				}
				continue
			}
			files, errs := Files([]string{root}, nil)
			for _, err := range errs {
				if !yield(File{}, err) {
					return
				}
			}
			for _, p := range files {
				data, err := ReadFile(p)
				if !yield(File{Name: p, Data: data}, err) {
					return
				}
			}
		}
	}
}

// Objects decodes f's YAML documents, each once, with its line; empty
// documents (nothing, or null, after "---") are left out. A file that is not YAML is a *ParseError
// naming its file:line, and no objects.
func (f File) Objects() (objs []Object, err error) {
	defer func() {
		// As read: a panic of the YAML library is a file not read.
		if r := recover(); r != nil {
			objs, err = nil, &ParseError{File: f.Name, Msg: fmt.Sprintf("YAML parser panic: %v", r)}
		}
	}()
	docs, err := decode(f.Data)
	if err != nil {
		return nil, parseErrorAt(f.Name, f.Data, err)
	}
	for _, d := range docs {
		if d.Kind == yaml.DocumentNode && (len(d.Content) == 0 || len(d.Content) == 1 && d.Content[0].Tag == "!!null") {
			continue // an empty document: "---" with nothing after
		}
		line := d.Line
		if len(d.Content) > 0 {
			line = d.Content[0].Line
		}
		objs = append(objs, Object{File: f.Name, Line: line, Node: d})
	}
	return objs, nil
}
