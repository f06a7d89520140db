package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/cleanup"
	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/internal/inputfile"
	"github.com/regcheck/regcheck/internal/redact"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// cleanupFlags are gc-check's flags for a registry cleanup.
type cleanupFlags struct {
	files  []string
	states []string
	at     string
	runs   int
}

// cleanupHelp is the part of gc-check's help about --cleanup.
const cleanupHelp = `
With --cleanup FILE it predicts a registry cleanup instead of a collector:
a GitHub Actions workflow using a GHCR cleanup action
(actions/delete-package-versions, snok/container-retention-policy,
dataaxiom/ghcr-cleanup-action: the @ref decides the behaviour), an ECR
lifecycle policy (aws ecr get-lifecycle-policy output or the policy text),
a GitLab cleanup policy (the Projects API's container_expiration_policy)
or a Harbor retention policy (/api/v2.0/retentions/ID), told apart by
content. The repositories it cleans among the in-use images' are surveyed
through the registry API (tags, indexes and their children, referrers and
cosign's sha256-<hex> tags); the times the API does not serve come from
the service's own export, --registry-state [REPO=]FILE (GitHub's package
versions, aws ecr describe-images, GitLab's registry tags, Harbor's
artifacts with_tag=true). --at evaluates at a given time, --runs applies
the cleanup several times, and --registry names the registry serving the
repositories when it is not the service's own host. It reports the in-use
images the cleanup breaks (tag-deleted, child-missing, archived,
signature-missing with --cluster's image policies; pinned-digest-untagged
at risk), each with the rule and the fix in the cleanup's own terms, and
everything it deletes. See docs/gc-check.md for the export commands and a
gate for the cleanup's own workflow.
`

func (c *cleanupFlags) addTo(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&c.files, "cleanup", nil, "predict this registry cleanup instead of a garbage collector: a GitHub Actions workflow with a GHCR cleanup step, an ECR lifecycle policy, a GitLab cleanup policy or a Harbor retention policy (repeatable)")
	fl.StringArrayVar(&c.states, "registry-state", nil, "with --cleanup: the service's export of a repository, [REPO=]FILE (gh api .../packages/container/NAME/versions, aws ecr describe-images, GitLab's registry tags, Harbor's artifacts); REPO names the repository when the export does not (repeatable)")
	fl.StringVar(&c.at, "at", "", "with --cleanup: evaluate the cleanup at this time (RFC 3339, or a date 2006-01-02; default now)")
	fl.IntVar(&c.runs, "runs", 1, "with --cleanup: apply the cleanup this many times, one run after the other")
}

// conflicts says which other flags --cleanup does not go with.
func (c *cleanupFlags) conflicts(cmd *cobra.Command) error {
	if len(c.files) == 0 {
		for _, n := range []string{"registry-state", "at", "runs"} {
			if cmd.Flags().Changed(n) {
				return fmt.Errorf("--%s goes with --cleanup", n)
			}
		}
		return nil
	}
	for _, n := range []string{"storage", "gc-model", "delete-untagged", "all-repositories"} {
		if cmd.Flags().Changed(n) {
			return fmt.Errorf("--%s is about a garbage collector, not --cleanup", n)
		}
	}
	if c.runs < 1 {
		return fmt.Errorf("--runs %d: at least 1", c.runs)
	}
	return nil
}

// parseAt reads --at: RFC 3339, or a date (midnight UTC); now when empty.
func parseAt(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--at %q: want RFC 3339 (2026-12-01T03:00:00Z) or a date (2026-12-01)", s)
	}
	return t, nil
}

// readPolicies reads every --cleanup file.
func (c *cleanupFlags) readPolicies() ([]cleanup.Policy, error) {
	var out []cleanup.Policy
	for _, f := range c.files {
		data, err := inputfile.Read(f, inputfile.MaxConfig)
		if err != nil {
			return nil, fmt.Errorf("--cleanup: %w", err)
		}
		ps, err := cleanup.Read(f, data)
		if err != nil {
			return nil, fmt.Errorf("--cleanup: %w", err)
		}
		out = append(out, ps...)
	}
	return out, nil
}

// readStates reads every --registry-state [REPO=]FILE: a path that exists
// as given is a file, whatever it holds.
func (c *cleanupFlags) readStates() ([]gc.CleanupState, error) {
	var out []gc.CleanupState
	for _, arg := range c.states {
		repo, file := "", arg
		if _, err := os.Stat(arg); err != nil {
			if r, f, ok := strings.Cut(arg, "="); ok && r != "" {
				repo, file = r, f
			}
		}
		data, err := inputfile.Read(file, inputfile.MaxExport)
		if err != nil {
			return nil, fmt.Errorf("--registry-state: %w", err)
		}
		st, err := cleanup.ReadState(file, data)
		if err != nil {
			return nil, fmt.Errorf("--registry-state: %w", err)
		}
		st.File = redact.String(st.File) // the reports and notes name it
		out = append(out, gc.CleanupState{Repository: repo, State: st})
	}
	return out, nil
}

// runGCCheckCleanup is gc-check --cleanup: a registry cleanup predicted
// through the registry API and the services' exports.
func runGCCheckCleanup(cmd *cobra.Command, s Streams, g *globals, f *gcCheckFlags, render func(io.Writer, *gcresult.Report) error, targets []types.Target, policies *admission.Policies, incomplete bool) error {
	at, err := parseAt(f.cleanup.at, time.Now())
	if err != nil {
		return usageError(err)
	}
	ps, err := f.cleanup.readPolicies()
	if err != nil {
		return usageError(err)
	}
	states, err := f.cleanup.readStates()
	if err != nil {
		return usageError(err)
	}
	if len(targets) == 0 && len(states) == 0 {
		if incomplete {
			return &exitError{code: ExitIncomplete, err: errors.New("no image references could be read")}
		}
		return usageError(errors.New("--cleanup needs in-use images (arguments, -f, --images-from, --cluster, --from-records) or --registry-state"))
	}
	sc, err := scan.New(f.registry.options(g)...)
	if err != nil {
		return usageError(err)
	}
	opts := gc.CleanupOptions{Policies: ps, States: states, At: at, Runs: f.cleanup.runs, Host: f.host, Admission: policies}
	rep, err := gc.CheckCleanup(cmd.Context(), sc, opts, targets)
	var ie *gc.InputError
	if errors.As(err, &ie) {
		return usageError(err)
	}
	return gcCheckReport(s, g, rep, err, render, incomplete)
}
