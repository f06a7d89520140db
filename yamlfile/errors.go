package yamlfile

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
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

// ParseError is a file that is not valid YAML. Line is 0 when the parser
// did not report a position.
type ParseError struct {
	File string
	Line int
	Msg  string
	Err  error // the YAML library's error
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
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
