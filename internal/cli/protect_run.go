package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/regcheck/regcheck/protect"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/storage"
)

// parse checks the flags and returns the plan's options and renderer.
func (f *protectFlags) parse() (protect.Options, func(io.Writer, *protectresult.Report) error, error) {
	var opts protect.Options
	if f.storage == "" {
		return opts, nil, errors.New("protect needs --storage: the proof simulates the collector over the registry's storage")
	}
	if f.model == "" {
		return opts, nil, errors.New("--gc-model: say which collector the registry runs: distribution-2.8 or distribution-3")
	}
	model, err := gcresult.ParseModel(f.model)
	if err != nil {
		return opts, nil, fmt.Errorf("--gc-model: %w", err)
	}
	if (f.apply || f.release) && f.audit == "" {
		return opts, nil, errors.New("--apply and --release need --audit FILE: the record of the tags written")
	}
	if !f.cluster && f.kube.set() {
		return opts, nil, errors.New("--kubeconfig, --context, -n and -A go with --cluster")
	}
	if _, err := protect.TagName(f.prefix, "x", "sha256:0000000000000000"); err != nil {
		return opts, nil, fmt.Errorf("--tag-prefix: %w", err)
	}
	render := report.Protect
	switch f.output {
	case "table":
	case "json":
		render = report.ProtectJSON
	default:
		return opts, nil, fmt.Errorf("--output %q: want table or json", f.output)
	}
	return protect.Options{Model: model, DeleteUntagged: f.deleteUntagged, Prefix: f.prefix, Owner: f.owner}, render, nil
}

// defaultOwner is the kubeconfig context's cluster name with --cluster,
// else "default".
func (f *protectFlags) defaultOwner() string {
	if !f.cluster {
		return "default"
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kube.kubeconfig
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.kube.context}).RawConfig()
	if err != nil {
		return "default"
	}
	name := f.kube.context
	if name == "" {
		name = raw.CurrentContext
	}
	if c := raw.Contexts[name]; c != nil && c.Cluster != "" {
		return c.Cluster
	}
	return "default"
}

// write is --apply and --release: refused when the in-use set is
// incomplete; the audit is replaced only when it changed.
func (f *protectFlags) write(cmd *cobra.Command, g *globals, st *storage.Storage, rep *protectresult.Report, opts protect.Options) error {
	if !f.apply && !f.release {
		return nil
	}
	if len(rep.Incomplete) > 0 {
		g.logger.Error("the in-use set is incomplete: nothing written", "why", rep.Incomplete)
		return nil
	}
	a, err := protect.LoadAudit(f.audit)
	if err != nil {
		return usageError(fmt.Errorf("--audit: %w", err))
	}
	rt, err := writeTransport(f.registry.caFiles, f.registry.insecure)
	if err != nil {
		return usageError(err)
	}
	reg := protect.Remote{Host: opts.Host, Options: []remote.Option{remote.WithTransport(rt), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithUserAgent("regcheck/" + Version)}}
	changed := false
	if f.apply {
		changed = protect.Apply(cmd.Context(), rep, reg, a, time.Now())
		g.logger.Info("keep-tags written", "written", rep.Counts.Written, "present", rep.Counts.Present, "failed", rep.Counts.Failed)
	}
	if f.release {
		var u protect.Untagger = reg
		if opts.Model == gcresult.Distribution28 {
			// docker/distribution 2.x answers DELETE by tag 400 DIGEST_INVALID.
			u = protect.StorageUntagger{Root: st.Root}
		}
		changed = protect.Release(cmd.Context(), rep, st, u, "", a) || changed
	}
	if !changed {
		g.logger.Info("the audit file is unchanged: nothing new written", "audit", f.audit)
		return nil
	}
	if err := protect.SaveAudit(f.audit, a); err != nil {
		return err
	}
	return nil
}

// protectExit is the exit contract: 3 incomplete, 1 an image cannot be
// protected (or a tag could not be written), 0 every one is.
func protectExit(rep *protectresult.Report) error {
	switch {
	case len(rep.Incomplete) > 0:
		return &exitError{code: ExitIncomplete}
	case len(rep.Unprotected) > 0 || rep.Counts.Failed > 0:
		return &exitError{code: ExitFindings}
	}
	return nil
}
