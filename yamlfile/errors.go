package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SkipError reports a file that was deliberately not parsed, such as a Helm
// template, or not read, such as a named pipe (Err is then ErrNotRegular).
// It is returned instead of a parse error so callers can tell "not a
// manifest" from "broken manifest".
type SkipError struct {
	File   string
	Reason string
	Err    error // ErrNotRegular, or nil
}

func (e *SkipError) Error() string { return e.File + ": skipped: " + e.Reason }

func (e *SkipError) Unwrap() error { return e.Err }

// ErrNotRegular is what a *SkipError of ReadFile wraps: the path is not a
// regular file, nor a symlink to one.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is what ReadFile returns, in an *fs.PathError, for a file
// larger than MaxFileSize.
var ErrTooLarge = fmt.Errorf("larger than %d MiB", MaxFileSize>>20)

// ParseError is a file that is not valid YAML. Line is 0 when the
// position is not known; Column when only the line is.
type ParseError struct {
	File   string
	Line   int
	Column int
	Msg    string
	Err    error // the YAML library's error
}

func (e *ParseError) Error() string {
	switch {
	case e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseError turns a yaml.v3 error ("yaml: line 5: ...") into a *ParseError.
func parseError(file string, err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return err
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ParseError{File: file, Line: line, Msg: m[2], Err: err}
	}
	if len(msg) > 6 && msg[:6] == "yaml: " {
		msg = msg[6:]
	}
	return &ParseError{File: file, Msg: msg, Err: err}
}

// parseErrorAt is parseError, finding the place the YAML library did not
// say: its parser leaves the line out for a problem on line 1, and says
// no column at all. A problem with no line is then on line 1, at the
// column of the shortest start of it that has the same problem; an
// unknown anchor is where it is first used.
func parseErrorAt(file string, data []byte, err error) error {
	e := parseError(file, err)
	pe, ok := e.(*ParseError)
	if !ok || pe.Line > 0 {
		return e
	}
	if name, found := strings.CutPrefix(pe.Msg, "unknown anchor '"); found {
		name, _, _ = strings.Cut(name, "'")
		if i := bytes.Index(data, []byte("*"+name)); i >= 0 {
			pe.Line = bytes.Count(data[:i], []byte("\n")) + 1
			pe.Column = utf8.RuneCount(data[bytes.LastIndexByte(data[:i], '\n')+1:i]) + 1
		}
		return pe
	}
	if strings.HasPrefix(pe.Msg, "anchor ") || strings.HasPrefix(pe.Msg, "document contains") {
		return pe
	}
	pe.Line, pe.Column = 1, firstColumn(data, pe.Msg)
	return pe
}

// firstColumn is the column on line 1 where decoding data starts to
// fail with msg, or 0 when no start of the line does (the line is long,
// or the problem shows only further on).
func firstColumn(data []byte, msg string) int {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	if len(line) > 512 {
		return 0
	}
	for i := 1; i <= len(line); i++ {
		if !utf8.RuneStart(line[i-1]) {
			continue
		}
		if _, err := decode(line[:i]); err != nil && strings.HasSuffix(err.Error(), msg) {
			return utf8.RuneCount(line[:i])
		}
	}
	return 0
}
