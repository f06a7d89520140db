package gc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/cleanup"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// Notes every cleanup report carries.
const (
	noteCleanupSeen  = "the registry API shows the tags, what they reach through indexes, the in-use pins, and referrers (the referrers API and the sha256-<hex> tags): a manifest nothing reaches is seen only where a service export (--registry-state) lists it"
	noteCleanupTimes = "the OCI API serves no push or pull times: a rule about age or pull time sees only the times the service exports give (a manifest or tag without one is judged as the model documents)"
)

// CleanupOptions says which registry cleanup to predict.
type CleanupOptions struct {
	// Policies are the cleanups (cleanup.Read), applied in this order to
	// each repository they clean.
	Policies []cleanup.Policy
	// States are the services' exports: the times, ids and untagged
	// manifests the OCI API does not serve.
	States []CleanupState
	// At is when the policies run; Runs how many runs of each are
	// predicted one after the other (at least 1).
	At   time.Time
	Runs int
	// Host, when set, is the registry serving the policies' repositories
	// (a mirror, a loopback registry): in-use images on other hosts are
	// skipped. An export that names a repository alone is looked for on it.
	Host string
	// Admission, when set, are the image policies admission enforces: an
	// in-use image whose required signature or attestation a cleanup
	// deletes would be refused (signature-missing).
	Admission *admission.Policies
}

// CleanupState is one service export and the repository it describes.
type CleanupState struct {
	// Repository is the repository (its path, or host/path) the export
	// describes, when the export itself does not name it.
	Repository string
	State      *cleanup.State
}

// InputError is a cleanup prediction's input that cannot be used as given
// (an export naming no repository where several are cleaned).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap is the reason.
func (e *InputError) Unwrap() error { return e.Err }

// CheckCleanup predicts what the registry cleanups opts describes do to
// the repositories they clean among the in-use images' (and those the
// exports name), and crosses it with the in-use targets. Each repository
// is surveyed through the registry API into a cleanup.Repository (tags,
// indexes with their children's platforms, referrers and cosign's tags),
// the exports merged into it, the policies run opts.Runs times, and every
// in-use image walked over the registry as the runs leave it: deleted
// tags and manifests not found, archived manifests answering as absent
// (ECR's 404). What it lacks only then, the cleanup breaks.
//
// A non-nil error with a non-nil report means the prediction is
// incomplete (listed under Skipped, and in the notes); an *InputError
// with no report, that an export cannot be placed.
func CheckCleanup(ctx context.Context, sc *scan.Scanner, opts CleanupOptions, targets []types.Target) (*gcresult.Report, error) {
	if opts.Runs < 1 {
		return nil, &InputError{fmt.Errorf("runs must be at least 1, not %d", opts.Runs)}
	}
	if len(opts.Policies) == 0 {
		return nil, &InputError{errors.New("no cleanup to predict")}
	}
	gopts := Options{Host: opts.Host, Policies: opts.Admission}
	plan := &Plan{Manifests: []gcresult.ManifestDeletion{}, Blobs: []string{}, LayerLinks: []LayerLink{}}
	c := &cleanupCheck{apiCheck: &apiCheck{sc: sc, rd: sc.Reader(), opts: gopts, plan: plan, rep: newReport(gcresult.ModeCleanup, gopts, plan)}, copts: opts}
	c.rep.Registries = []string{}
	c.rep.Cleanup = &gcresult.Cleanup{At: opts.At.UTC(), Runs: opts.Runs, Policies: []gcresult.CleanupPolicy{}, States: []gcresult.CleanupState{}, Deletions: []gcresult.CleanupDeletion{}}
	c.inUseSet(targets)
	if err := c.alreadyBroken(ctx); err != nil {
		return nil, err
	}
	if err := c.cleaned(); err != nil {
		return nil, err
	}
	if err := c.surveyCleaned(ctx); err != nil {
		return nil, err
	}
	c.mergeStates()
	c.unaged()
	c.runPolicies()
	c.crossCleanup(ctx)
	c.reportCleanup()
	return c.rep, errors.Join(c.problems...)
}

