package cli

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/manifest"
	"github.com/regcheck/regcheck/pin"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/scan"
)

type pinFlags struct {
	registry       registryFlags
	paths          []string
	write          bool
	check          bool
	update         bool
	allowBroken    bool
	pullPolicy     string
	exclude        []string
	imagesOnly     string
	fromRecords    string
	recordsCluster string
	fromCluster    bool
	kube           kubeFlags
	output         string
	followSymlinks bool
}

// pinFormats are the outputs of --check.
var pinFormats = []string{"text", "json", "sarif", "github"}

func newPinCmd(s Streams, g *globals) *cobra.Command {
	f := &pinFlags{}
	cmd := &cobra.Command{
		Use:   "pin [PATH...]",
		Short: "Pin every image reference in manifests to repo:tag@digest",
		Long: `Pin finds every image reference in the manifests under PATH (default: the
current folder; workloads, Lists, multi-document files, compose files and
kustomizations) and pins it to the digest its tag points at now, as
repo:tag@sha256:…, so that an upgrade is a deliberate change. For a
multi-platform image that is the index digest. Only the bytes of each
reference change; comments, order and quoting are kept.

By default pin prints a unified diff and changes nothing; --write edits the
files in place (atomically); --check asks no registry, lists every unpinned
reference with file:line and exits 1 when there is one.

Before pinning, pin walks each digest's tree as scan does and refuses to pin
to one that is broken (the reference is left as is and reported) unless
--allow-broken. A pin whose digest no tag points at is reported: a registry
garbage collector that deletes untagged manifests will delete it.

--from-cluster and --from-records pin each workload's container to the
digest it runs (or last ran) instead, workload by workload: two workloads
on one tag may be pinned to different digests. A runtime that reports a
platform manifest (CRI-O) gets the index the tag points at pinned when that
index lists it; otherwise nothing is pinned (platform-digest). A history
file may hold several clusters: --records-cluster reads only one; without
it, a container whose clusters last ran different digests is left as is
(ambiguous-record). --write replaces a file only if it still holds what pin
read; one edited meanwhile is left as is (changed-on-disk). --write does
not write through a symlink that resolves outside the PATH it was found
under (for a PATH that is a file, outside its folder): such a file is left
as is and reported (unwritable), unless --follow-symlinks.

Only regular files (or symlinks to one) of at most 16 MiB are read; a
named pipe, a device or a symlink to nothing is skipped with a notice
(skipped). Helm templates are skipped with a notice; references reached through YAML
aliases are reported, never edited; a file that does not parse is reported
with file:line, left as is, and the run goes on.

Exit codes: 0 done; 1 an unpinned reference (--check), or a pin refused
because its image is broken; 2 usage error; 3 some files or references
could not be handled (nothing else failed).`,
		Example: `  regcheck pin k8s/                       # show the diff
  regcheck pin --write k8s/
  regcheck pin --check -o github k8s/      # in CI
  regcheck pin --update --write --images-only 'ghcr.io/org/' k8s/
  regcheck pin --from-records history.json --records-cluster prod --write k8s/
  regcheck pin --from-cluster -A --write k8s/  # pin to what runs now`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.paths = args
			return runPin(cmd, s, g, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.write, "write", "w", false, "edit the files in place instead of printing a diff")
	fl.BoolVar(&f.check, "check", false, "change nothing, ask no registry: list unpinned references and exit 1 if any")
	fl.BoolVar(&f.update, "update", false, "also move existing pins to their tag's current digest")
	fl.BoolVar(&f.allowBroken, "allow-broken", false, "pin even to a digest whose tree is broken (the tree is then not walked)")
	fl.StringVar(&f.pullPolicy, "pull-policy", "", "also rewrite imagePullPolicy: Always to this (IfNotPresent or Never) on the containers pinned")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "skip files matching this glob, relative to each PATH; without a slash it matches any path element (repeatable)")
	fl.StringVar(&f.imagesOnly, "images-only", "", "only touch references (as written) matching this regular expression")
	fl.StringVar(&f.fromRecords, "from-records", "", "pin to the digest last recorded running (history file of regcheck record) instead of the tag's")
	fl.StringVar(&f.recordsCluster, "records-cluster", "", "with --from-records, use only the records of this cluster (its name as recorded: kubeconfig context name or server URL)")
	fl.BoolVar(&f.fromCluster, "from-cluster", false, "pin to the digest each workload's container runs now in the cluster (its pods' imageIDs) instead of the tag's")
	f.kube.addTo(fl)
	fl.StringVarP(&f.output, "output", "o", "text", "output of --check: "+strings.Join(pinFormats, ", "))
	fl.BoolVar(&f.followSymlinks, "follow-symlinks", false, "with --write, also write through symlinks that resolve outside the PATH they were found under")
	f.registry.addTo(fl, true)
	return cmd
}

