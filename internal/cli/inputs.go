package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/render"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

// inputs says where image references come from.
type inputs struct {
	args       []string
	imagesFrom string
	filenames  []string
	helmValues []string // --helm-values [CHART=]FILE, for the charts under filenames
	// fetch says how chart dependencies are fetched; nil fetches none
	// (--offline, or a command that fetches nothing).
	fetch *render.Fetch
	// fetchRemote lets kustomize fetch remote bases (--fetch-remote).
	fetchRemote bool
}

// renderOptions are the options the charts and kustomizations under
// filenames are rendered with.
func (in inputs) renderOptions() []render.Option {
	opts := []render.Option{render.WithValues(helmValues(in.helmValues)...)}
	if in.fetch != nil {
		opts = append(opts, render.WithFetch(*in.fetch))
	}
	if in.fetchRemote {
		opts = append(opts, render.WithRemote())
	}
	return opts
}

// chartFetch is how chart dependencies are fetched: into regcheck/charts
// in the user cache folder, with Helm's own settings (its environment
// variables and files), the hosts of --insecure-registry over plain
// HTTP, OCI registries trusted with the CA files of --ca-file; nil with
// --offline or when there is no user cache folder.
func chartFetch(g *globals, offline bool, r registryFlags) *render.Fetch {
	if offline {
		return nil
	}
	var base http.RoundTripper
	if roots, err := scan.LoadRoots(r.caFiles...); err == nil && roots != nil {
		base = scan.NewBaseTransport(roots, nil, 0)
	}
	dir, err := userCacheDir()
	if err != nil {
		g.logger.Debug("no chart cache: chart dependencies are not fetched", "err", err)
		return nil
	}
	return &render.Fetch{Dir: filepath.Join(dir, "regcheck", "charts"), Insecure: r.insecure, Transport: base, Timeout: r.timeout}
}

// addFetchRemote adds --fetch-remote to a command that renders
// kustomizations.
func addFetchRemote(fl *pflag.FlagSet, into *bool) {
	fl.BoolVar(into, "fetch-remote", false, "let kustomize fetch the remote bases and resources kustomizations name (git clone, HTTP GET), as kustomize build does; by default each is left out with a notice and the rest rendered")
}

// fetchConflict rejects --fetch-remote with --offline.
func fetchConflict(offline, remote bool) error {
	if offline && remote {
		return errors.New("--fetch-remote and --offline: choose one")
	}
	return nil
}

// addOffline adds --offline to a command that renders charts.
func addOffline(fl *pflag.FlagSet, into *bool) {
	fl.BoolVar(into, "offline", false, "fetch no chart: dependencies not in a chart's charts/ folder and the charts of Flux HelmReleases are left out with a notice (by default fetched as helm dependency build does, with Helm's repositories file and registry config)")
}

// read returns targets, logging each problem with an input (logInputErrors)
// and reporting whether one makes the run incomplete (the second result).
func (in inputs) read(stdin io.Reader, logger *slog.Logger) ([]types.Target, bool) {
	targets, problems := in.collect(stdin)
	return targets, logInputErrors(logger, problems)
}

// collect reads every reference, keeping where each came from, and returns
// every problem with an input as a scan.InputError beside what could be
// read: one bad file never stops the run. A Helm template or a path that
// is not a regular file is a notice.
func (in inputs) collect(stdin io.Reader) ([]types.Target, []types.InputError) {
	var out []types.Target
	var problems []types.InputError
	for _, a := range in.args {
		out = append(out, types.Target{Ref: a, Uses: []types.Use{{Source: "args"}}})
	}
	if in.imagesFrom != "" {
		t, err := readImageList(in.imagesFrom, stdin)
		out = append(out, t...)
		if err != nil {
			problems = append(problems, inputError(imagesFromSource(in.imagesFrom), err))
		}
	}
	for _, path := range in.filenames {
		var imgs []yamlfile.Image
		var errs []error
		if path == "-" {
			imgs, errs = readManifestStdin(stdin)
		} else {
			imgs, errs = render.Images(path, in.renderOptions()...)
		}
		for _, err := range errs {
			problems = append(problems, inputError(path, err))
		}
		t, notices := fileTargets(imgs)
		out, problems = append(out, t...), append(problems, notices...)
	}
	return out, problems
}

