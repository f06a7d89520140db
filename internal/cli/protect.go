package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/protect"
	"github.com/regcheck/regcheck/storage"
)

type protectFlags struct {
	gcCheckFlags
	apply, release bool
	audit          string
	prefix, owner  string
}

func newProtectCmd(s Streams, g *globals) *cobra.Command {
	f := &protectFlags{}
	cmd := &cobra.Command{
		Use:   "protect [IMAGE...]",
		Short: "Shield every in-use image from a registry garbage collection with keep-tags, and prove it",
		Long: `protect plans, and with --apply writes, the keep-tags that make a registry's
garbage collector keep every in-use image (arguments, -f, --images-from,
--cluster, --from-records), and proves them: the same simulation gc-check
runs, over the storage with the tags added, printed beside the plan.

The keep set is every in-use manifest: the image, each index's children
(every child, whatever the nodes' platforms), each digest pin. The shield:

  distribution-2.8  a keep-tag in the repository that uses it on the index,
                    on every child and on each digest pin (a child tagged
                    only in another repository is still deleted in this one).
  distribution-3    a keep-tag only on what its collector would delete,
                    decided by the 3.x model (a kept index keeps its children).

The default is a dry run that writes nothing. --apply writes the tags
through the registry API: the manifest's exact bytes PUT by the new tag,
with its media type, which needs push rights on each repository; and the
--audit file (each tag, its digest, why it is kept, the owner, the time).
A second run writes nothing new. Tags are --tag-prefix, --owner, then 16
hex digits of the digest.

--release removes exactly the tags the audit says this owner wrote that the
keep set no longer needs, by tag and never by digest: distribution 3.x by
DELETE /v2/NAME/manifests/TAG (delete rights); docker/distribution 2.x
refuses that, so on distribution-2.8 it removes the tag's folder under
_manifests/tags/ in --storage (write access), or says it cannot and leaves
the tags.

Exit codes: 0 every in-use image is protected; 1 some cannot be (named,
with why); 2 usage; 3 the in-use set is incomplete (--apply and --release
then write nothing).`,
		Example: `  regcheck protect --storage /var/lib/registry --gc-model distribution-2.8 --delete-untagged --cluster -A
  regcheck protect --storage /var/lib/registry --gc-model distribution-2.8 --delete-untagged -f k8s/ --apply --audit keep.json
  regcheck protect --storage /var/lib/registry --gc-model distribution-3 --delete-untagged -f k8s/ --release --audit keep.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = args
			return runProtect(cmd, s, g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.storage, "storage", "", "the registry's filesystem storage rootdirectory (holding docker/registry/v2); read, and written only by --release on distribution-2.8")
	fl.StringVar(&f.model, "gc-model", "", "garbage collector to shield against: distribution-2.8 or distribution-3 (required)")
	fl.BoolVar(&f.deleteUntagged, "delete-untagged", false, "shield against garbage-collect --delete-untagged")
	fl.BoolVar(&f.cluster, "cluster", false, "add what a live cluster runs to the in-use set: workload images and running digests")
	fl.StringVar(&f.fromRecords, "from-records", "", "add every image and digest recorded running (history file of regcheck record) to the in-use set")
	f.kube.addTo(fl)
	fl.StringVar(&f.host, "registry", "", "the registry host[:port] whose storage this is, and that the tags are written to (default: the one host the in-use images name)")
	fl.StringArrayVarP(&f.filenames, "filename", "f", nil, "Kubernetes YAML file or folder to read in-use image references from (repeatable)")
	fl.StringVar(&f.imagesFrom, "images-from", "", "file with one in-use image reference per line (# comments; - for stdin)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fl.BoolVar(&f.apply, "apply", false, "write the planned keep-tags (needs push rights) and the --audit file")
	fl.BoolVar(&f.release, "release", false, "remove the tags the --audit file says --owner wrote that the keep set no longer needs")
	fl.StringVar(&f.audit, "audit", "", "the audit file of the tags written (JSON; required with --apply and --release)")
	fl.StringVar(&f.prefix, "tag-prefix", protect.DefaultPrefix, "prefix of every keep-tag")
	fl.StringVar(&f.owner, "owner", "", "owner named in every keep-tag and audit entry (default the kubeconfig's cluster name, or \"default\")")
	fl.StringArrayVar(&f.registry.caFiles, "ca-file", nil, "PEM file of CA certificates to trust for the registry (repeatable)")
	fl.StringArrayVar(&f.registry.insecure, "insecure-registry", nil, "registry host[:port] whose TLS certificate is not verified (repeatable)")
	return cmd
}

func runProtect(cmd *cobra.Command, s Streams, g *globals, f *protectFlags) error {
	opts, render, err := f.parse()
	if err != nil {
		return usageError(err)
	}
	st, err := storage.Open(f.storage)
	if err != nil {
		return usageError(fmt.Errorf("--storage: %w", err))
	}
	targets, _, incomplete, err := gcCheckTargets(cmd, s, g, &f.gcCheckFlags)
	if err != nil {
		return err
	}
	if opts.Host, err = storageHost(f.host, targets, "in-use images"); err != nil {
		return err
	}
	if opts.Owner == "" {
		opts.Owner = f.defaultOwner()
	}
	rep, err := protect.Plan(st, opts, targets)
	if rep == nil {
		return usageError(err)
	}
	if err != nil && len(rep.Incomplete) == 0 {
		rep.Incomplete = append(rep.Incomplete, err.Error())
	}
	if incomplete {
		rep.Incomplete = append(rep.Incomplete, "some inputs could not be read")
	}
	if err := f.write(cmd, g, st, rep, opts); err != nil {
		return err
	}
	if err := render(s.Out, rep); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return protectExit(rep)
}
