package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/regcheck/regcheck/internal/printable"
)

// logHandler writes a record as one short line for a person:
//
//	WARN input skipped input=k8s/chart/templates/deploy.yaml reason="skipped: Helm template"
//
// the level, the message, then key=value, a value quoted only when it
// holds a space, a quote or an =, every control character made visible
// (report.Printable). At debug level each line starts with the time
// (15:04:05.000), to read request traces by. Lines are written whole, one
// at a time.
type logHandler struct {
	mu     *sync.Mutex
	w      io.Writer
	level  slog.Level
	prefix string // the open groups, "a.b."
	attrs  string // the attributes given With, formatted
}

var _ slog.Handler = (*logHandler)(nil)

func newLogHandler(w io.Writer, level slog.Level) *logHandler {
	return &logHandler{mu: &sync.Mutex{}, w: w, level: level}
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if h.level <= slog.LevelDebug && !r.Time.IsZero() {
		b.WriteString(r.Time.Format("15:04:05.000 "))
	}
	b.WriteString(r.Level.String()) // DEBUG, INFO, WARN, ERROR
	b.WriteByte(' ')
	b.WriteString(printable.Text(r.Message))
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range as {
		appendAttr(&b, h.prefix, a)
	}
	c := *h
	c.attrs += b.String()
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix += name + "."
	return &c
}

// appendAttr writes " key=value", or each attribute of a group under
// "group.", and nothing for an empty attribute.
func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(printable.Text(prefix + a.Key))
	b.WriteByte('=')
	b.WriteString(logValue(a.Value))
}

// logValue is a value as a person reads it: a duration as 1.5s, a time in
// RFC 3339, text quoted (Go's quoting, which escapes every control
// character) only when it holds a space, a quote, an = or a character
// report.Printable would escape.
func logValue(v slog.Value) string {
	var s string
	switch v.Kind() {
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339)
	default:
		s = v.String()
	}
	if s == "" || strings.ContainsAny(s, " =\"\\") || printable.Text(s) != s {
		return strconv.Quote(s)
	}
	return s
}

// level is the log level the flags ask for: --log-level, or debug with
// -v, or error with --quiet.
func (g *globals) level() (slog.Level, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	switch {
	case g.verbose && g.quiet:
		return 0, errors.New("-v and --quiet ask for opposite things: give one")
	case g.verbose:
		return slog.LevelDebug, nil
	case g.quiet:
		return max(lvl, slog.LevelError), nil
	}
	return lvl, nil
}
