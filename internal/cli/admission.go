package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/spf13/pflag"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/cluster"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// policyFlags turn the admission check on or off.
type policyFlags struct {
	enabled     bool
	changed     func() bool // whether --policies was given
	trustedRoot string      // --trusted-root
	root        *root.TrustedRoot
	airGapped   bool // --air-gapped
}

func (p *policyFlags) addTo(fs *pflag.FlagSet, usage string) {
	fs.BoolVar(&p.enabled, "policies", true, usage)
	fs.StringVar(&p.trustedRoot, "trusted-root", "", trustedRootUsage)
	fs.BoolVar(&p.airGapped, "air-gapped", false, airGappedUsage)
	p.changed = func() bool { return fs.Changed("policies") }
}

// trustedRootUsage is --trusted-root's help.
const trustedRootUsage = "a sigstore trusted root (trusted_root.json, as cosign trusted-root create writes it) whose Rekor keys check the transparency-log proof a signature carries and whose Fulcio CAs check keyless certificates, offline (docs/admission.md); without it such signatures are unknown unless the policy names its own keys"

// airGappedUsage is --air-gapped's help.
const airGappedUsage = "the cluster's admission engines reach no Sigstore TUF mirror: a Kyverno entry that leaves its Rekor or CT log keys (or keyless roots) to TUF is refused, as Kyverno refuses it there (docs/admission.md)"

// load reads --trusted-root: the material the signatures are verified
// with. The commands call it when they check their flags.
func (p *policyFlags) load() error {
	if p.trustedRoot == "" {
		return nil
	}
	tr, err := admission.LoadTrustedRoot(p.trustedRoot)
	if err != nil {
		return fmt.Errorf("--trusted-root: %w", err)
	}
	p.root = tr
	return nil
}

// verifier is the signature verifier the policies are checked with:
// cosign's, with the credentials of the Scanner that walked the images
// (with --pull-secrets, the pods' pull secrets first) and its transport
// (its retries, insecure hosts and request counts), and the trusted
// root load read.
func (p *policyFlags) verifier(s *scan.Scanner) admission.Verifier {
	v := admission.CosignVerifier{Keychain: s.Keychain(), Transport: s.Transport(), AirGapped: p.airGapped}
	if p.root != nil { // never a nil *TrustedRoot in the interface
		v.TrustedRoot = p.root
	}
	return v
}

// Usages of --policies.
const (
	scanPoliciesUsage  = "apply the image policies admission enforces (Kyverno verifyImages, sigstore policy-controller ClusterImagePolicy; docs/admission.md), from the cluster with --cluster or from the -f files: an image whose signature an enforcing policy requires is gone is broken; --policies=false skips them"
	watchPoliciesUsage = "apply the image policies admission enforces (Kyverno verifyImages, sigstore policy-controller ClusterImagePolicy; docs/admission.md), read from the cluster at each periodic walk (--interval), as scan --cluster does: an image whose signature an enforcing policy requires is gone is broken; --policies=false skips them (needs list on the policy kinds)"
	pinPoliciesUsage   = "refuse to pin a digest an enforcing image policy (Kyverno, sigstore policy-controller; docs/admission.md) would reject for a signature or attestation that is gone: the policies among the files pinned and, with --from-cluster, the cluster's; --policies=false skips them"
)

