package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

type gcCheckFlags struct {
	registry registryFlags
	inputs
	storage        string
	model          string
	deleteUntagged bool
	output         string
	host           string
	allRepos       bool
	cluster        bool
	kube           kubeFlags
	fromRecords    string
	cleanup        cleanupFlags
}

func newGCCheckCmd(s Streams, g *globals) *cobra.Command {
	f := &gcCheckFlags{}
	cmd := &cobra.Command{
		Use:   "gc-check [IMAGE...]",
		Short: "Predict what a registry's garbage collector would delete, and which in-use images that breaks",
		Long: `gc-check runs before anyone runs a registry's garbage collector, and after.

With --storage it reads a distribution registry's filesystem storage
(read-only) and simulates the mark-and-sweep of --gc-model, digest for digest:

  distribution-2.8  marks tagged manifests and only their direct references.
                    With --delete-untagged it deletes every untagged manifest,
                    the children of tagged indexes included, then every blob
                    only they referenced. It aborts, deleting nothing, when a
                    repository that never had a tag holds a manifest.
  distribution-3    marks recursively through indexes and keeps the children
                    of kept indexes.

Without --gc-model, distribution-2.8 is assumed: the report says so on its
first line (JSON: "modelAssumed": true), and its advice says what to do
under either release.

It prints what would be deleted per repository and, for the in-use images
(arguments, -f, --images-from, --cluster, --from-records), which would break
and how. It also
surveys what is already broken: unlinked index children, revision and
_layers links whose blob data is gone, tags whose manifest is gone.

Without --storage (API mode) it asks the registry instead, through its API:
the repositories of the in-use images (with --all-repositories, or with
--registry and no in-use images, every repository its _catalog lists); their
tags; and the manifests the tags and the in-use pins reach. Under
distribution-3 a pin no examined tag reaches is undecided without
--all-repositories, since a tag in another repository would keep it. It reports the in-use digests no tag names directly (index
children under distribution-2.8, pins whose tag moved) or, under
distribution-3, that no tag reaches at all; which in-use images that breaks
and how; and what is broken already, as "regcheck scan" sees it. API mode
lists manifests only: which blobs a run deletes depends on blob sharing,
which only storage mode sees. Without --delete-untagged no manifest is
deleted by either model, and the report says so.

With --storage it also names the signatures, attestations and SBOMs of
in-use images the run deletes (wouldLoseArtifacts: information). With
--cluster it reads the cluster's image policies too: an image whose
signature or attestation an enforcing policy requires, and the run
deletes, would break (admission refuses its next pod); an auditing
policy makes it at-risk.

` + cleanupHelp + `
Exit codes: 0 nothing in use breaks; 1 an in-use image would break or is
already broken; 2 usage or configuration error; 3 incomplete (some inputs
could not be read).`,
		Example: `  regcheck gc-check --storage /var/lib/registry --delete-untagged -f k8s/
  regcheck gc-check --storage /var/lib/registry --gc-model distribution-3 --delete-untagged -o json reg.example.com/app:v1
  regcheck gc-check --delete-untagged -f k8s/                      # API mode: asks each registry the manifests name
  regcheck gc-check --cleanup .github/workflows/cleanup.yml --registry-state versions.json -f k8s/
  regcheck gc-check --cleanup lifecycle.json --registry-state team/app=images.json --at 2027-01-01 --runs 2 --cluster`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = args
			return runGCCheck(cmd, s, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.storage, "storage", "", "the registry's filesystem storage rootdirectory (holding docker/registry/v2); read only")
	fl.StringVar(&f.model, "gc-model", string(gcresult.Distribution28), "garbage collector to simulate: distribution-2.8 or distribution-3 (when not given, the report says the default was assumed)")
	fl.BoolVar(&f.deleteUntagged, "delete-untagged", false, "simulate garbage-collect --delete-untagged")
	fl.BoolVar(&f.cluster, "cluster", false, "add what a live cluster runs to the in-use set: workload images and running digests; with --storage, also read its image policies (Kyverno, policy-controller; docs/admission.md): an image whose signature an enforcing one requires and the run deletes would break")
	fl.StringVar(&f.fromRecords, "from-records", "", "add every image and digest recorded running (history file of regcheck record) to the in-use set")
	f.kube.addTo(fl)
	fl.BoolVar(&f.allRepos, "all-repositories", false, "API mode: also examine every repository the registry's _catalog lists, not only the in-use ones (reads the whole registry)")
	fl.StringVar(&f.host, "registry", "", "the registry host[:port] whose storage this is, or with --cleanup the registry serving the cleaned repositories when it is not the service's own host (a mirror, a loopback registry); in-use references on other hosts are skipped (default: the one host the in-use images name)")
	fl.StringArrayVarP(&f.filenames, "filename", "f", nil, "Kubernetes YAML file or folder to read in-use image references from (repeatable)")
	fl.StringVar(&f.imagesFrom, "images-from", "", "file with one in-use image reference per line (# comments; - for stdin)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	f.registry.addTo(fl, false) // API mode
	f.cleanup.addTo(cmd)
	return cmd
}

func runGCCheck(cmd *cobra.Command, s Streams, g *globals, f *gcCheckFlags) error {
	if err := checkRegistryHost(f.host); err != nil {
		return usageError(err)
	}
	if err := f.cleanup.conflicts(cmd); err != nil {
		return usageError(err)
	}
	if len(f.cleanup.files) > 0 {
		return runCleanupMode(cmd, s, g, f)
	}
	model, err := gcresult.ParseModel(f.model)
	if err != nil {
		return usageError(fmt.Errorf("--gc-model: %w", err))
	}
	// Without --gc-model the model is a guess: every output says so on its
	// first line (JSON: modelAssumed), and the advice covers either model.
	assumed := !cmd.Flags().Changed("gc-model")
	if assumed {
		g.logger.Warn("no --gc-model given: predicting the collector of "+model.Release()+"; if the registry runs another release, pass --gc-model", "assumed", string(model), "models", gcresult.Models())
	}
	render, err := gcRenderer(f.output)
	if err != nil {
		return usageError(err)
	}
	if err := f.validate(); err != nil {
		return usageError(err)
	}
	if !f.cluster && f.kube.set() {
		return usageError(errors.New("--kubeconfig, --context, -n and -A go with --cluster"))
	}
	targets, policies, incomplete, err := gcCheckTargets(cmd, s, g, f)
	if err != nil {
		return err
	}
	if f.storage == "" {
		return runGCCheckAPI(cmd, s, g, f, model, assumed, render, targets, incomplete)
	}
	st, err := storage.Open(f.storage)
	if err != nil {
		return usageError(fmt.Errorf("--storage: %w", err))
	}
	host, err := storageHost(f.host, targets, "in-use images")
	if err != nil {
		return err
	}
	rep, _, err := gc.Check(st, gc.Options{Model: model, ModelAssumed: assumed, DeleteUntagged: f.deleteUntagged, Host: host, Policies: policies}, targets)
	protectAdvice(rep, f)
	return gcCheckReport(s, g, rep, err, render, incomplete)
}

// runCleanupMode checks the flags and reads the in-use set, then predicts
// the cleanup.
func runCleanupMode(cmd *cobra.Command, s Streams, g *globals, f *gcCheckFlags) error {
	render, err := gcRenderer(f.output)
	if err != nil {
		return usageError(err)
	}
	if err := f.validate(); err != nil {
		return usageError(err)
	}
	if !f.cluster && f.kube.set() {
		return usageError(errors.New("--kubeconfig, --context, -n and -A go with --cluster"))
	}
	targets, policies, incomplete, err := gcCheckTargets(cmd, s, g, f)
	if err != nil {
		return err
	}
	return runGCCheckCleanup(cmd, s, g, f, render, targets, policies, incomplete)
}

// gcRenderer is the renderer -o names.
func gcRenderer(output string) (func(io.Writer, *gcresult.Report) error, error) {
	switch output {
	case "table":
		return report.GCCheck, nil
	case "json":
		return report.GCCheckJSON, nil
	}
	return nil, fmt.Errorf("--output %q: want table or json", output)
}

// gcCheckReport renders rep and picks the exit code. An error with no
// report ends the command incomplete; with one, the report is incomplete.
func gcCheckReport(s Streams, g *globals, rep *gcresult.Report, err error, render func(io.Writer, *gcresult.Report) error, incomplete bool) error {
	if rep == nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	err = addGCHints(rep, err)
	if err != nil {
		g.logger.Error("gc-check incomplete", "err", err)
		incomplete = true
	}
	for _, sk := range rep.Skipped {
		g.logger.Warn("in-use image not checked", "ref", sk.Reference, "reason", sk.Reason)
	}
	if err := render(s.Out, rep); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if len(rep.WouldBreak)+len(rep.AlreadyBroken) > 0 {
		for _, e := range append(append([]gcresult.Entry{}, rep.WouldBreak...), rep.AlreadyBroken...) {
			if e.Verdict == types.Broken {
				return &exitError{code: ExitFindings}
			}
		}
	}
	if incomplete {
		return &exitError{code: ExitIncomplete}
	}
	return nil
}

// runGCCheckAPI is API mode: no storage, the registries' API.
func runGCCheckAPI(cmd *cobra.Command, s Streams, g *globals, f *gcCheckFlags, model gcresult.Model, assumed bool, render func(io.Writer, *gcresult.Report) error, targets []types.Target, incomplete bool) error {
	if len(targets) == 0 && f.host == "" {
		if incomplete {
			return &exitError{code: ExitIncomplete, err: errors.New("no image references could be read")}
		}
		return usageError(errors.New("API mode needs in-use images (arguments, -f, --images-from) or --registry; or give --storage"))
	}
	sc, err := scan.New(f.registry.options(g)...)
	if err != nil {
		return usageError(err)
	}
	// With no in-use images, --registry can only mean: survey that registry.
	all := f.allRepos || len(targets) == 0
	rep, err := gc.CheckAPI(cmd.Context(), sc, gc.Options{Model: model, ModelAssumed: assumed, DeleteUntagged: f.deleteUntagged, Host: f.host, AllRepositories: all}, targets)
	return gcCheckReport(s, g, rep, err, render, incomplete)
}

// gcCheckTargets is the in-use set: arguments, -f manifests, --images-from,
// and with --cluster or --from-records every workload's image and every
// digest a container runs or ran (a GC that deletes it breaks the next
// reschedule, and any rollback). With --cluster it also reads the
// cluster's image policies: a signature an enforcing one requires that
// the run deletes breaks the next pod (a policy that could not be read
// leaves the prediction incomplete).
func gcCheckTargets(cmd *cobra.Command, s Streams, g *globals, f *gcCheckFlags) ([]types.Target, *admission.Policies, bool, error) {
	targets, incomplete := f.read(s.In, g.logger)
	var policies *admission.Policies
	if f.cluster {
		kt, err := f.kube.connect()
		if err != nil {
			return nil, nil, false, err
		}
		inv, err := kt.inventory(cmd.Context(), g.logger)
		if err != nil {
			return nil, nil, false, err
		}
		targets = append(targets, cluster.Targets(inv)...)
		targets = append(targets, cluster.RunningTargets(inv)...)
		if f.storage != "" || len(f.cleanup.files) > 0 { // API mode does not look for artifacts
			ps, problems, err := clusterPolicies(cmd.Context(), kt, g.logger)
			if err != nil {
				return nil, nil, false, err
			}
			policies, incomplete = ps, incomplete || len(problems) > 0
		}
	}
	if f.fromRecords != "" {
		h, err := (&record.File{Path: f.fromRecords}).Load(cmd.Context())
		if err != nil {
			return nil, nil, false, usageError(fmt.Errorf("--from-records: %w", err))
		}
		for _, r := range h.Records {
			use := types.Use{Source: "records", Kind: r.OwnerKind, Namespace: r.Namespace, Name: r.OwnerName, Container: r.Container, Volume: r.Volume, Pod: r.Pod, Node: r.Node, RunningDigest: r.Digest}
			targets = append(targets, types.Target{Ref: r.Image, Uses: []types.Use{use}})
			if r.Digest != "" {
				image, _ := imageref.Parse(r.Image)
				targets = append(targets, types.Target{Ref: image.Running(r.Digest), Uses: []types.Use{use}})
			}
		}
	}
	return targets, policies, incomplete, nil
}

// protectAdvice names regcheck protect, in gc-check's storage mode, when
// the run would break an in-use image: it writes the keep-tags that make
// the run keep them, and proves it.
func protectAdvice(rep *gcresult.Report, f *gcCheckFlags) {
	if rep == nil || len(rep.WouldBreak) == 0 || rep.ModelAssumed {
		return
	}
	du := ""
	if f.deleteUntagged {
		du = " --delete-untagged"
	}
	rep.Advice = append(rep.Advice, fmt.Sprintf("regcheck protect --storage %s --gc-model %s%s (the same in-use flags) plans the keep-tags that make this run keep every in-use image and proves it; --apply --audit FILE writes them (push rights); see docs/protect.md", f.storage, rep.Model, du))
}
