package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/scan"
	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/types"
)

type scanFlags struct {
	inputs
	registry    registryFlags
	cluster     bool
	pullSecrets bool
	kube        kubeFlags
	storage     storageFlags
	shard       shardFlag
	output      string
	failOn      string
	metrics     metricsFlags
	policies    policyFlags
	offline     bool
}

func newScanCmd(s Streams, g *globals) *cobra.Command {
	f := &scanFlags{}
	cmd := &cobra.Command{
		Use:   "scan [IMAGE...]",
		Short: "Walk images down to their blobs and report what a node could no longer pull",
		Long: `Scan resolves each image reference and walks it the way a node pulls it: the tag,
the manifest or index, every child manifest, and the config and layer blobs of
each. It reports every image as ok, at-risk, unknown or broken.

A registry fault (401, 403, 429, 5xx, a timeout) proves nothing about an image:
such an image is unknown, never broken.

Every input that could not be read (a file that does not parse, one that
cannot be opened) is in the report, in every format, and makes the scan
incomplete. Only regular files (or symlinks to one) of at most 16 MiB are
read: a named pipe, a device or a symlink to nothing is skipped with a
notice that does not (pipe manifests to -f - instead), as is a Helm
template, a JSON file that holds no Kubernetes object (a dashboard), and a
string in an image field that is no image reference (a placeholder,
${IMAGE}, a parameter nothing in the tree fills): such a string is never
scanned. Tekton $(params.x) and Argo Workflows {{inputs.parameters.x}} are
filled in from their defaults and the values passed in the tree. A path
given to -f or --images-from that does not exist is a usage error. When
the inputs hold no image reference, the report is still written, with what
was skipped or not read, and the scan exits 2 (nothing to check) or, when
an input could not be read, 3. An input's error is cut to 1 KiB in every
format, with how much was left out.

A folder with a kustomization is read as kustomize builds it: each
kustomization no other one in the tree includes is rendered (in memory;
remote bases are fetched only with --fetch-remote, else a notice says so), and each image's use
points at the line that sets it: the images: entry that names it last, or
the manifest's image:. A folder with a Chart.yaml is rendered with Helm's
engine from its values.yaml and each --helm-values file, and each use
points at the values key that sets the reference (the tag's, for a
repository and tag in two keys). The files they own are not read on their
own; a placeholder an overlay renames is never scanned.

With --storage DIR (the registry's rootdirectory, as gc-check reads it) the
same walk reads the registry's filesystem storage instead of its API: no
HTTP, the same verdicts. A storage holds no host name: the images must name
one registry, or --registry says which; images on other hosts are notices,
not checked. Stop the registry, or keep it idle, while its storage is read:
a push meanwhile can make an image look broken.

With --shard INDEX/COUNT only the images whose repository falls in part
INDEX of COUNT are scanned (a hash of the normalized repository name, the
same on every machine), so that the pods of an Indexed Job split one scan.
Without --shard, JOB_COMPLETION_INDEX (set by Kubernetes in an Indexed Job)
and REGCHECK_SHARD_COUNT give it; one without the other is a usage error.

Exit codes: 0 clean; 1 a finding at or above --fail-on; 2 usage or
configuration error; 3 incomplete (some images or inputs could not be checked,
nothing at or above --fail-on found).`,
		Example: `  regcheck scan nginx:1.27 ghcr.io/org/app@sha256:…
  regcheck scan -f k8s/ -f extra/deploy.yaml
  kubectl get pods -A -o jsonpath='{..image}' | tr ' ' '\n' | regcheck scan --images-from -
  regcheck scan -f k8s/ -o json --platform linux/amd64
  regcheck scan -f k8s/ --storage /var/lib/registry --registry reg.example.com
  regcheck scan --cluster -A --shard 2/4 -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = args
			return runScan(cmd, s, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.filenames, "filename", "f", nil, "Kubernetes YAML file or folder to read image references from (repeatable; folders are read recursively)")
	fl.StringVar(&f.imagesFrom, "images-from", "", "file with one image reference per line (# comments; - for stdin)")
	addHelmValues(fl, &f.helmValues)
	addOffline(fl, &f.offline)
	addFetchRemote(fl, &f.fetchRemote)
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(outputFormats(), ", "))
	fl.StringVar(&f.failOn, "fail-on", "broken", "exit 1 when a finding is at least this bad: broken, high, at-risk, info or never")
	f.registry.addTo(fl, true)
	fl.BoolVar(&f.cluster, "cluster", false, "scan what a live cluster runs and will run: pods and the templates of their workloads, with drift against the running digests")
	fl.BoolVar(&f.pullSecrets, "pull-secrets", false, "with --cluster, use each pod's imagePullSecrets and its service account's, as the kubelet does (needs get on secrets and serviceaccounts)")
	f.kube.addTo(fl)
	f.metrics.addTo(fl)
	f.storage.addTo(fl)
	f.shard.addTo(fl)
	f.policies.addTo(fl, scanPoliciesUsage)
	return cmd
}

func runScan(cmd *cobra.Command, s Streams, g *globals, f *scanFlags) error {
	if err := f.check(); err != nil {
		return usageError(err)
	}
	f.fetch = chartFetch(g, f.offline, f.registry)
	run, err := newScanRun(cmd.Context(), s, g, f)
	if err != nil {
		return usageError(err)
	}
	defer run.prog.end()
	if f.cluster {
		return run.cluster(cmd.Context())
	}
	return run.inputs(cmd.Context())
}

// check rejects flags that do not go together.
func (f *scanFlags) check() error {
	if err := f.validate(); err != nil {
		return err
	}
	if err := fetchConflict(f.offline, f.fetchRemote); err != nil {
		return err
	}
	if err := f.policies.load(); err != nil {
		return err
	}
	hasInputs := len(f.args) > 0 || f.imagesFrom != "" || len(f.filenames) > 0
	switch {
	case f.cluster && hasInputs:
		return errors.New("--cluster reads its images from the cluster: give no references, --images-from or -f with it")
	case !f.cluster && !hasInputs:
		return errors.New("nothing to scan: give image references, --images-from, -f or --cluster")
	case !f.cluster && f.kube.set():
		return errors.New("--kubeconfig, --context, -n and -A go with --cluster")
	case f.pullSecrets && !f.cluster:
		return errors.New("--pull-secrets goes with --cluster")
	}
	return f.storage.validate(f.cluster)
}

// scanRun is one scan command's run: what its flags made, before anything
// is contacted.
type scanRun struct {
	s         Streams
	g         *globals
	f         *scanFlags
	threshold types.Severity
	renderer  report.Renderer
	shard     *types.Shard
	opts      []scan.Option
	scanner   *scan.Scanner
	prog      *progress
	// mirrorProblems are the cluster's mirror sets not used.
	mirrorProblems []types.InputError
}

// newScanRun parses the flags into a run: the threshold, the renderer
// (publishing metrics and clearing the progress line around it), the
// shard, and a Scanner whose options are validated.
func newScanRun(ctx context.Context, s Streams, g *globals, f *scanFlags) (*scanRun, error) {
	r := &scanRun{s: s, g: g, f: f}
	var err error
	if r.threshold, err = parseFailOn(f.failOn); err != nil {
		return nil, err
	}
	if r.renderer, err = outputRenderer(f.output); err != nil {
		return nil, err
	}
	pub, err := f.metrics.publisher("scan")
	if err != nil {
		return nil, err
	}
	if r.shard, err = f.shard.shard(os.Getenv); err != nil {
		return nil, err
	}
	r.prog = startProgress(g) // a progress line when stderr is a terminal
	r.renderer = r.prog.around(pub.around(ctx, r.renderer))
	r.opts = append(f.registry.options(g), r.prog.options()...)
	if r.scanner, err = scan.New(r.opts...); err != nil {
		r.prog.end()
		return nil, err
	}
	return r, nil
}

// cluster scans what the cluster runs and will run.
func (r *scanRun) cluster(ctx context.Context) error {
	kt, err := r.f.kube.connect()
	if err != nil {
		return err
	}
	inv, err := kt.inventory(ctx, r.g.logger)
	if err != nil {
		return err
	}
	inv = shardInventory(r.shard, inv)
	if err := r.clusterPullPath(ctx, kt); err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	var res *types.Result
	if r.f.pullSecrets {
		res, err = r.pullSecretsCheck(ctx, kt, inv)
	} else if res, err = cluster.Check(ctx, r.scanner, inv); err == nil {
		err = r.clusterAdmission(ctx, kt, res)
	}
	if err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	res.InputErrors = append(res.InputErrors, r.mirrorProblems...)
	return r.finish(res)
}

// pullSecretsCheck walks inv with each pod's pull secrets and applies the
// cluster's image policies to each credentials group with its own
// Scanner: the signatures are read with the credentials the images are.
func (r *scanRun) pullSecretsCheck(ctx context.Context, kt *kubeTarget, inv *inventory.Inventory) (*types.Result, error) {
	check, problems, err := r.clusterPolicyCheck(ctx, kt)
	if err != nil {
		return nil, err
	}
	res, err := cluster.CheckWithPullSecretsThen(ctx, kt.client, inv, check, r.opts...)
	if err != nil {
		return nil, err
	}
	res.InputErrors = append(res.InputErrors, problems...)
	return res, nil
}

// clusterPullPath walks the images through the cluster's OpenShift mirror
// sets, as its CRI-O nodes pull them, unless --registries-config names
// the nodes' configuration (on OpenShift, the file the MCO rendered from
// the same objects).
func (r *scanRun) clusterPullPath(ctx context.Context, kt *kubeTarget) error {
	if r.f.registry.pullPath != "" {
		r.g.logger.Debug("mirror sets not read: --registries-config is the nodes' configuration")
		return nil
	}
	cfg, problems, err := kt.readMirrorSets(ctx, r.g.logger)
	r.mirrorProblems = problems
	if err != nil || cfg == nil {
		return err
	}
	r.opts = append(r.opts, scan.WithPullPath(cfg))
	if r.scanner, err = scan.New(r.opts...); err != nil {
		return fmt.Errorf("walking through the mirror sets: %w", err)
	}
	return nil
}

// inputs scans the references of the arguments, --images-from and -f,
// over the registry or, with --storage, its files.
func (r *scanRun) inputs(ctx context.Context) error {
	targets, inputErrs := r.f.collect(r.s.In)
	incomplete := logInputErrors(r.g.logger, inputErrs)
	if len(targets) == 0 {
		// Nothing to scan, but the report is written all the same, in
		// every format: it says which inputs were skipped or not read.
		res := &types.Result{Started: time.Now(), InputErrors: inputErrs, Shard: r.shard}
		if err := r.renderer.Render(r.s.Out, res); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		if !incomplete {
			return usageError(errors.New("no image references found in the inputs"))
		}
		return &exitError{code: ExitIncomplete, err: errors.New("no image references could be read")}
	}
	scanner, host := r.scanner, ""
	if r.f.storage.dir != "" {
		var err error
		if scanner, host, err = r.f.storage.scanner(targets, r.opts); err != nil {
			return err
		}
	}
	targets, notices := r.f.storage.onHost(shardTargets(r.shard, targets), host)
	logInputErrors(r.g.logger, notices)
	res, err := scanner.Run(ctx, targets)
	if err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	res.InputErrors = append(append(res.InputErrors, inputErrs...), notices...)
	if err := r.fileAdmission(ctx, res); err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	return r.finish(res)
}

// finish renders a result and applies the exit-code contract to it.
func (r *scanRun) finish(res *types.Result) error {
	res.Shard = r.shard
	addFlagHints(res)
	if err := r.renderer.Render(r.s.Out, res); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return exitFor(res, r.threshold)
}

// failNever is a threshold no finding reaches.
const failNever = types.Severity(1 << 10)

// parseFailOn reads --fail-on: a verdict name (broken, at-risk) or a severity.
func parseFailOn(s string) (types.Severity, error) {
	switch s {
	case "broken":
		return types.SeverityCritical, nil
	case "at-risk":
		return types.SeverityWarning, nil
	case "never":
		return failNever, nil
	}
	sev, err := types.ParseSeverity(s)
	if err != nil {
		return 0, fmt.Errorf("--fail-on %q: want broken, high, at-risk, info or never", s)
	}
	return sev, nil
}

// exitFor applies the exit-code contract to a result: 1 when a finding (not a
// fault) is at or above threshold, else 3 when anything was left unchecked:
// an unknown image, an input not read (a notice is not).
func exitFor(res *types.Result, threshold types.Severity) error {
	incomplete := false
	for _, im := range res.Images {
		for _, fd := range im.Findings {
			if !fd.Code.Fault() && fd.Severity >= threshold {
				return &exitError{code: ExitFindings}
			}
		}
		if im.Verdict == types.Unknown {
			incomplete = true
		}
	}
	for _, ie := range res.InputErrors {
		incomplete = incomplete || !ie.Notice
	}
	if incomplete {
		return &exitError{code: ExitIncomplete}
	}
	return nil
}
