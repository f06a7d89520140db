package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/inventory"
	"github.com/regcheck/regcheck/rescue"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

type rescueFlags struct {
	registry      registryFlags
	contentStores []string
	ociLayouts    []string
	registries    []string
	write         bool
	tag           string
	output        string

	cluster     bool
	kube        kubeFlags
	apply       bool
	pushSecret  string
	jobImage    string
	nodeContent string
	jobAccount  string

	pushes *countingTransport // counts the requests of writes and registry sources
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// requestCount sums a Scanner's requests.
func requestCount(s *scan.Scanner) int {
	n := 0
	for _, rc := range s.Requests() {
		n += rc.Count
	}
	return n
}

func newRescueCmd(s Streams, g *globals) *cobra.Command {
	f := &rescueFlags{}
	cmd := &cobra.Command{
		Use:   "rescue [--from-content-store DIR]... [--from-oci-layout DIR]... [--from-registry HOST[/PREFIX]]... [--write] [--tag TAG] IMAGE...",
		Short: "Put back, byte for byte, the manifests and blobs a registry lost, from a node's content store, an OCI layout or another registry",
		Long: `rescue walks each image as scan does and, for every manifest and blob the
registry no longer serves, looks for a copy by digest in the sources: content
stores first, then OCI layouts, then registries, each in the order given. A
copy is used only if its bytes hash to the digest (they are hashed again as
they are pushed).

Without --write it changes nothing and prints the plan: what is missing, where
each piece was found, and what cannot come back. With --write it pushes to the
image's own repository, blobs first, then child manifests, then the index. It
only adds: nothing is deleted and no tag is moved, so a restore cut short
leaves the registry no worse than before. Afterwards it walks each image again
from a fresh read of the registry and reports what that walk finds.

Sources:
  --from-content-store DIR  a containerd content store: the content folder
                            (…/io.containerd.content.v1.content), a containerd
                            root (/var/lib/containerd, k3s's
                            /var/lib/rancher/k3s/agent/containerd), or k3s's
                            agent folder. Read-only; ingest/ is never read.
  --from-oci-layout DIR     an OCI image layout (oci-layout, blobs/).
  --from-registry HOST[/PREFIX]
                            another registry holding the same repository path
                            under PREFIX: a mirror, a pull-through cache.

A node holds only its own platform's manifest and blobs, and never the
attestation: after a rescue from one node the other platforms' children stay
missing (scans with --platform for the platforms the cluster runs call the
image whole) and the attestation stays missing (the image is at-risk).

A registry refuses an index whose children are not all present: an index that
was pushed only by digest and lost with its children cannot come back from one
node's content store when the other platforms' children are gone everywhere.
rescue says so.

Manifests are pushed by digest. One that no tag holds is deleted again by the
next garbage-collect --delete-untagged on docker/distribution 2.x: --tag
PREFIX tags each as PREFIX-<12 hex digits of its digest> (an existing tag is
never moved).

With --cluster it finds, for every image the cluster runs whose registry lost
pieces, the nodes that still hold it (nodes[].status.images and the pods that
run it) and prints a Job per node, pinned to it, that mounts its content store
read-only and runs "rescue --write" with push credentials from --push-secret;
--apply creates them (deploy/rescue/ has the Job's RBAC). Everything else it
does in the cluster is read-only.

Exit codes: 0 everything is restored (or, without --write, would be); 1
something stays missing; 2 usage or configuration error; 3 incomplete (a
registry or source could not be read, a push failed).`,
		Example: `  regcheck rescue --from-content-store /var/lib/rancher/k3s/agent/containerd reg.example.com/app:v1
  regcheck rescue --from-content-store /var/lib/containerd --write --tag rescued reg.example.com/app:v1
  regcheck rescue --from-registry mirror.example.com/cache --write reg.example.com/app@sha256:…
  regcheck rescue --cluster -A --push-secret regcheck/push --job-image reg.example.com/regcheck:v1 --apply`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.cluster {
				return runRescueCluster(cmd, s, g, f, args)
			}
			return runRescue(cmd, s, g, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.contentStores, "from-content-store", nil, "containerd content store to restore from: the content folder, a containerd root, or k3s's agent folder (repeatable)")
	fl.StringArrayVar(&f.ociLayouts, "from-oci-layout", nil, "OCI image layout to restore from (repeatable)")
	fl.StringArrayVar(&f.registries, "from-registry", nil, "registry HOST[:PORT][/PREFIX] holding the same repositories (under PREFIX) to restore from (repeatable)")
	fl.BoolVar(&f.write, "write", false, "push what is found; without it, print the plan and change nothing")
	fl.StringVar(&f.tag, "tag", "", "with --write, tag every manifest pushed that no tag holds as TAG-<12 hex digits of its digest>, so that garbage-collect --delete-untagged keeps it")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	f.registry.addTo(fl, false)
	fl.BoolVar(&f.cluster, "cluster", false, "find the nodes that still hold each broken image the cluster runs and make a Job per node that restores from its content store")
	f.kube.addTo(fl)
	fl.BoolVar(&f.apply, "apply", false, "with --cluster, create the Jobs; without it they are printed (YAML)")
	fl.StringVar(&f.pushSecret, "push-secret", "", "with --cluster, NAMESPACE/NAME of a kubernetes.io/dockerconfigjson Secret with push credentials; the Jobs run in its namespace")
	fl.StringVar(&f.jobImage, "job-image", "", "with --cluster, the regcheck image the Jobs run")
	fl.StringVar(&f.nodeContent, "node-content-store", rescue.K3sContentStore, "with --cluster, the content store folder on the nodes (plain containerd: /var/lib/containerd/io.containerd.content.v1.content)")
	fl.StringVar(&f.jobAccount, "job-service-account", "regcheck-rescue-job", "with --cluster, the ServiceAccount the Jobs run as (it needs no rights; its token is not mounted)")
	return cmd
}

// sources opens the sources the flags name: content stores, OCI layouts,
// then registries.
func (f *rescueFlags) sources(g *globals, opts []rescue.Option) ([]rescue.Source, error) {
	var out []rescue.Source
	for _, d := range f.contentStores {
		s, err := rescue.ContentStore(d)
		if err != nil {
			return nil, fmt.Errorf("--from-content-store: %w", err)
		}
		g.logger.Info("source", "content store", s.Dir())
		out = append(out, s)
	}
	for _, d := range f.ociLayouts {
		s, err := rescue.OCILayout(d)
		if err != nil {
			return nil, fmt.Errorf("--from-oci-layout: %w", err)
		}
		out = append(out, s)
	}
	for _, r := range f.registries {
		s, err := rescue.NewRegistry(r, f.registry.insecure, opts...)
		if err != nil {
			return nil, fmt.Errorf("--from-registry: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// options are the rescue options the flags make: the registry transport
// (with --ca-file and --insecure-registry), --tag, the logger.
func (f *rescueFlags) options(g *globals) ([]rescue.Option, error) {
	rt, err := writeTransport(f.registry.caFiles, f.registry.insecure)
	if err != nil {
		return nil, err
	}
	f.pushes = &countingTransport{next: rt}
	opts := []rescue.Option{rescue.WithTransport(f.pushes), rescue.WithConcurrency(f.registry.concurrency),
		rescue.WithLogger(g.logger), rescue.WithUserAgent("regcheck/" + Version)}
	if f.tag != "" {
		opts = append(opts, rescue.WithTag(f.tag))
	}
	return opts, nil
}

func (f *rescueFlags) validate(args []string) error {
	switch {
	case f.output != "table" && f.output != "json":
		return fmt.Errorf("--output %q: want table or json", f.output)
	case f.tag != "" && !f.write && !f.cluster:
		return errors.New("--tag goes with --write")
	case !f.cluster && len(args) == 0:
		return errors.New("nothing to rescue: give image references, or --cluster")
	case !f.cluster && len(f.contentStores)+len(f.ociLayouts)+len(f.registries) == 0:
		return errors.New("no source: give --from-content-store, --from-oci-layout or --from-registry")
	case !f.cluster && (f.kube.set() || f.apply || f.pushSecret != "" || f.jobImage != ""):
		return errors.New("--kubeconfig, --context, -n, -A, --apply, --push-secret and --job-image go with --cluster")
	}
	return nil
}

func runRescue(cmd *cobra.Command, s Streams, g *globals, f *rescueFlags, args []string) error {
	if err := f.validate(args); err != nil {
		return usageError(err)
	}
	opts, err := f.options(g)
	if err != nil {
		return usageError(err)
	}
	w, err := rescue.NewWriter(opts...) // rejects bad options (--tag) before anything is read
	if err != nil {
		return usageError(err)
	}
	sources, err := f.sources(g, opts)
	if err != nil {
		return usageError(err)
	}
	scanner, err := scan.New(f.registry.options(g)...)
	if err != nil {
		return usageError(err)
	}
	var refs []name.Reference
	for _, a := range args {
		_, ref, err := scanner.Parse(a)
		if err != nil {
			return usageError(err)
		}
		refs = append(refs, ref)
	}
	planner, err := rescue.NewPlanner(scanner.Reader(), sources, opts...)
	if err != nil {
		return usageError(err)
	}
	plan, err := planner.Plan(cmd.Context(), refs)
	if err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	if f.write {
		// A fresh Scanner: the planner's remembers what the registry lacked.
		after, err := scan.New(f.registry.options(g)...)
		if err != nil {
			return usageError(err)
		}
		if err := w.Write(cmd.Context(), plan, after.Reader()); err != nil {
			return &exitError{code: ExitIncomplete, err: err}
		}
		defer func() {
			g.logger.Info("registry requests", "plan", requestCount(scanner), "push and registry sources", f.pushes.n.Load(), "check", requestCount(after))
		}()
		if f.output == "table" {
			defer func() {
				fmt.Fprintf(s.Out, "\n%d registry requests: %d to plan, %d to push and read registry sources, %d to walk again\n",
					requestCount(scanner)+int(f.pushes.n.Load())+requestCount(after), requestCount(scanner), f.pushes.n.Load(), requestCount(after))
			}()
		}
	}
	if f.output == "json" {
		if err := plan.WriteJSON(s.Out); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	} else {
		if err := plan.WriteText(s.Out); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
		rescueHints(s.Out, f, plan)
	}
	return rescueExit(plan)
}

// rescueHints says which flags act on the plan: --write, --tag, and the
// --platform scans that call a partly restored image whole.
func rescueHints(w io.Writer, f *rescueFlags, p *rescue.Plan) {
	var hints []string
	sum := p.Summary()
	if !p.Written && sum.Pieces > 0 {
		hints = append(hints, "run again with --write to push what was found")
	}
	if sum.Untagged > 0 && f.tag == "" {
		held := "would be held by no tag"
		if p.Written {
			held = "were pushed by digest and no tag holds them"
		}
		hints = append(hints, fmt.Sprintf("%d manifest(s) %s: --tag PREFIX (with --write) tags each PREFIX-<12 hex>, so that garbage-collect --delete-untagged on docker/distribution 2.x keeps them (or upgrade to distribution 3.x, or stop deleting untagged manifests)", sum.Untagged, held))
	}
	whole := map[string][]string{} // --platform flags → images whole for them
	for _, im := range p.Images {
		if len(im.WholePlatforms) > 0 && len(im.Missing) > 0 {
			flags := "--platform " + strings.Join(im.WholePlatforms, " --platform ")
			whole[flags] = append(whole[flags], im.Reference)
		}
	}
	for _, flags := range slices.Sorted(maps.Keys(whole)) {
		hints = append(hints, fmt.Sprintf("regcheck scan %s (the platforms the nodes run) calls these whole once restored, the other platforms' children and any attestation staying missing: %s", flags, strings.Join(whole[flags], " ")))
	}
	if len(hints) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWhat to do:")
	for _, h := range hints {
		fmt.Fprintln(w, "  - "+h)
	}
}

// rescueExit applies the exit contract: 1 when something stays missing
// (after a write, as a fresh walk of the registry finds it), else 3 when
// something could not be read or pushed, else 0.
func rescueExit(p *rescue.Plan) error {
	missing, incomplete := false, false
	for _, im := range p.Images {
		if p.Written && im.After != nil {
			for _, f := range im.After {
				if f.Code.Fault() {
					incomplete = true
				} else if f.Severity >= types.SeverityWarning {
					missing = true
				}
			}
		} else {
			missing = missing || len(im.Missing) > 0
		}
		incomplete = incomplete || len(im.Faults) > 0
		for _, pc := range im.Pieces {
			incomplete = incomplete || pc.Outcome == rescue.Failed
		}
	}
	switch {
	case missing:
		return &exitError{code: ExitFindings}
	case incomplete:
		return &exitError{code: ExitIncomplete}
	}
	return nil
}

// writeTransport is the transport rescue writes (and reads registry
// sources) through: TLS verified against the system roots plus the CA
// files, and not verified for the hosts named insecure.
func writeTransport(caFiles, insecure []string) (http.RoundTripper, error) {
	roots, err := scan.LoadRoots(caFiles...)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	hosts := map[string]bool{}
	for _, h := range insecure {
		hosts[h] = true
	}
	return scan.NewBaseTransport(roots, hosts, 0), nil
}

// runRescueCluster is --cluster: the broken images the cluster runs, the
// nodes that hold them, and a Job per node.
func runRescueCluster(cmd *cobra.Command, s Streams, g *globals, f *rescueFlags, args []string) error {
	ns, secret, ok := strings.Cut(f.pushSecret, "/")
	spec := rescue.JobSpec{Namespace: ns, PushSecret: secret, Image: f.jobImage, ContentStore: f.nodeContent, ServiceAccount: f.jobAccount}
	switch {
	case len(args) > 0 || len(f.contentStores)+len(f.ociLayouts)+len(f.registries) > 0 || f.write:
		return usageError(errors.New("--cluster finds the images and their sources in the cluster: give no images, sources or --write with it"))
	case !ok || ns == "" || secret == "":
		return usageError(errors.New("--cluster needs --push-secret NAMESPACE/NAME: the Secret with push credentials the Jobs mount"))
	case f.jobImage == "":
		return usageError(errors.New("--cluster needs --job-image: the regcheck image the Jobs run"))
	case f.output != "table" && f.output != "json":
		return usageError(fmt.Errorf("--output %q: want table or json", f.output))
	}
	if err := spec.Validate(); err != nil {
		return usageError(fmt.Errorf("--node-content-store: %w", err))
	}
	if f.tag != "" {
		spec.Args = append(spec.Args, "--tag", f.tag)
	}
	for _, h := range f.registry.insecure {
		spec.Args = append(spec.Args, "--insecure-registry", h)
	}
	scanner, err := scan.New(f.registry.options(g)...)
	if err != nil {
		return usageError(err)
	}
	kt, err := f.kube.connect()
	if err != nil {
		return err
	}
	inv, err := kt.inventory(cmd.Context(), g.logger)
	if err != nil {
		return err
	}
	broken, incomplete, err := brokenImages(cmd, scanner, inv)
	if err != nil {
		return err
	}
	holders := map[string][]string{}
	for ref, digest := range broken {
		holders[ref] = rescue.Holders(inv, digest)
	}
	assignments, unheld := rescue.Assign(holders)
	var jobs []any
	for _, a := range assignments {
		job := spec.Job(a)
		g.logger.Info("rescue job", "node", a.Node, "images", len(a.Images), "job", job.Name)
		if f.apply {
			_, err := kt.client.BatchV1().Jobs(spec.Namespace).Create(cmd.Context(), job, metav1.CreateOptions{})
			switch {
			case apierrors.IsAlreadyExists(err):
				fmt.Fprintf(s.Err, "job %s/%s exists already: the same rescue was created before\n", spec.Namespace, job.Name)
			case err != nil:
				return &exitError{code: ExitIncomplete, err: fmt.Errorf("creating job %s/%s: %w", spec.Namespace, job.Name, err)}
			default:
				fmt.Fprintf(s.Err, "created job %s/%s on node %s for %s\n", spec.Namespace, job.Name, a.Node, strings.Join(a.Images, " "))
			}
		}
		jobs = append(jobs, job)
	}
	if !f.apply || f.output == "json" {
		if err := printJobs(s.Out, jobs, f.output); err != nil {
			return fmt.Errorf("writing the jobs: %w", err)
		}
	}
	for _, img := range unheld {
		fmt.Fprintf(s.Err, "no node holds %s: it cannot be restored from the cluster (try --from-registry with a mirror)\n", img)
	}
	if len(broken) == 0 {
		fmt.Fprintln(s.Err, "no image the cluster runs has lost a manifest or blob")
	}
	switch {
	case len(unheld) > 0:
		return &exitError{code: ExitFindings}
	case incomplete:
		return &exitError{code: ExitIncomplete}
	}
	return nil
}

// brokenImages walks what the cluster runs and returns each image that
// lost a manifest or blob, as repo@digest, with its digest; and whether
// some image could not be checked.
func brokenImages(cmd *cobra.Command, scanner *scan.Scanner, inv *inventory.Inventory) (map[string]string, bool, error) {
	targets := append(cluster.Targets(inv), cluster.RunningTargets(inv)...)
	res, err := scanner.Run(cmd.Context(), targets)
	if err != nil {
		return nil, false, &exitError{code: ExitIncomplete, err: err}
	}
	out := map[string]string{}
	incomplete := false
	for _, im := range res.Images {
		if im.Verdict == types.Unknown {
			incomplete = true
		}
		if im.Digest == "" || !slices.ContainsFunc(im.Findings, func(f types.Finding) bool {
			return f.Code == types.ChildMissing || f.Code == types.BlobMissing || f.Code == types.ManifestMissing || f.Code == types.AttestationMissing
		}) {
			continue
		}
		_, ref, err := scan.ParseReference(im.Reference)
		if err != nil {
			continue
		}
		out[ref.Context().Name()+"@"+im.Digest] = im.Digest
	}
	return out, incomplete, nil
}

// printJobs writes the Jobs as YAML documents (kubectl apply -f takes
// them) or a JSON list.
func printJobs(w io.Writer, jobs []any, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": jobs})
	}
	for _, j := range jobs {
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		out, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n%s", out)
	}
	return nil
}