// fileTargets turns the images read from files into targets, each with
// its use. A string in an image field that does not parse as an image
// reference (imageref.Parse: a placeholder such as <YOUR-IMAGE>, ${IMAGE},
// $(params.x) or {{ .Values.x }} left unresolved, an empty string) is no
// image a node could pull: it is a notice at its file:line:column, never
// walked and counted in no verdict. This is the one place where a file's
// image becomes a scan target.
func fileTargets(imgs []yamlfile.Image) ([]types.Target, []types.InputError) {
	var out []types.Target
	var notices []types.InputError
	for _, img := range imgs {
		if _, err := imageref.Parse(img.Ref); err != nil {
			notices = append(notices, types.InputError{
				Source: img.File, Line: img.Line, Column: img.Column, Notice: true,
				Message: types.Capped(fmt.Sprintf("not an image reference: %q", redact.String(img.Ref))),
			})
			continue
		}
		u := types.Use{
			Source: "file", File: img.File, Line: img.Line, Kind: img.Kind,
			Namespace: img.Namespace, Name: img.Name, Container: img.Container, PullPolicy: img.PullPolicy,
		}
		if img.Field == yamlfile.FieldImageVolumes {
			u.Container, u.Volume = "", img.Container
		}
		out = append(out, types.Target{Ref: img.Ref, Uses: []types.Use{u}})
	}
	return out, notices
}

// helmValues reads --helm-values: [CHART=]FILE each.
func helmValues(flags []string) []render.ValuesFile {
	var out []render.ValuesFile
	for _, v := range flags {
		out = append(out, render.ParseValuesFile(v))
	}
	return out
}

// addHelmValues adds --helm-values to a command that reads manifests,
// read into into.
func addHelmValues(fl *pflag.FlagSet, into *[]string) {
	fl.StringArrayVar(into, "helm-values", nil, "values file for the Helm charts found, after each chart's values.yaml, as helm -f (repeatable; CHART=FILE for the chart in folder CHART only)")
}

// readStdin reads standard input whole, up to yamlfile.MaxFileSize bytes:
// more is an error, as for a file.
func readStdin(stdin io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, yamlfile.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	if len(data) > yamlfile.MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: "stdin", Err: yamlfile.ErrTooLarge}
	}
	return data, nil
}

// readManifestStdin reads manifests from standard input.
func readManifestStdin(stdin io.Reader) ([]yamlfile.Image, []error) {
	data, err := readStdin(stdin)
	if err != nil {
		return nil, []error{err}
	}
	imgs, errs := yamlfile.Read("stdin", data)
	imgs, notes := yamlfile.ResolveParams(imgs, []yamlfile.Source{{Name: "stdin", Data: data}})
	return imgs, append(errs, notes...)
}

// inputError turns a problem reading the input named source into a
// scan.InputError naming the file (and line) concerned: a parse error its
// file:line, a problem in a folder the file in it.
func inputError(source string, err error) types.InputError {
	ie := types.InputError{Source: source, Message: err.Error()}
	var (
		skip  *yamlfile.SkipError
		parse *yamlfile.ParseError
		rerr  *render.Error
		note  *yamlfile.Notice
		pe    *fs.PathError
		line  *lineError
	)
	switch {
	case errors.As(err, &skip):
		ie.Source, ie.Message, ie.Notice = skip.File, "skipped: "+skip.Reason, true
	case errors.As(err, &rerr):
		ie.Source, ie.Line, ie.Message, ie.Notice = rerr.File, rerr.Line, rerr.Msg, rerr.Notice
	case errors.As(err, &note):
		ie.Source, ie.Line, ie.Column, ie.Message, ie.Notice = note.File, note.Line, note.Column, note.Msg, true
	case errors.As(err, &parse):
		ie.Source, ie.Line, ie.Column, ie.Message = parse.File, parse.Line, parse.Column, parse.Msg
	case errors.As(err, &line):
		ie.Line, ie.Message = line.line, line.err.Error()
	case errors.As(err, &pe):
		ie.Source, ie.Message = pe.Path, pe.Err.Error()
		if pe.Op != "" && pe.Op != "walk" && pe.Op != "read" {
			ie.Message = pe.Op + ": " + ie.Message
		}
	}
	if ie.Source == "-" {
		ie.Source = "stdin"
	}
	// Every message built from an input goes through the one redaction
	// rule here, whoever built it (a remote base's or a repoURL's
	// userinfo, quoted by render).
	ie.Source, ie.Message = redact.String(ie.Source), types.Capped(redact.String(ie.Message))
	return ie
}

