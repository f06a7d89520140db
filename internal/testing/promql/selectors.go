package promql

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Matcher is one label matcher of a selector: name, op (=, !=, =~, !~)
// and the value, unquoted.
type Matcher struct {
	Name, Op, Value string
}

// Selector is a vector selector of an expression: the metric name (from
// the identifier, or a __name__="..." matcher) and the label matchers.
type Selector struct {
	Name     string
	Matchers []Matcher
}

// Matcher returns the matcher of label name, and whether there is one.
func (s Selector) Matcher(name string) (Matcher, bool) {
	for _, m := range s.Matchers {
		if m.Name == name {
			return m, true
		}
	}
	return Matcher{}, false
}

// keywords are PromQL's words that are never a metric name: binary
// operators, modifiers, aggregators and the number literals.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "offset": true, "start": true, "end": true,
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true, "stdvar": true,
	"topk": true, "bottomk": true, "count_values": true, "quantile": true, "limitk": true, "limit_ratio": true,
	"inf": true, "nan": true,
}

// labelLists are the words whose parenthesised list that follows names
// labels, not series.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// Selectors returns the vector selectors of expr in order: what the
// expression reads. It is a lexer, not Prometheus's parser: it knows
// strings (the three quotes), comments, durations and numbers, label
// matchers in braces, the label lists of by, without, on, ignoring and
// group_left/right, and that a word followed by "(" is a function or an
// aggregator. A selector whose name is not a plain identifier or an
// equality on __name__ is an error: the name of what it reads is not
// known.
func Selectors(expr string) ([]Selector, error) {
	l := &lexer{s: expr}
	var out []Selector
	for {
		tok, err := l.next()
		if err != nil {
			return nil, err
		}
		switch tok.kind {
		case tokEOF:
			return out, nil
		case tokIdent:
			sel, ok, err := l.identifier(tok.text)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, sel)
			}
		case tokLBrace:
			ms, err := l.matchers()
			if err != nil {
				return nil, err
			}
			sel, err := named(ms)
			if err != nil {
				return nil, err
			}
			out = append(out, sel)
		}
	}
}

// identifier decides what the word just read is: a keyword (and, after
// a label-list keyword, its list is skipped), a function (followed by
// "("), or a metric name with, perhaps, matchers in braces.
func (l *lexer) identifier(word string) (Selector, bool, error) {
	lower := strings.ToLower(word)
	if labelLists[lower] {
		return Selector{}, false, l.skipLabelList()
	}
	if keywords[lower] {
		return Selector{}, false, nil
	}
	switch l.peek() {
	case '(':
		return Selector{}, false, nil // a function
	case '{':
		l.pos++
		ms, err := l.matchers()
		if err != nil {
			return Selector{}, false, err
		}
		return Selector{Name: word, Matchers: ms}, true, nil
	}
	return Selector{Name: word}, true, nil
}

// named is a selector written as braces alone: its name is the value of
// its __name__ equality matcher.
func named(ms []Matcher) (Selector, error) {
	var sel Selector
	for _, m := range ms {
		if m.Name != "__name__" {
			sel.Matchers = append(sel.Matchers, m)
			continue
		}
		if m.Op != "=" {
			return Selector{}, fmt.Errorf("selector {__name__%s%q}: the name is not one metric", m.Op, m.Value)
		}
		sel.Name = m.Value
	}
	if sel.Name == "" {
		return Selector{}, fmt.Errorf("selector %v names no metric", ms)
	}
	return sel, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString
	tokNumber
	tokLBrace
	tokOther // an operator or punctuation
)

type token struct {
	kind tokKind
	text string // an identifier, or a string's value
}

// lexer reads expr one token at a time; pos is the next byte.
type lexer struct {
	s   string
	pos int
}

// peek returns the next byte that is not space or a comment, 0 at the end.
func (l *lexer) peek() byte {
	l.skipSpace()
	if l.pos >= len(l.s) {
		return 0
	}
	return l.s[l.pos]
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		switch {
		case c == '#':
			for l.pos < len(l.s) && l.s[l.pos] != '\n' {
				l.pos++
			}
		case unicode.IsSpace(rune(c)):
			l.pos++
		default:
			return
		}
	}
}

func (l *lexer) next() (token, error) {
	c := l.peek()
	switch {
	case l.pos >= len(l.s):
		return token{kind: tokEOF}, nil
	case c == '"' || c == '\'' || c == '`':
		v, err := l.str()
		return token{kind: tokString, text: v}, err
	case c == '{':
		l.pos++
		return token{kind: tokLBrace}, nil
	case c == '[':
		return token{kind: tokOther}, l.skipTo(']')
	case isDigit(c) || c == '.' && l.pos+1 < len(l.s) && isDigit(l.s[l.pos+1]):
		l.number()
		return token{kind: tokNumber}, nil
	case isIdentStart(c):
		start := l.pos
		for l.pos < len(l.s) && isIdent(l.s[l.pos]) {
			l.pos++
		}
		return token{kind: tokIdent, text: l.s[start:l.pos]}, nil
	}
	l.pos++
	return token{kind: tokOther}, nil
}