// cleanupCheck is one CheckCleanup, phase by phase: the in-use set and
// what is already broken as API mode has them, then its own phases.
type cleanupCheck struct {
	*apiCheck
	copts  CleanupOptions
	repos  []*cleanRepo          // sorted by name
	byRepo map[string]*cleanRepo // by name, host included
}

// cleanRepo is one repository a cleanup cleans.
type cleanRepo struct {
	host, path, name string
	repo             name.Repository
	policies         []cleanup.Policy
	states           []*cleanup.State
	pins             []string // in-use digests
	// before is the repository as surveyed and merged; after as the runs
	// leave it; gone what they remove.
	before, after *cleanup.Repository
	gone          *removal
	err           error
}

// removal is what the runs remove from one repository, each with why.
type removal struct {
	tags, manifests, archived map[string]removed
}

// removed is one removal: by which cleanup, in which run, under which rule.
type removed struct {
	policy string
	run    int
	cleanup.Rule
	// with is the deleted manifest a removed tag goes with ("" for a tag
	// removal of its own).
	with string
}

// cleaned decides the repositories to survey: each in-use one some policy
// cleans, and each one an export names.
func (c *cleanupCheck) cleaned() error {
	c.byRepo = map[string]*cleanRepo{}
	for _, im := range c.inUse {
		repo := im.ref.Context()
		if r := c.cleanRepo(repo); r != nil && im.Digest != "" {
			r.pins = append(r.pins, im.Digest)
		}
	}
	for _, st := range c.copts.States {
		if err := c.placeState(st); err != nil {
			return err
		}
	}
	for _, r := range c.byRepo {
		c.repos = append(c.repos, r)
	}
	sort.Slice(c.repos, func(i, j int) bool { return c.repos[i].name < c.repos[j].name })
	hosts := map[string]bool{}
	for _, r := range c.repos {
		if !hosts[r.host] {
			hosts[r.host] = true
			c.rep.Registries = append(c.rep.Registries, r.host)
		}
	}
	sort.Strings(c.rep.Registries)
	return nil
}

// cleanRepo returns the repository's entry, made on first sight, or nil
// when no policy cleans it.
func (c *cleanupCheck) cleanRepo(repo name.Repository) *cleanRepo {
	if r, ok := c.byRepo[repo.Name()]; ok {
		return r
	}
	var ps []cleanup.Policy
	for _, p := range c.copts.Policies {
		if p.Applies(repo.RepositoryStr()) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return nil
	}
	r := &cleanRepo{host: repo.RegistryStr(), path: repo.RepositoryStr(), name: repo.Name(), repo: repo, policies: ps}
	c.byRepo[r.name] = r
	return r
}

// placeState adds an export to the repository it describes: the one it
// or its REPO= names (a path alone on Host, or on the in-use images' one
// host), or the only repository cleaned when neither names one.
func (c *cleanupCheck) placeState(st CleanupState) error {
	want := cmp.Or(st.Repository, st.State.Repository)
	if want == "" {
		if len(c.byRepo) != 1 {
			return &InputError{fmt.Errorf("%s names no repository and %d repositories are cleaned: give it as REPO=%s", st.State.File, len(c.byRepo), st.State.File)}
		}
		for _, r := range c.byRepo {
			r.states = append(r.states, st.State)
		}
		return nil
	}
	for _, r := range c.byRepo {
		if r.path == want || r.name == want {
			r.states = append(r.states, st.State)
			return nil
		}
	}
	repo, err := c.stateRepository(want)
	if err != nil {
		return &InputError{fmt.Errorf("%s: %w", st.State.File, err)}
	}
	r := c.cleanRepo(repo)
	if r == nil {
		note(c.rep, "", fmt.Sprintf("%s describes %s, which no cleanup given cleans", st.State.File, repo.Name()))
		return nil
	}
	r.states = append(r.states, st.State)
	return nil
}