func runPin(cmd *cobra.Command, s Streams, g *globals, f *pinFlags) error {
	c, err := f.config(cmd, g)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err // already carries its exit code
		}
		return usageError(err)
	}
	paths := f.paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	r, err := pin.Run(cmd.Context(), paths, c)
	if err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	if f.check {
		if err := renderCheck(s.Out, f.output, r); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		unpinned := 0
		for _, fd := range r.Findings {
			if fd.Kind == pin.KindUnpinned || fd.Kind == pin.KindInvalid {
				unpinned++
			}
		}
		if f.output != "text" {
			for _, fd := range r.Findings {
				if fd.Kind == pin.KindTemplate || fd.Kind == pin.KindSkipped {
					fmt.Fprintln(s.Err, report.Printable(fd.String()))
				}
			}
		}
		fmt.Fprintf(s.Err, "%d unpinned references in %d files\n", unpinned, len(r.Files))
		return pinExit(r)
	}

	out, info := s.Out, s.Err
	if f.write {
		for _, ch := range r.Changes {
			if ch.Skipped == "" {
				fmt.Fprintln(out, report.Printable(changeLine(ch)))
			}
		}
	} else {
		for _, file := range r.Changed() {
			// The path is escaped; the lines are the file's, which YAML
			// keeps free of control characters (a file with one does
			// not parse, so is never changed).
			out.Write(pin.Diff(report.Printable(file.Path), file.Old, file.New))
		}
		if f.update {
			for _, ch := range r.Changes {
				if ch.Skipped == "" && pin.Pinned(ch.Old) {
					fmt.Fprintln(info, report.Printable(changeLine(ch)))
				}
			}
		}
	}
	for _, fd := range r.Findings {
		fmt.Fprintln(info, report.Printable(fd.String()))
	}
	pinned := 0
	for _, ch := range r.Changes {
		if ch.Skipped == "" && ch.Field == "image" {
			pinned++
		}
	}
	verb := "would pin"
	if f.write {
		verb = "pinned"
	}
	fmt.Fprintf(info, "%s %d references in %d of %d files; %s\n", verb, pinned, len(r.Changed()), len(r.Files), requestSummary(r.Requests))
	return pinExit(r)
}

// runningIn looks up the digest h last saw running for a manifest's
// workload container, in cluster ("" for any). Compose services and
// kustomize entries have no workload to look up. With no cluster, when the
// clusters h holds records of last saw different digests, the answer is a
// *pin.AmbiguousError: a manifest is deployed to one cluster, and which
// one is not for pin to guess.
func runningIn(h *record.History, cluster string) func(manifest.Image) (string, error) {
	return func(img manifest.Image) (string, error) {
		if img.Kind == "Compose" || img.Kind == "Kustomization" {
			return "", pin.ErrNoRecord
		}
		ns := img.Namespace
		if ns == "" {
			ns = "default"
		}
		rs := h.Find(record.Query{Cluster: cluster, Namespace: ns, OwnerKind: img.Kind, OwnerName: img.Name, Container: img.Container})
		if len(rs) == 0 {
			return "", pin.ErrNoRecord
		}
		// Pods of one workload seen on two digests at its latest record (a
		// rollout under way): which one is "what runs" is not for pin to guess.
		if len(rs) > 1 && rs[1].Cluster == rs[0].Cluster && rs[1].LastSeen.Equal(rs[0].LastSeen) && rs[1].Digest != rs[0].Digest {
			both := map[string]string{}
			for _, r := range rs {
				if r.Cluster == rs[0].Cluster && r.LastSeen.Equal(rs[0].LastSeen) {
					both[r.Cluster+" pod "+r.Pod] = r.Digest
				}
			}
			return "", fmt.Errorf("%w; its pods run different digests (a rollout?): pin once it is done, or pin by tag", &pin.AmbiguousError{Digests: both})
		}
		// Each cluster's newest record (rs is newest first).
		newest := map[string]string{}
		for _, r := range rs {
			if _, ok := newest[r.Cluster]; !ok {
				newest[r.Cluster] = r.Digest
			}
		}
		for _, d := range newest {
			if d != rs[0].Digest {
				return "", fmt.Errorf("%w; pass --records-cluster to choose", &pin.AmbiguousError{Digests: newest})
			}
		}
		return rs[0].Digest, nil
	}
}

