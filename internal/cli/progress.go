package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// isTerminal reports whether w is a terminal; the tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth is w's width in columns, 0 when unknown; the tests replace it.
var termWidth = func(w io.Writer) int {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
			return cols
		}
	}
	return 0
}

// statusLine is stderr shared by the logs and a status line at its bottom
// (the progress of a scan): the line is redrawn in place with \r, and a
// log line written while it is drawn erases it, goes out, and has it
// drawn again below. Without a line drawn, writes go straight through.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	width int    // columns, 0 when unknown: a line is cut to fit
	line  string // drawn now; "" for none
}

func (s *statusLine) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.line == "" {
		return s.w.Write(p)
	}
	line := s.line
	s.eraseLocked()
	n, err := s.w.Write(p)
	s.drawLocked(line)
	return n, err
}

// set draws line in place of the one drawn.
func (s *statusLine) set(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drawLocked(line)
}

// clear erases the line, leaving the cursor where it was first drawn.
func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eraseLocked()
}

func (s *statusLine) drawLocked(line string) {
	if s.width > 1 && len(line) >= s.width {
		line = line[:s.width-1] // a line that wraps cannot be redrawn with \r
	}
	pad := max(len(s.line)-len(line), 0)
	io.WriteString(s.w, "\r"+line+strings.Repeat(" ", pad))
	s.line = line
}

func (s *statusLine) eraseLocked() {
	if s.line != "" {
		io.WriteString(s.w, "\r"+strings.Repeat(" ", len(s.line))+"\r")
		s.line = ""
	}
}

// progress draws a scan's progress on a statusLine: images done of total,
// requests, their rate, and the time left.
type progress struct {
	status *statusLine
	now    func() time.Time
	start  time.Time // when the progress began: the rate's origin

	mu       sync.Mutex
	p        scan.Progress
	runStart time.Time // when the current Run began: the ETA's origin
	seen     bool      // a Run has reported
	drawn    time.Time // when the line was last drawn

	stop chan struct{}
	done chan struct{}
}

// redraw is how often the line is drawn, at most, and at least while a
// scan runs (the rate and the time left move on their own).
const redraw = 200 * time.Millisecond

// startProgress draws the progress of the scans that run with its option
// on g's stderr, from a goroutine, until stop: only when stderr is a
// terminal and --quiet is not given. It returns nil otherwise, whose
// option and stop do nothing.
func startProgress(g *globals) *progress {
	if g.quiet || g.stderr == nil || !isTerminal(g.stderr.w) {
		return nil
	}
	p := newProgress(g.stderr, time.Now)
	go p.loop()
	return p
}

func newProgress(s *statusLine, now func() time.Time) *progress {
	return &progress{status: s, now: now, start: now(), stop: make(chan struct{}), done: make(chan struct{})}
}

// options are the scan options that report to p.
func (p *progress) options() []scan.Option {
	if p == nil {
		return nil
	}
	return []scan.Option{scan.WithProgress(p.update)}
}

// update takes a Run's progress, and draws it unless it was drawn a moment ago.
func (p *progress) update(sp scan.Progress) {
	p.mu.Lock()
	now := p.now()
	if !p.seen || sp.Done < p.p.Done || sp.Total != p.p.Total {
		p.runStart = now // a new Run
	}
	p.p, p.seen = sp, true
	draw := now.Sub(p.drawn) >= redraw
	p.mu.Unlock()
	if draw {
		p.draw()
	}
}

// draw draws the line as of now.
func (p *progress) draw() {
	p.mu.Lock()
	if !p.seen {
		p.mu.Unlock()
		return
	}
	now := p.now()
	line := p.lineAt(now)
	p.drawn = now
	p.mu.Unlock()
	p.status.set(line)
}

// lineAt is the progress line at now: "scanning 12/40 images, 153
// requests, 31/s, about 9s left". The rate waits for a second of data,
// the time left for a first image done.
func (p *progress) lineAt(now time.Time) string {
	s := fmt.Sprintf("scanning %d/%d images, %s", p.p.Done, p.p.Total, plural(p.p.Requests, "request"))
	if secs := now.Sub(p.start).Seconds(); secs >= 1 {
		s += fmt.Sprintf(", %.0f/s", float64(p.p.Requests)/secs)
	}
	if p.p.Done > 0 && p.p.Done < p.p.Total {
		left := now.Sub(p.runStart) * time.Duration(p.p.Total-p.p.Done) / time.Duration(p.p.Done)
		s += ", " + timeLeft(left)
	}
	return s
}

// timeLeft is "about 9s left" in whole seconds, "under 1s left" below one.
func timeLeft(d time.Duration) string {
	if d < time.Second {
		return "under 1s left"
	}
	return "about " + d.Round(time.Second).String() + " left"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(redraw)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.draw()
		}
	}
}

// end stops drawing and erases the line, before the report is written.
func (p *progress) end() {
	if p == nil {
		return
	}
	select {
	case <-p.stop:
		return // ended already
	default:
	}
	close(p.stop)
	<-p.done
	p.status.clear()
}

// around ends the progress before r writes the report.
func (p *progress) around(r report.Renderer) report.Renderer {
	if p == nil {
		return r
	}
	return report.RendererFunc(func(w io.Writer, res *types.Result) error {
		p.end()
		return r.Render(w, res)
	})
}
