package cli

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/scan"
)

// clock is a fake clock the tests move.
type clock struct{ t time.Time }

func (c *clock) now() time.Time        { return c.t }
func (c *clock) after(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                 { return &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} }

// The line says images done of total and requests at once, the rate after
// a second, the time left once an image is done, and starts the time left
// again with each Run.
func TestProgressLine(t *testing.T) {
	type step struct {
		wait time.Duration
		p    scan.Progress
	}
	for _, tc := range []struct {
		name  string
		steps []step
		now   time.Duration // after the last step
		want  string
	}{
		{"a Run begins", []step{{0, scan.Progress{Done: 0, Total: 40, Requests: 1}}}, 0,
			"scanning 0/40 images, 1 request"},
		{"no rate before a second", []step{{0, scan.Progress{Total: 40}}, {500 * time.Millisecond, scan.Progress{Done: 1, Total: 40, Requests: 9}}}, 0,
			"scanning 1/40 images, 9 requests, about 20s left"},
		{"rate and time left", []step{{0, scan.Progress{Total: 40}}, {4 * time.Second, scan.Progress{Done: 10, Total: 40, Requests: 120}}}, 0,
			"scanning 10/40 images, 120 requests, 30/s, about 12s left"},
		{"the time left moves with the clock", []step{{0, scan.Progress{Total: 40}}, {4 * time.Second, scan.Progress{Done: 10, Total: 40, Requests: 120}}}, 2 * time.Second,
			"scanning 10/40 images, 120 requests, 20/s, about 18s left"},
		{"minutes", []step{{0, scan.Progress{Total: 1000}}, {30 * time.Second, scan.Progress{Done: 100, Total: 1000, Requests: 900}}}, 0,
			"scanning 100/1000 images, 900 requests, 30/s, about 4m30s left"},
		{"done: no time left", []step{{0, scan.Progress{Total: 3}}, {2 * time.Second, scan.Progress{Done: 3, Total: 3, Requests: 20}}}, 0,
			"scanning 3/3 images, 20 requests, 10/s"},
		{"a second Run (running digests) starts its own clock", []step{
			{0, scan.Progress{Total: 10}}, {10 * time.Second, scan.Progress{Done: 10, Total: 10, Requests: 50}},
			{0, scan.Progress{Done: 0, Total: 4, Requests: 50}}, {time.Second, scan.Progress{Done: 1, Total: 4, Requests: 55}}}, 0,
			"scanning 1/4 images, 55 requests, 5/s, about 3s left"},
		{"under a second left", []step{{0, scan.Progress{Total: 100}}, {2 * time.Second, scan.Progress{Done: 99, Total: 100, Requests: 300}}}, 0,
			"scanning 99/100 images, 300 requests, 150/s, under 1s left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			var buf bytes.Buffer
			p := newProgress(&statusLine{w: &buf}, c.now)
			for _, s := range tc.steps {
				c.after(s.wait)
				p.update(s.p)
			}
			c.after(tc.now)
			if got := p.lineAt(c.now()); got != tc.want {
				t.Errorf("line %q, want %q", got, tc.want)
			}
		})
	}
}

// The status line is redrawn in place, padded over a longer one, cut to
// the terminal's width, moved below a log line, and erased at the end.
func TestStatusLine(t *testing.T) {
	var buf bytes.Buffer
	s := &statusLine{w: &buf, width: 12}
	s.set("scanning 1/4")
	s.set("scan 2/4")
	io.WriteString(s, "WARN x\n")
	s.set("a line longer than the terminal")
	s.clear()
	s.clear()
	io.WriteString(s, "ERROR y\n")
	want := "\rscanning 1/" + // cut to 11 columns
		"\rscan 2/4   " + // padded over the longer line
		"\r        \r" + "WARN x\n" + "\rscan 2/4" + // erased, logged, drawn again
		"\ra line long" +
		"\r           \r" + // erased once
		"ERROR y\n" // no line: straight through
	if got := buf.String(); got != want {
		t.Errorf("wrote\n%q\nwant\n%q", got, want)
	}
}

// update draws at once the first time, then at most every redraw.
func TestProgressThrottle(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	p := newProgress(&statusLine{w: &buf}, c.now)
	p.update(scan.Progress{Total: 3})
	c.after(redraw / 2)
	p.update(scan.Progress{Done: 1, Total: 3})
	if got := buf.String(); got != "\rscanning 0/3 images, 0 requests" {
		t.Errorf("drew %q", got)
	}
	c.after(redraw)
	p.update(scan.Progress{Done: 2, Total: 3})
	if got := buf.String(); !strings.HasSuffix(got, "\rscanning 2/3 images, 0 requests, under 1s left") {
		t.Errorf("drew %q", got)
	}
}

// A scan draws its progress on a terminal's stderr and erases it before
// the report; on anything else, or with --quiet, nothing is drawn.
func TestScanProgress(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), host, "p/")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"scan", "--no-cache", imgs[0].Ref, imgs[1].Ref}
	for _, tc := range []struct {
		name     string
		terminal bool
		flags    []string
		drawn    bool
	}{
		{"stderr not a terminal", false, nil, false},
		{"stderr a terminal", true, nil, true},
		{"stderr a terminal, --quiet", true, []string{"--quiet"}, false},
		{"stderr a terminal, -q", true, []string{"-q"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
			isTerminal = func(io.Writer) bool { return tc.terminal }
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append(tc.flags, args...))
			if code != ExitClean {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
			}
			got := errb.String()
			if !tc.drawn {
				if got != "" {
					t.Errorf("stderr %q, want nothing", got)
				}
				return
			}
			// Drawn when the scan began, erased before the report.
			if !strings.HasPrefix(got, "\rscanning 0/2 images, 0 requests") || !strings.HasSuffix(got, "\r") ||
				strings.TrimSpace(got[strings.LastIndex(got[:len(got)-1], "\r"):]) != "" {
				t.Errorf("stderr %q: want the line drawn, then erased", got)
			}
			if strings.Contains(out.String(), "\r") || !strings.Contains(out.String(), "2 images: 0 broken") {
				t.Errorf("report %q", out.String())
			}
		})
	}
}