func (f *pinFlags) config(cmd *cobra.Command, g *globals) (pin.Config, error) {
	c := pin.Config{
		Check: f.check, Write: f.write, Update: f.update, AllowBroken: f.allowBroken,
		PullPolicy: f.pullPolicy, Exclude: f.exclude, FollowSymlinks: f.followSymlinks,
	}
	if !slices.Contains(pinFormats, f.output) {
		return c, fmt.Errorf("-o %q: want %s", f.output, strings.Join(pinFormats, ", "))
	}
	switch {
	case f.check && (f.write || f.update || f.fromRecords != "" || f.fromCluster || f.allowBroken || f.pullPolicy != ""):
		return c, errors.New("--check changes nothing: it cannot be combined with --write, --update, --from-records, --from-cluster, --allow-broken or --pull-policy")
	case f.fromRecords != "" && f.fromCluster:
		return c, errors.New("--from-records and --from-cluster cannot be used together")
	case f.recordsCluster != "" && f.fromRecords == "":
		return c, errors.New("--records-cluster goes with --from-records")
	case !f.fromCluster && f.kube.set():
		return c, errors.New("--kubeconfig, --context, -n and -A go with --from-cluster")
	case !f.check && f.output != "text":
		return c, errors.New("-o is for --check; pin prints a diff or the changes made")
	}
	if slices.Contains(f.paths, "-") {
		return c, errors.New(`pin edits files: "-" (stdin) is not supported`)
	}
	if f.followSymlinks && !f.write {
		return c, errors.New("--follow-symlinks goes with --write")
	}
	for _, p := range f.paths {
		if err := mustExist("", p); err != nil {
			return c, err
		}
	}
	if f.imagesOnly != "" {
		re, err := regexp.Compile(f.imagesOnly)
		if err != nil {
			return c, fmt.Errorf("--images-only: %w", err)
		}
		c.Images = re
	}
	if f.fromRecords != "" {
		h, err := (&record.File{Path: f.fromRecords}).Load(cmd.Context())
		if err != nil {
			return c, fmt.Errorf("--from-records: %w", err)
		}
		if f.recordsCluster != "" && !recorded(h, f.recordsCluster) {
			return c, fmt.Errorf("--records-cluster %q: %s has no records of it; it has %s", f.recordsCluster, f.fromRecords, clusters(h))
		}
		c.Running = runningIn(h, f.recordsCluster)
	}
	if f.fromCluster {
		kt, err := f.kube.connect()
		if err != nil {
			return c, err
		}
		inv, err := kt.inventory(cmd.Context(), g.logger)
		if err != nil {
			return c, err
		}
		// What runs now, as a one-snapshot history: the same lookup as --from-records.
		h := record.NewHistory()
		h.Merge(record.FromInventory(kt.name, time.Now(), inv))
		c.Running = runningIn(h, kt.name)
	}
	if f.check {
		return c, c.Validate()
	}
	sc, err := scan.New(f.registry.options(g)...)
	if err != nil {
		return c, err
	}
	c.Scanner = sc
	return c, c.Validate()
}

// recorded reports whether h holds records of cluster.
func recorded(h *record.History, cluster string) bool {
	return slices.ContainsFunc(h.Records, func(r record.Record) bool { return r.Cluster == cluster })
}