// clusterPolicies reads the cluster's image policies, logging what could
// not be read: a CRD not installed is a notice, anything else a warning
// that is also an input error (the verdicts may miss a policy).
func clusterPolicies(ctx context.Context, kt *kubeTarget, logger *slog.Logger) (*admission.Policies, []types.InputError, error) {
	dyn := kt.dynamic
	var disc discovery.DiscoveryInterface
	if kt.config != nil {
		// The apiserver's deprecation warnings (kyverno.io/v1 is
		// deprecated for the CEL policy kinds) are logged at debug, not
		// printed by client-go on every run.
		cfg := rest.CopyConfig(kt.config)
		cfg.WarningHandler = debugWarnings{logger}
		d, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("creating a Kubernetes dynamic client: %w", err)
		}
		dyn = d
		if disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
			return nil, nil, fmt.Errorf("creating a Kubernetes discovery client: %w", err)
		}
	}
	ps, problems, err := admission.Read(ctx, dyn, disc, kt.namespace)
	if err != nil {
		return nil, nil, err
	}
	// The keys the policies keep in Secrets: a GET on each one named.
	if err := (admission.SecretReader{Client: kt.client}).ReadSecrets(ctx, ps); err != nil {
		return nil, nil, err
	}
	return ps, policyProblems(problems, logger), nil
}

// debugWarnings logs the apiserver's Warning headers at debug level.
type debugWarnings struct{ logger *slog.Logger }

// HandleWarningHeader logs one warning.
func (w debugWarnings) HandleWarningHeader(code int, agent, text string) {
	w.logger.Debug("apiserver warning: "+text, "code", code)
}

// filePolicies reads the image policies among the -f files.
func filePolicies(paths []string, logger *slog.Logger) (*admission.Policies, []types.InputError) {
	ps, problems := admission.ReadFiles(paths)
	return ps, policyProblems(problems, logger)
}

// policyProblems logs each problem and returns the warnings as input
// errors.
func policyProblems(problems []admission.Problem, logger *slog.Logger) []types.InputError {
	var out []types.InputError
	for _, p := range problems {
		if !p.Warning {
			logger.Info(p.Message, "source", p.Source)
			continue
		}
		logger.Warn(p.Message, "source", p.Source, "line", p.Line)
		out = append(out, types.InputError{Source: p.Source, Line: p.Line, Message: types.Capped("image policies: " + p.Message)})
	}
	return out
}

// clusterAdmission applies the cluster's image policies to res, unless
// --policies=false, with the run's Scanner.
func (r *scanRun) clusterAdmission(ctx context.Context, kt *kubeTarget, res *types.Result) error {
	check, problems, err := r.clusterPolicyCheck(ctx, kt)
	if err != nil {
		return err
	}
	res.InputErrors = append(res.InputErrors, problems...)
	if check == nil {
		return nil
	}
	return check(ctx, r.scanner, res)
}

// clusterPolicyCheck reads the cluster's image policies: the check to
// apply to each result walked (nil with --policies=false), and the
// policies that could not be read. A cluster with no policy of either
// engine costs no request: the check is nil unless --policies was given.
func (r *scanRun) clusterPolicyCheck(ctx context.Context, kt *kubeTarget) (cluster.Then, []types.InputError, error) {
	if !r.f.policies.enabled {
		return nil, nil, nil
	}
	ps, problems, err := clusterPolicies(ctx, kt, r.g.logger)
	if err != nil {
		return nil, nil, err
	}
	if len(ps.Rules) == 0 && !r.f.policies.changed() {
		return nil, problems, nil
	}
	r.g.logger.Info("image policies read", "rules", len(ps.Rules))
	return policyCheck(ps, &r.f.policies), problems, nil
}

// fileAdmission applies the image policies among the -f files to res,
// when they hold one (or --policies was given). With --storage there is
// no registry to look for artifacts in: the policies are not applied.
func (r *scanRun) fileAdmission(ctx context.Context, res *types.Result) error {
	if !r.f.policies.enabled || len(r.f.filenames) == 0 {
		return nil
	}
	ps, problems := filePolicies(r.f.filenames, r.g.logger)
	res.InputErrors = append(res.InputErrors, problems...)
	if len(ps.Rules) == 0 && !r.f.policies.changed() {
		return nil
	}
	if r.f.storage.dir != "" {
		res.InputErrors = append(res.InputErrors, types.InputError{Source: "--storage", Notice: true,
			Message: "image policies are not applied to a registry's storage: its signatures are looked for through the registry's API"})
		return nil
	}
	return applyPolicies(ctx, r.scanner, ps, &r.f.policies, res, r.g.logger)
}

