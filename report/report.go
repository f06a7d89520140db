package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/regcheck/regcheck/types"
)

// Renderer writes a result in one format.
type Renderer interface {
	Render(w io.Writer, r *types.Result) error
}

// RendererFunc adapts a function to Renderer.
type RendererFunc func(w io.Writer, r *types.Result) error

// Render calls f.
func (f RendererFunc) Render(w io.Writer, r *types.Result) error { return f(w, r) }

var formats = map[string]Renderer{
	"table":    RendererFunc(Table),
	"json":     RendererFunc(JSON),
	"html":     RendererFunc(HTML),
	"sarif":    RendererFunc(SARIF),
	"github":   RendererFunc(GitHub),
	"markdown": RendererFunc(Markdown),
}

// Formats lists the format names For accepts.
func Formats() []string {
	out := make([]string, 0, len(formats))
	for k := range formats {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// For returns the renderer of a format name.
func For(format string) (Renderer, error) {
	r, ok := formats[format]
	if !ok {
		return nil, fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats(), ", "))
	}
	return r, nil
}
