package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/regcheck/regcheck/manifest"
	"github.com/regcheck/regcheck/scan"
)

// inputs says where image references come from.
type inputs struct {
	args       []string
	imagesFrom string
	filenames  []string
}

// targets reads every reference, keeping where each came from. Problems with
// one file are returned alongside what could be read: the run goes on.
func (in inputs) targets(stdin io.Reader) ([]scan.Target, []error) {
	var out []scan.Target
	var problems []error
	for _, a := range in.args {
		out = append(out, scan.Target{Ref: a, Uses: []scan.Use{{Source: "args"}}})
	}
	if in.imagesFrom != "" {
		t, err := readImageList(in.imagesFrom, stdin)
		out = append(out, t...)
		if err != nil {
			problems = append(problems, err)
		}
	}
	if len(in.filenames) > 0 {
		imgs, errs := manifest.Find(in.filenames)
		for _, err := range errs {
			var skip *manifest.SkipError
			if errors.As(err, &skip) {
				continue // reported by the caller as a notice, not a problem
			}
			problems = append(problems, err)
		}
		for _, img := range imgs {
			out = append(out, scan.Target{Ref: img.Ref, Uses: []scan.Use{{
				Source: "file", File: img.File, Line: img.Line, Kind: img.Kind,
				Namespace: img.Namespace, Name: img.Name, Container: img.Container, PullPolicy: img.PullPolicy,
			}}})
		}
		for _, err := range errs {
			var skip *manifest.SkipError
			if errors.As(err, &skip) {
				problems = append(problems, notice{err})
			}
		}
	}
	return out, problems
}

// validate rejects inputs that cannot all be read: standard input once.
func (in inputs) validate() error {
	if in.imagesFrom == "-" && slices.Contains(in.filenames, "-") {
		return errors.New("--images-from - and -f - both read standard input: give one of them a file")
	}
	return nil
}

// read returns targets, logging each problem with an input: a skipped Helm
// template as a warning, an unreadable file as an error that makes the run
// incomplete (the second result).
func (in inputs) read(stdin io.Reader, logger *slog.Logger) ([]scan.Target, bool) {
	targets, problems := in.targets(stdin)
	incomplete := false
	for _, p := range problems {
		var n notice
		if errors.As(p, &n) {
			logger.Warn(p.Error())
			continue
		}
		logger.Error("input skipped", "err", p)
		incomplete = true
	}
	return targets, incomplete
}

// notice is a problem that does not make a run incomplete (a Helm template
// skipped on purpose).
type notice struct{ error }

// readImageList reads one reference per line; # starts a comment; "-" is stdin.
func readImageList(path string, stdin io.Reader) ([]scan.Target, error) {
	var r io.Reader = stdin
	name := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--images-from: %w", err)
		}
		defer f.Close()
		r, name = f, path
	}
	var out []scan.Target
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		out = append(out, scan.Target{Ref: text, Uses: []scan.Use{{Source: "images-from", File: name, Line: line}}})
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading %s: %w", name, err)
	}
	return out, nil
}