// stateRepository names the repository an export describes: host/path as
// given, or a path on Host (or on the one host the in-use images name).
func (c *cleanupCheck) stateRepository(want string) (name.Repository, error) {
	host := c.copts.Host
	if first, _, ok := strings.Cut(want, "/"); ok && strings.ContainsAny(first, ".:") {
		host = ""
	}
	if host == "" && !strings.ContainsAny(strings.SplitN(want, "/", 2)[0], ".:") {
		hosts := map[string]bool{}
		for _, im := range c.inUse {
			hosts[im.ref.Context().RegistryStr()] = true
		}
		if len(hosts) != 1 {
			return name.Repository{}, fmt.Errorf("repository %s: which registry serves it? give --registry", want)
		}
		for h := range hosts {
			host = h
		}
	}
	full := want
	if host != "" {
		full = host + "/" + want
	}
	_, ref, err := c.sc.Parse(full)
	if err != nil {
		return name.Repository{}, fmt.Errorf("repository %s: %w", want, err)
	}
	return ref.Context(), nil
}

// surveyCleaned surveys every cleaned repository, four at a time; one
// that could not be is noted, its images skipped. Only the end of ctx is
// an error.
func (c *cleanupCheck) surveyCleaned(ctx context.Context) error {
	return surveyAll(ctx, c.rep, &c.problems, 4, len(c.repos),
		func(ctx context.Context, i int) {
			r := c.repos[i]
			r.before, r.err = surveyRepository(ctx, c.sc, c.rd, r.repo, r.pins)
		},
		func(i int) (string, error) { return c.repos[i].name, c.repos[i].err })
}

// mergeStates adds each export to its repository.
func (c *cleanupCheck) mergeStates() {
	for _, r := range c.repos {
		for _, st := range r.states {
			c.rep.Cleanup.States = append(c.rep.Cleanup.States, gcresult.CleanupState{File: st.File, Service: st.Service, Repository: r.name})
			for _, n := range st.Notes {
				note(c.rep, "", st.File+": "+n)
			}
			if r.err == nil {
				st.Merge(r.before)
			}
		}
	}
}

// unaged makes the prediction incomplete for each in-use image the
// exports of its repository do not list (an empty export, one page of
// several): its age is unknown, and a cleanup by age would take it as
// new, saying clean where it may not be.
func (c *cleanupCheck) unaged() {
	for _, im := range c.inUse {
		r := c.byRepo[im.ref.Context().Name()]
		if r == nil || r.err != nil || len(r.states) == 0 {
			continue
		}
		d := im.Digest
		if t := r.before.Tags[im.Tag]; d == "" && t != nil {
			d = t.Digest
		}
		if d == "" || listed(r.states, d) {
			continue
		}
		var files []string
		for _, st := range r.states {
			files = append(files, st.File)
		}
		msg := fmt.Sprintf("%s lists no %s: its age is unknown, and with it what the cleanup does to %s", strings.Join(files, ", "), d, im.Reference)
		note(c.rep, "", msg)
		c.problems = append(c.problems, errors.New(msg))
	}
}

// listed says whether some export lists digest d, as a manifest or as a
// tag's.
func listed(states []*cleanup.State, d string) bool {
	for _, st := range states {
		for _, m := range st.Manifests {
			if m.Digest == d {
				return true
			}
		}
		for _, t := range st.Tags {
			if t.Digest == d {
				return true
			}
		}
	}
	return false
}

// runPolicies runs each repository's policies in order, each over the
// repository as the one before leaves it, and records what they remove.
func (c *cleanupCheck) runPolicies() {
	for _, p := range c.copts.Policies {
		cp := gcresult.CleanupPolicy{Name: p.Name(), Source: p.Source(), Repositories: []string{}}
		for _, r := range c.repos {
			if slices.Contains(r.policies, p) {
				cp.Repositories = append(cp.Repositories, r.name)
			}
		}
		c.rep.Cleanup.Policies = append(c.rep.Cleanup.Policies, cp)
	}
	for _, r := range c.repos {
		r.gone = &removal{tags: map[string]removed{}, manifests: map[string]removed{}, archived: map[string]removed{}}
		if r.err != nil {
			continue
		}
		cur := r.before
		for _, p := range r.policies {
			steps, after, err := cleanup.Runs(p, cur, c.copts.At, c.copts.Runs)
			if err != nil {
				c.problems = append(c.problems, fmt.Errorf("%s on %s: %w", p.Name(), r.name, err))
				continue
			}
			state := cur
			for _, s := range steps {
				c.record(r, p.Name(), s, state)
				state = cleanup.Apply(state, s.Plan)
			}
			cur = after
		}
		r.after = cur
	}
}

