package pin

import (
	"bytes"
	"errors"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

var bom = []byte("\xef\xbb\xbf")

// text maps yaml.v3 node positions (1-based line, 1-based column counted
// in characters) to byte offsets of the original file.
type text struct {
	data  []byte
	lines []int // byte offset where each line starts; lines[0] is line 1
}

func newText(data []byte) *text {
	t := &text{data: data}
	i := 0
	if bytes.HasPrefix(data, bom) {
		i = len(bom) // yaml.v3 drops the stream's byte order mark before counting
	}
	t.lines = append(t.lines, i)
	for i < len(data) {
		if n := breakLen(data, i); n > 0 {
			i += n
			t.lines = append(t.lines, i)
			continue
		}
		i++
	}
	return t
}

// breakLen is the length of the line break at data[i], or 0. yaml.v3
// counts CR LF, CR, LF, NEL, LS and PS as line breaks.
func breakLen(data []byte, i int) int {
	switch {
	case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
		return 2
	case data[i] == '\r' || data[i] == '\n':
		return 1
	case bytes.HasPrefix(data[i:], []byte("\u0085")):
		return 2
	case bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
		return 3
	}
	return 0
}

var errPosition = errors.New("position does not match the parsed value")

// offset returns the byte offset of a node's position.
func (t *text) offset(n *yaml.Node) (int, error) {
	if n.Line < 1 || n.Line > len(t.lines) || n.Column < 1 {
		return 0, errPosition
	}
	i := t.lines[n.Line-1]
	for col := 1; col < n.Column; col++ {
		if i >= len(t.data) || breakLen(t.data, i) > 0 {
			return 0, errPosition
		}
		_, size := utf8.DecodeRune(t.data[i:])
		i += size
	}
	return i, nil
}

// span is the bytes [start, end) holding a scalar's value, without quotes.
type span struct{ start, end int }

var errStyle = errors.New("not a single-line plain or quoted scalar")

// scalar finds the bytes of a scalar's value. It succeeds only when the
// bytes between the quotes (or the plain text) are exactly the parsed
// value: a value with escapes, folding or a block style is refused, so an
// edit can never land anywhere but inside the scalar.
func (t *text) scalar(n *yaml.Node) (span, error) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Value == "" {
		return span{}, errStyle
	}
	if strings.ContainsAny(n.Value, "\r\n\u0085\u2028\u2029") {
		return span{}, errStyle
	}
	i, err := t.offset(n)
	if err != nil {
		return span{}, err
	}
	i, err = t.skipProperties(i)
	if err != nil {
		return span{}, err
	}
	d := t.data
	var quote byte
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		quote = '"'
	case n.Style&yaml.SingleQuotedStyle != 0:
		quote = '\''
	}
	if quote != 0 {
		if i >= len(d) || d[i] != quote {
			return span{}, errPosition
		}
		i++
	}
	end := i + len(n.Value)
	if end > len(d) || string(d[i:end]) != n.Value {
		return span{}, errStyle
	}
	if quote != 0 && (end >= len(d) || d[end] != quote) {
		return span{}, errStyle
	}
	return span{i, end}, nil
}

// skipProperties skips an anchor (&a) and a tag (!!str) before a scalar,
// when they sit on the scalar's line.
func (t *text) skipProperties(i int) (int, error) {
	d := t.data
	for i < len(d) && (d[i] == '&' || d[i] == '!') {
		for i < len(d) && !isBlank(d[i]) && breakLen(d, i) == 0 {
			i++
		}
		for i < len(d) && isBlank(d[i]) {
			i++
		}
		if i >= len(d) || breakLen(d, i) > 0 || d[i] == '#' {
			return 0, errStyle
		}
	}
	return i, nil
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

// lineEnd returns the offset of the line break ending the line holding
// offset i (len(data) on the last line), and the break's bytes.
func (t *text) lineEnd(i int) (int, string) {
	for ; i < len(t.data); i++ {
		if n := breakLen(t.data, i); n > 0 {
			return i, string(t.data[i : i+n])
		}
	}
	return i, t.firstBreak()
}

// firstBreak is the file's first line break, "\n" when it has none.
func (t *text) firstBreak() string {
	for i := range t.data {
		if n := breakLen(t.data, i); n > 0 {
			if b := string(t.data[i : i+n]); b == "\r\n" || b == "\n" || b == "\r" {
				return b
			}
		}
	}
	return "\n"
}

// edit replaces data[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// apply splices edits into data. Edits must not overlap.
func apply(data []byte, edits []edit) ([]byte, error) {
	var out bytes.Buffer
	out.Grow(len(data) + 128*len(edits))
	last := 0
	for _, e := range edits {
		if e.start < last || e.end < e.start || e.end > len(data) {
			return nil, errors.New("overlapping edits")
		}
		out.Write(data[last:e.start])
		out.WriteString(e.text)
		last = e.end
	}
	out.Write(data[last:])
	return out.Bytes(), nil
}