// imagesFromSource names the source of --images-from: its path, or stdin.
func imagesFromSource(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}

// lineError is a problem at one line of an --images-from list.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// validate rejects inputs that cannot all be read: standard input twice, a
// path that does not exist.
func (in inputs) validate() error {
	if in.imagesFrom == "-" && slices.Contains(in.filenames, "-") {
		return errors.New("--images-from - and -f - both read standard input: give one of them a file")
	}
	if in.imagesFrom != "" && in.imagesFrom != "-" {
		if err := mustExist("--images-from", in.imagesFrom); err != nil {
			return err
		}
	}
	for _, p := range in.filenames {
		if p == "-" {
			continue
		}
		if err := mustExist("-f", p); err != nil {
			return err
		}
	}
	return validHelmValues(in.helmValues, len(in.filenames) > 0)
}

// validHelmValues rejects --helm-values without -f (or PATH), naming a
// file that is not there, or a CHART that is no chart's folder.
func validHelmValues(flags []string, files bool) error {
	if len(flags) > 0 && !files {
		return errors.New("--helm-values is for the charts of -f: give -f")
	}
	for _, v := range flags {
		vf := render.ParseValuesFile(v)
		if err := mustExist("--helm-values", vf.File); err != nil {
			if chart, _, ok := strings.Cut(v, "="); ok && mustExist("", chart) == nil {
				return fmt.Errorf("--helm-values %s: %s holds no Chart.yaml", v, chart)
			}
			return err
		}
	}
	return nil
}

// mustExist is an error naming flag (if any) and path when nothing is at
// path (a symlink to nothing included): a typo, for a usage error, not an
// input to skip.
func mustExist(flag, path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if flag != "" {
			path = flag + " " + path
		}
		return fmt.Errorf("%s: no such file or folder", path)
	}
	return nil
}

// logInputErrors logs each input problem: a notice as a warning, an input
// not read as an error. It reports whether any was not a notice: the run
// is then incomplete.
func logInputErrors(logger *slog.Logger, ies []types.InputError) (incomplete bool) {
	for _, ie := range ies {
		loc := ie.Source
		if ie.Line > 0 {
			loc = fmt.Sprintf("%s:%d", ie.Source, ie.Line)
		}
		if ie.Notice {
			logger.Warn("input skipped", "input", loc, "reason", ie.Message)
			continue
		}
		logger.Error("input not read", "input", loc, "err", ie.Message)
		incomplete = true
	}
	return incomplete
}

// readImageList reads one reference per line; # starts a comment; "-" is
// stdin. A file is read only if it is a regular file (or a symlink to one);
// a file or stdin larger than yamlfile.MaxFileSize is not read at all.
func readImageList(path string, stdin io.Reader) ([]types.Target, error) {
	name := "stdin"
	var data []byte
	var err error
	if path == "-" {
		data, err = readStdin(stdin)
	} else {
		name = path
		data, err = yamlfile.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var out []types.Target
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 1
	for ; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		out = append(out, types.Target{Ref: text, Uses: []types.Use{{Source: "images-from", File: name, Line: line}}})
	}
	if err := sc.Err(); err != nil {
		return out, &lineError{line: line, err: err}
	}
	return out, nil
}
