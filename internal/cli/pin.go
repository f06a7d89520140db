package cli

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/pin"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/yamlfile"
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
	recordsAt      string
	fromCluster    bool
	kube           kubeFlags
	output         string
	followSymlinks bool
	helmValues     []string
	offline        bool
	fetchRemote    bool
	policies       policyFlags
}

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
(ambiguous-record). --records-at TIME pins instead to the digest each
container was recorded running at TIME (RFC 3339, or a duration ago such
as 2h): what the transitions regcheck watch recorded say, else the records
seen at TIME, else the last seen before it; a container that ran under
another image string then is left as is (no-record). It pins a workload
back after an unplanned upgrade (a tag moved and a restart pulled other
bits), where --from-records alone pins to the new digest; the watcher's
advice gives the command, with the millisecond before the change as TIME.
A single-platform manifest (a tag on an image that is not an index, or a
running digest that is one) is not pinned where a node the workload may
run on cannot run it (platform-mismatch: the manifest's platform is its
config's os/architecture/variant): with --from-cluster, the nodes are
those scan --cluster finds its pods eligible for (every node for a
workload the cluster does not run); without, --platform names the
platforms the pods will run on (linux/arm64; repeatable or
comma-separated). The finding names the index to pin instead when a tag
of the repository reaches one that lists the manifest. An index is pinned
as it is: each node pulls its own child.
--write replaces a file only if it still holds what pin read; one edited
meanwhile is left as is (changed-on-disk). --write does
not write through a symlink that resolves outside the PATH it was found
under (for a PATH that is a file, outside its folder): such a file is left
as is and reported (unwritable), unless --follow-symlinks.

A folder with a kustomization or a Chart.yaml is rendered as scan -f
renders it, and each image is pinned where it is set: the images: entry
that names it last gains digest: (and newTag: when it renames without
one), a manifest's image: is pinned only when no kustomization renames it
in a way that would carry the digest along, a values key gains @digest
(or the digest key the chart's template uses is set). Templates are
never edited; a reference no single place sets is reported, with why.
Every kustomization and chart is rendered again with the edits first: an
edit that would change anything but the images it pins is not made.

Only regular files (or symlinks to one) of at most 16 MiB are read; a
named pipe, a device or a symlink to nothing is skipped with a notice
(skipped). Helm templates are skipped with a notice; references reached through YAML
aliases are reported, never edited; a file that does not parse is reported
with file:line, left as is, and the run goes on.

Exit codes: 0 done; 1 an unpinned reference (--check), or a pin refused
because its image is broken or some node cannot run it; 2 usage error; 3 some files or references
could not be handled, or an image policy could not be read (listing the
cluster's forbidden, a policy in a file that does not decode: each is
reported, policy-unread, and the rest is pinned without it), and nothing
else failed.`,
		Example: `  regcheck pin k8s/                       # show the diff
  regcheck pin --write k8s/
  regcheck pin --check -o github k8s/      # in CI
  regcheck pin --update --write --images-only 'ghcr.io/org/' k8s/
  regcheck pin --from-records history.json --records-cluster prod --write k8s/
  regcheck pin --from-records history.json --records-at 2026-12-02T06:33:29Z --write k8s/  # pin back
  regcheck pin --from-cluster -A --write k8s/  # pin to what runs now
  regcheck pin --platform linux/amd64,linux/arm64 --write k8s/  # pods run on both`,
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
	fl.StringVar(&f.pullPolicy, "pull-policy", "", "also rewrite imagePullPolicy: Always to this (IfNotPresent or Never) on the containers pinned, and an image volume's pullPolicy: Always")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "skip files matching this glob, relative to each PATH; without a slash it matches any path element (repeatable)")
	fl.StringVar(&f.imagesOnly, "images-only", "", "only touch references (as written) matching this regular expression")
	fl.StringVar(&f.fromRecords, "from-records", "", "pin to the digest last recorded running (history file of regcheck record) instead of the tag's")
	fl.StringVar(&f.recordsCluster, "records-cluster", "", "with --from-records, use only the records of this cluster (its name as recorded: kubeconfig context name or server URL)")
	fl.StringVar(&f.recordsAt, "records-at", "", "with --from-records, pin to the digest recorded running at this time (RFC 3339, or a duration ago such as 2h) instead of the latest: to pin back after an unplanned upgrade")
	fl.BoolVar(&f.fromCluster, "from-cluster", false, "pin to the digest each workload's container runs now in the cluster (its pods' imageIDs) instead of the tag's")
	f.kube.addTo(fl)
	f.policies.addTo(fl, pinPoliciesUsage)
	fl.StringVarP(&f.output, "output", "o", "text", "output of --check: "+strings.Join(report.PinCheckFormats, ", "))
	fl.BoolVar(&f.followSymlinks, "follow-symlinks", false, "with --write, also write through symlinks that resolve outside the PATH they were found under")
	addHelmValues(fl, &f.helmValues)
	addOffline(fl, &f.offline)
	addFetchRemote(fl, &f.fetchRemote)
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
	addPinHints(r)
	if f.check {
		err = report.PinCheck(s.Out, s.Err, f.output, r)
	} else {
		err = report.Pin(s.Out, s.Err, r)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return pinExit(r)
}

// chooseCluster adds, to a Running error that says the clusters of a
// history disagree, the flag that picks one.
func chooseCluster(running func(yamlfile.Image) (string, error)) func(yamlfile.Image) (string, error) {
	return func(img yamlfile.Image) (string, error) {
		d, err := running(img)
		var amb *pin.AmbiguousError
		if errors.As(err, &amb) && !amb.Rollout {
			err = fmt.Errorf("%w; pass --records-cluster to choose", err)
		}
		return d, err
	}
}

func (f *pinFlags) config(cmd *cobra.Command, g *globals) (pin.Config, error) {
	c := pin.Config{
		Check: f.check, Write: f.write, Update: f.update, AllowBroken: f.allowBroken,
		PullPolicy: f.pullPolicy, Exclude: f.exclude, FollowSymlinks: f.followSymlinks,
		HelmValues:  helmValues(f.helmValues),
		Fetch:       chartFetch(g, f.offline, f.registry),
		FetchRemote: f.fetchRemote,
	}
	if err := fetchConflict(f.offline, f.fetchRemote); err != nil {
		return c, err
	}
	if !slices.Contains(report.PinCheckFormats, f.output) {
		return c, fmt.Errorf("-o %q: want %s", f.output, strings.Join(report.PinCheckFormats, ", "))
	}
	if err := f.policies.load(); err != nil {
		return c, err
	}
	switch {
	case f.check && (f.write || f.update || f.fromRecords != "" || f.fromCluster || f.allowBroken || f.pullPolicy != ""):
		return c, errors.New("--check changes nothing: it cannot be combined with --write, --update, --from-records, --from-cluster, --allow-broken or --pull-policy")
	case f.fromRecords != "" && f.fromCluster:
		return c, errors.New("--from-records and --from-cluster cannot be used together")
	case f.recordsCluster != "" && f.fromRecords == "":
		return c, errors.New("--records-cluster goes with --from-records")
	case f.recordsAt != "" && f.fromRecords == "":
		return c, errors.New("--records-at goes with --from-records")
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
	if err := validHelmValues(f.helmValues, true); err != nil {
		return c, err
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
		c.Running = chooseCluster(pin.RunningFrom(h, f.recordsCluster))
		if f.recordsAt != "" {
			at, err := parseRecordsAt(f.recordsAt, time.Now())
			if err != nil {
				return c, err
			}
			c.Running = chooseCluster(pin.RunningAt(h, f.recordsCluster, at))
		}
	}
	var kt *kubeTarget // with --from-cluster, for its image policies
	if f.fromCluster {
		var err error
		kt, err = f.kube.connect()
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
		c.Running = pin.RunningFrom(h, kt.name)
		if len(f.registry.platforms) == 0 {
			// A child lost for a platform no node runs refuses no pin.
			f.registry.platforms = inv.Platforms()
		}
		c.Nodes = pin.NodesFrom(inv)
	} else if len(f.registry.platforms) > 0 {
		c.Nodes = pin.NodesOf(f.registry.platforms...)
	}
	if f.check {
		return c, c.Validate()
	}
	sc, err := scan.New(f.registry.options(g)...)
	if err != nil {
		return c, err
	}
	c.Scanner = sc
	if c.Admission, c.Problems, err = pinAdmission(cmd.Context(), f, kt, sc, g.logger); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// parseRecordsAt reads --records-at: an RFC 3339 time, or a duration
// before now.
func parseRecordsAt(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--records-at %q: want an RFC 3339 time (2026-12-02T06:33:29Z) or a duration ago (2h)", v)
	}
	return now.Add(-d), nil
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
func pinExit(r *pinresult.Report) error {
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