// number skips a number or a duration: digits, letters (units, hex,
// exponents), dots, and an exponent's sign.
func (l *lexer) number() {
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		switch {
		case isIdent(c) || c == '.':
		case (c == '+' || c == '-') && (l.s[l.pos-1] == 'e' || l.s[l.pos-1] == 'E') && !strings.HasPrefix(strings.ToLower(l.s[:l.pos]), "0x"):
		default:
			return
		}
		l.pos++
	}
}

// str reads a quoted string at pos and returns its value.
func (l *lexer) str() (string, error) {
	q := l.s[l.pos]
	end := l.pos + 1
	for ; end < len(l.s) && l.s[end] != q; end++ {
		if l.s[end] == '\\' && q != '`' {
			end++
		}
	}
	if end >= len(l.s) {
		return "", fmt.Errorf("unterminated string at byte %d of %q", l.pos, l.s)
	}
	raw := l.s[l.pos : end+1]
	l.pos = end + 1
	if q == '`' {
		return raw[1 : len(raw)-1], nil
	}
	if q == '\'' {
		raw = `"` + strings.ReplaceAll(strings.ReplaceAll(raw[1:len(raw)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	v, err := strconv.Unquote(raw)
	if err != nil {
		return "", fmt.Errorf("string %s: %w", raw, err)
	}
	return v, nil
}

// skipTo skips past the next c outside a string.
func (l *lexer) skipTo(c byte) error {
	for l.pos < len(l.s) {
		switch l.s[l.pos] {
		case '"', '\'', '`':
			if _, err := l.str(); err != nil {
				return err
			}
			continue
		case c:
			l.pos++
			return nil
		}
		l.pos++
	}
	return fmt.Errorf("no %q to close %q", c, l.s)
}

// skipLabelList skips the parenthesised label list after by, without, on,
// ignoring or group_left/right (group_left may have none).
func (l *lexer) skipLabelList() error {
	if l.peek() != '(' {
		return nil
	}
	l.pos++
	return l.skipTo(')')
}

// matchers reads label matchers up to the closing brace (the opening one
// read): name (an identifier or a quoted name) op "value", separated by
// commas; a quoted name alone is the metric's name.
func (l *lexer) matchers() ([]Matcher, error) {
	var out []Matcher
	for {
		tok, err := l.next()
		if err != nil {
			return nil, err
		}
		switch tok.kind {
		case tokOther:
			switch l.s[l.pos-1] {
			case '}':
				return out, nil
			case ',':
				continue
			}
		case tokIdent, tokString:
			m, err := l.matcher(tok)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
			continue
		}
		return nil, fmt.Errorf("unexpected token at byte %d of %q", l.pos, l.s)
	}
}

// matcher reads the op and value after a label name; a quoted name with
// no op is the metric's name.
func (l *lexer) matcher(name token) (Matcher, error) {
	var op string
	switch rest := l.s[min(l.pos+l.spaceLen(), len(l.s)):]; {
	case strings.HasPrefix(rest, "=~"), strings.HasPrefix(rest, "!~"), strings.HasPrefix(rest, "!="):
		op = rest[:2]
	case strings.HasPrefix(rest, "="):
		op = "="
	case name.kind == tokString:
		return Matcher{Name: "__name__", Op: "=", Value: name.text}, nil
	default:
		return Matcher{}, fmt.Errorf("label %s has no matcher in %q", name.text, l.s)
	}
	l.skipSpace()
	l.pos += len(op)
	v, err := l.next()
	if err != nil {
		return Matcher{}, err
	}
	if v.kind != tokString {
		return Matcher{}, fmt.Errorf("label %s%s: the value is not a string in %q", name.text, op, l.s)
	}
	return Matcher{Name: name.text, Op: op, Value: v.text}, nil
}

// spaceLen is the length of the space and comments at pos.
func (l *lexer) spaceLen() int {
	save := l.pos
	l.skipSpace()
	n := l.pos - save
	l.pos = save
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isIdent(c byte) bool { return isIdentStart(c) || isDigit(c) }

// Matches says whether a label value v satisfies the matcher; a regular
// expression is anchored at both ends, as Prometheus anchors it.
func (m Matcher) Matches(v string) (bool, error) {
	switch m.Op {
	case "=":
		return v == m.Value, nil
	case "!=":
		return v != m.Value, nil
	}
	re, err := regexp.Compile("^(?:" + m.Value + ")$")
	if err != nil {
		return false, fmt.Errorf("matcher %s%s%q: %w", m.Name, m.Op, m.Value, err)
	}
	return re.MatchString(v) == (m.Op == "=~"), nil
}