// record notes one run's plan over state (the repository as the run found
// it): in r.gone, and as the report's deletions.
func (c *cleanupCheck) record(r *cleanRepo, policy string, s cleanup.Step, state *cleanup.Repository) {
	add := func(kind gcresult.DeletionKind, tag, digest string, rm removed) {
		d := gcresult.CleanupDeletion{Policy: policy, Repository: r.name, Run: s.Run, Kind: kind, Tag: tag, Digest: digest, Rule: rm.Rule.Rule, Keep: rm.Keep, WithManifest: rm.with != ""}
		if !rm.Eligible.IsZero() {
			e := rm.Eligible.UTC()
			d.Eligible = &e
		}
		c.rep.Cleanup.Deletions = append(c.rep.Cleanup.Deletions, d)
	}
	for _, m := range s.Plan.Manifests {
		rm := removed{policy: policy, run: s.Run, Rule: m.Rule}
		r.gone.manifests[m.Digest] = rm
		add(gcresult.ManifestDeleted, "", m.Digest, rm)
		for _, t := range state.TagsOf(m.Digest) {
			rt := rm
			rt.with = m.Digest
			r.gone.tags[t] = rt
			add(gcresult.TagRemoved, t, m.Digest, rt)
		}
	}
	for _, t := range s.Plan.Tags {
		rm := removed{policy: policy, run: s.Run, Rule: t.Rule}
		if _, ok := r.gone.tags[t.Tag]; !ok {
			r.gone.tags[t.Tag] = rm
			add(gcresult.TagRemoved, t.Tag, t.Digest, rm)
		}
	}
	for _, m := range s.Plan.Archived {
		rm := removed{policy: policy, run: s.Run, Rule: m.Rule}
		r.gone.archived[m.Digest] = rm
		add(gcresult.ManifestArchived, "", m.Digest, rm)
	}
}

// goneByName is every repository's removal, by name: what the view of the
// registry after the runs hides.
func (c *cleanupCheck) goneByName() map[string]*removal {
	out := map[string]*removal{}
	for _, r := range c.repos {
		if r.gone != nil {
			out[r.name] = r.gone
		}
	}
	return out
}

// reportCleanup orders the deletions, lists the deleted manifests as
// WouldDelete, sums and advises.
func (c *cleanupCheck) reportCleanup() {
	ds := c.rep.Cleanup.Deletions
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		return cmp.Or(cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Run, b.Run), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Digest, b.Digest), cmp.Compare(a.Tag, b.Tag)) < 0
	})
	for _, d := range ds {
		if d.Kind == gcresult.ManifestDeleted {
			c.plan.Manifests = append(c.plan.Manifests, gcresult.ManifestDeletion{Repository: d.Repository, Digest: d.Digest})
		}
	}
	c.report()
	c.rep.Counts.Manifests = len(c.plan.Manifests)
	c.rep.Advice = cleanupAdvice(c.rep)
	c.rep.Notes = slices.DeleteFunc(c.rep.Notes, func(n gcresult.Note) bool { return n.Kind == gcresult.NoteBlobs })
	note(c.rep, "", noteCleanupSeen)
	note(c.rep, "", noteCleanupTimes)
}

// cleanupAdvice is a cleanup report's advice, most urgent first.
func cleanupAdvice(r *gcresult.Report) []string {
	var out []string
	if n := len(r.WouldBreak); n > 0 {
		out = append(out, fmt.Sprintf("do not run the cleanup as configured: %d in-use image(s) would break or be at risk; apply the fix each wouldBreak entry names (its advice, in the cleanup's own terms), then check again", n))
	}
	if len(r.WouldLoseArtifacts) > 0 {
		out = append(out, "the cleanup deletes signatures or attestations of in-use images (wouldLoseArtifacts): an admission policy requiring them refuses the next pod; keep them in the cleanup's terms, or sign and attest again after it")
	}
	if len(r.AlreadyBroken) > 0 {
		out = append(out, "rebuild the already-broken images from their commits, push them again, and point the workloads at the new digests; nodes that still run them do so from their cache")
	}
	return out
}