// applyPolicies adds what the policies say to each image of res, looking
// for artifacts through s and verifying signatures with pf's verifier, and
// logs how many rules were applied.
func applyPolicies(ctx context.Context, s *scan.Scanner, ps *admission.Policies, pf *policyFlags, res *types.Result, logger *slog.Logger) error {
	if err := policyCheck(ps, pf)(ctx, s, res); err != nil {
		return err
	}
	logger.Info("image policies applied", "rules", len(ps.Rules))
	return nil
}

// policyCheck applies ps to a result with the Scanner that walked it: its
// artifacts are looked for, and their signatures verified, with that
// Scanner's credentials (with --pull-secrets, the pods' pull secrets
// first, as for the walk).
func policyCheck(ps *admission.Policies, pf *policyFlags) cluster.Then {
	return func(ctx context.Context, s *scan.Scanner, res *types.Result) error {
		c := &admission.Checker{Policies: ps, Finder: artifacts.NewFinder(s), Parse: s.Parse, Verifier: pf.verifier(s)}
		if err := c.Apply(ctx, res); err != nil {
			return err
		}
		res.Requests = s.Requests()
		return nil
	}
}

// pinAdmission is the admission check pin applies to each digest before
// pinning it: the image policies among the files it pins and, with
// --from-cluster, the cluster's. The check is nil when --policies=false,
// with --allow-broken (no tree is walked), or when no rule was read. The
// policies that could not be read (a list forbidden, an object that does
// not decode) are findings, as scan makes them input errors: the pins
// are made without them, and the run is incomplete.
func pinAdmission(ctx context.Context, f *pinFlags, kt *kubeTarget, s *scan.Scanner, logger *slog.Logger) (func(context.Context, *types.Result) error, []pinresult.Finding, error) {
	if !f.policies.enabled || f.allowBroken {
		return nil, nil, nil
	}
	paths := f.paths
	if len(paths) == 0 {
		paths = []string{"."}
	}
	ps, problems := filePolicies(paths, logger)
	if kt != nil {
		// The pinned files' policies are the cluster's to be: their
		// Secret keys are read there too.
		if err := (admission.SecretReader{Client: kt.client}).ReadSecrets(ctx, ps); err != nil {
			return nil, nil, err
		}
		cps, cproblems, err := clusterPolicies(ctx, kt, logger)
		if err != nil {
			return nil, nil, err
		}
		ps.Rules = append(ps.Rules, cps.Rules...)
		ps.Labels, ps.LabelsKnown = cps.Labels, cps.LabelsKnown
		for n, tr := range cps.TrustRoots {
			if ps.TrustRoots == nil {
				ps.TrustRoots = map[string]admission.TrustRootKeys{}
			}
			ps.TrustRoots[n] = tr
		}
		problems = append(problems, cproblems...)
	}
	unread := policyFindings(problems)
	if len(ps.Rules) == 0 {
		return nil, unread, nil
	}
	c := &admission.Checker{Policies: ps, Finder: artifacts.NewFinder(s), Parse: s.Parse, Verifier: f.policies.verifier(s)}
	return c.Apply, unread, nil
}

// policyFindings makes each policy that could not be read a pin finding:
// at its file and line, or of no file for the cluster's.
func policyFindings(problems []types.InputError) []pinresult.Finding {
	var out []pinresult.Finding
	for _, p := range problems {
		fd := pinresult.Finding{Kind: pinresult.KindPolicyUnread, File: p.Source, Line: p.Line, Message: p.Message}
		if !strings.Contains(fd.Message, "not applied") {
			fd.Message += "; not applied to the pins"
		}
		if p.Source == "cluster" {
			fd.File, fd.Message = "", "the cluster's "+fd.Message
		}
		out = append(out, fd)
	}
	return out
}
