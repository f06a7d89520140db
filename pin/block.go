package pin

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/regcheck/regcheck/render"
)

// blockEdit pins one values key of a values document written in a
// manifest (a Flux HelmRelease's spec.values, an Argo CD Application's
// helm values, a ConfigMap's literal block): the document block, laid
// out on the lines it has in the manifest data, is edited as a values
// file is (valuesEdit, with its check), and the lines that change are
// carried over to data. It gives data and block edited.
func blockEdit(file string, data, block []byte, e render.Edit, d string) ([]byte, []byte, error) {
	if block == nil {
		return nil, nil, fmt.Errorf("%s:%d: the values there were not read", file, e.Block)
	}
	edited, err := valuesEdit(file, block, e, d)
	if err != nil {
		return nil, nil, err
	}
	out, err := carry(data, block, edited)
	if err != nil {
		return nil, nil, fmt.Errorf("%s:%d: %s: %w", file, cmp.Or(e.Line, e.Block), e.Path, err)
	}
	return out, edited, nil
}

// carry applies to data the change from old to edited, two versions of
// a document laid out on data's lines: each line of old is a line of
// data, but for the text before the document's first column on its
// first line ("- " of a list item, say). The lines that change in old
// (at most one) are replaced in data, keeping that text; lines edited
// adds are added after the same line in data.
func carry(data, old, edited []byte) ([]byte, error) {
	fl := strings.SplitAfter(string(data), "\n")
	ol := strings.SplitAfter(string(old), "\n")
	nl := strings.SplitAfter(string(edited), "\n")
	p := 0
	for p < len(ol) && p < len(nl) && ol[p] == nl[p] {
		p++
	}
	s := 0
	for s < len(ol)-p && s < len(nl)-p && ol[len(ol)-1-s] == nl[len(nl)-1-s] {
		s++
	}
	from, to := p, len(ol)-s // old's changed lines, 0-based
	repl := strings.Join(nl[p:len(nl)-s], "")
	switch {
	case to-from > 1:
		return nil, errors.New("the edit spans lines")
	case to > len(fl) || from > len(fl):
		return nil, errors.New("the values are not on the file's lines")
	case to == from: // lines added after line from-1
		if from == 0 || !sameTail(fl[from-1], ol[from-1]) {
			return nil, errors.New("the values are not on the file's lines")
		}
	default:
		if !sameTail(fl[from], ol[from]) {
			return nil, errors.New("the values are not on the file's lines")
		}
		h := headLen(fl[from], ol[from])
		if !strings.HasPrefix(repl, ol[from][:h]) {
			return nil, errors.New("the edit changes the text before the values")
		}
		repl = fl[from][:h] + repl[h:]
	}
	return []byte(strings.Join(fl[:from], "") + repl + strings.Join(fl[to:], "")), nil
}

// sameTail reports whether line f of a file and line o of a document laid
// out on it are one line: the same length, equal but for the text before
// the document's first column.
func sameTail(f, o string) bool {
	return len(f) == len(o) && f[headLen(f, o):] == o[headLen(f, o):]
}

// headLen is the length of the part of o, a laid-out line, that may
// differ from f, its file's line: up to its last byte that differs.
func headLen(f, o string) int {
	n := 0
	for i := 0; i < len(f) && i < len(o); i++ {
		if f[i] != o[i] {
			n = i + 1
		}
	}
	return n
}
