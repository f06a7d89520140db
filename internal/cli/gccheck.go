package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/scan"
	"github.com/spf13/cobra"
)

type gcCheckFlags struct {
	inputs
	storage        string
	model          string
	deleteUntagged bool
	output         string
	host           string
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

It prints what would be deleted per repository and, for the in-use images
(arguments, -f manifests, --images-from), which would break and how. It also
surveys what is already broken: unlinked index children, revision and
_layers links whose blob data is gone, tags whose manifest is gone.

API mode (no --storage) is not implemented yet.

Exit codes: 0 nothing in use breaks; 1 an in-use image would break or is
already broken; 2 usage or configuration error; 3 incomplete (some inputs
could not be read).`,
		Example: `  regcheck gc-check --storage /var/lib/registry --delete-untagged -f k8s/
  regcheck gc-check --storage /var/lib/registry --gc-model distribution-3 --delete-untagged -o json reg.example.com/app:v1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = args
			return runGCCheck(cmd, s, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.storage, "storage", "", "the registry's filesystem storage rootdirectory (holding docker/registry/v2); read only")
	fl.StringVar(&f.model, "gc-model", string(gc.Distribution28), "garbage collector to simulate: distribution-2.8 or distribution-3")
	fl.BoolVar(&f.deleteUntagged, "delete-untagged", false, "simulate garbage-collect --delete-untagged")
	fl.StringVar(&f.host, "registry", "", "only match in-use references on this registry host[:port] (default: match storage repositories by path)")
	fl.StringArrayVarP(&f.filenames, "filename", "f", nil, "Kubernetes YAML file or folder to read in-use image references from (repeatable)")
	fl.StringVar(&f.imagesFrom, "images-from", "", "file with one in-use image reference per line (# comments; - for stdin)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runGCCheck(cmd *cobra.Command, s Streams, g *globals, f *gcCheckFlags) error {
	model, err := gc.ParseModel(f.model)
	if err != nil {
		return usageError(fmt.Errorf("--gc-model: %w", err))
	}
	var render func(*gc.Report, io.Writer) error
	switch f.output {
	case "table":
		render = (*gc.Report).WriteTable
	case "json":
		render = (*gc.Report).WriteJSON
	default:
		return usageError(fmt.Errorf("--output %q: want table or json", f.output))
	}
	if f.storage == "" {
		return usageError(errors.New("API mode is not implemented yet: give --storage"))
	}
	targets, incomplete := gcCheckTargets(s, g, f)
	st, err := gc.Open(f.storage)
	if err != nil {
		return usageError(fmt.Errorf("--storage: %w", err))
	}
	rep, err := gc.Check(st, gc.Options{Model: model, DeleteUntagged: f.deleteUntagged, Host: f.host}, targets)
	if err != nil {
		return &exitError{code: ExitIncomplete, err: err}
	}
	for _, sk := range rep.Skipped {
		g.logger.Warn("in-use image not checked", "ref", sk.Reference, "reason", sk.Reason)
	}
	if err := render(rep, s.Out); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if len(rep.WouldBreak)+len(rep.AlreadyBroken) > 0 {
		for _, e := range append(append([]gc.Entry{}, rep.WouldBreak...), rep.AlreadyBroken...) {
			if e.Verdict == scan.Broken {
				return &exitError{code: ExitFindings}
			}
		}
	}
	if incomplete {
		return &exitError{code: ExitIncomplete}
	}
	return nil
}

// gcCheckTargets is the in-use set: arguments, -f manifests, --images-from.
// The seam for more sources (a live cluster, recorded runs) is here: append
// their targets to the slice; gc.Check matches them to the storage.
func gcCheckTargets(s Streams, g *globals, f *gcCheckFlags) ([]scan.Target, bool) {
	targets, problems := f.targets(s.In)
	incomplete := false
	for _, p := range problems {
		var n notice
		if errors.As(p, &n) {
			g.logger.Warn(p.Error())
			continue
		}
		g.logger.Error("input skipped", "err", p)
		incomplete = true
	}
	return targets, incomplete
}