// clusters lists the clusters h holds records of, for messages.
func clusters(h *record.History) string {
	var names []string
	for _, r := range h.Records {
		if q := fmt.Sprintf("%q", r.Cluster); !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// pinExit applies the exit-code contract: 1 when a finding fails the run,
// else 3 when something could not be handled.
func pinExit(r *pin.Report) error {
	incomplete := false
	for _, fd := range r.Findings {
		if fd.Kind.Fails() {
			return &exitError{code: ExitFindings}
		}
		incomplete = incomplete || fd.Kind.Incomplete()
	}
	if incomplete {
		return &exitError{code: ExitIncomplete}
	}
	return nil
}

// changeLine is "file:line: ref → ref@digest", or for a moved pin
// "file:line: repo:tag sha256:old → sha256:new".
func changeLine(ch pin.Change) string {
	oldName, oldDigest, moved := strings.Cut(ch.Old, "@")
	_, newDigest, _ := strings.Cut(ch.New, "@")
	switch {
	case ch.Field != "image":
		return fmt.Sprintf("%s:%d: %s %s → %s", ch.File, ch.Line, ch.Field, ch.Old, ch.New)
	case moved:
		return fmt.Sprintf("%s:%d: %s %s → %s", ch.File, ch.Line, oldName, oldDigest, newDigest)
	}
	return fmt.Sprintf("%s:%d: %s → %s", ch.File, ch.Line, ch.Old, ch.New)
}

// requestSummary is "N registry requests (kind n, …)".
func requestSummary(rc []scan.RequestCount) string {
	total := 0
	byKind := map[string]int{}
	var kinds []string
	for _, c := range rc {
		total += c.Count
		if byKind[c.Kind] == 0 {
			kinds = append(kinds, c.Kind)
		}
		byKind[c.Kind] += c.Count
	}
	if total == 0 {
		return "0 registry requests"
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, byKind[k])
	}
	return fmt.Sprintf("%d registry requests (%s)", total, strings.Join(parts, ", "))
}

// renderCheck writes --check's findings in format.
func renderCheck(w io.Writer, format string, r *pin.Report) error {
	switch format {
	case "json":
		findings := r.Findings
		if findings == nil {
			findings = []pin.Finding{}
		}
		return report.WriteJSON(w, struct {
			Files    int           `json:"files"`
			Findings []pin.Finding `json:"findings"`
		}{len(r.Files), findings})
	case "sarif":
		return renderSARIF(w, r)
	case "github":
		as := make([]report.Annotation, len(r.Findings))
		for i, fd := range r.Findings {
			as[i] = report.Annotation{Level: report.GitHubLevel(fd.Kind.Level()), File: fd.File, Line: fd.Line, Title: string(fd.Kind), Message: fd.Message}
		}
		return report.GitHubAnnotations(w, as)
	}
	for _, fd := range r.Findings {
		if _, err := fmt.Fprintln(w, report.Printable(fd.String())); err != nil {
			return err
		}
	}
	return nil
}

// The SARIF model lives in package report, shared with scan -o sarif;
// pin_test.go reads the log through these names.
type (
	sarifLog    = report.SARIFLog
	sarifResult = report.SARIFResult
)

// renderSARIF writes --check's findings as SARIF 2.1.0: one rule per pin
// kind, one result per finding at its file and line.
func renderSARIF(w io.Writer, r *pin.Report) error {
	d := report.SARIFDriver{Name: "regcheck", Version: report.ToolVersion(), InformationURI: report.InformationURI}
	index := map[pin.Kind]int{}
	for i, k := range pin.Kinds {
		d.Rules = append(d.Rules, report.SARIFRule{
			ID: string(k), Name: string(k), ShortDescription: report.SARIFText{Text: k.Describe()},
			DefaultConfiguration: report.SARIFConfiguration{Level: k.Level()},
		})
		index[k] = i
	}
	run := report.SARIFRun{Tool: report.SARIFTool{Driver: d}, Results: []report.SARIFResult{}}
	for _, fd := range r.Findings {
		run.Results = append(run.Results, report.SARIFResult{
			RuleID: string(fd.Kind), RuleIndex: index[fd.Kind], Level: fd.Kind.Level(),
			Message: report.SARIFText{Text: fd.Message}, Locations: []report.SARIFLocation{report.SARIFFile(fd.File, fd.Line)},
		})
	}
	return report.WriteSARIF(w, run)
}
