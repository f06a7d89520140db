package admission

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/types"
)

// verifyCache remembers each (digest, key entry) verification of one
// Checker: rules naming the same key verify once.
type verifyCache struct {
	mu   sync.Mutex
	seen map[verifyKey]Verdict
}

// verifyKey is one verification: an image digest, a key entry and what
// is verified.
type verifyKey struct {
	ref, pem, repo string
	tlog           bool
	what           check
	id             string // KeyEntry.id: the log's key, keyless identities
}

// check is what an entry verifies: the signature, or an attestation of a
// predicate type, in a format.
type check struct {
	format      Format
	predicate   string
	attestation bool
}

// verifyEntry verifies ref against e, once per Checker.
func (c *Checker) verifyEntry(ctx context.Context, ref name.Digest, e KeyEntry, what check) Verdict {
	e = c.Policies.withTrustRoot(e)
	sigs, err := c.repository(ref, e.Repository)
	if err != nil {
		return Verdict{Outcome: Unverifiable, Reason: fmt.Sprintf("the repository %q at %s does not parse: %v", e.Repository, e.Path, err)}
	}
	k := verifyKey{ref.String(), e.PEM, sigs.String(), e.Tlog, what, e.id()}
	if e.Unverifiable == "" {
		c.verified.mu.Lock()
		v, ok := c.verified.seen[k]
		c.verified.mu.Unlock()
		if ok {
			return v
		}
	}
	v := c.verifyWith(ctx, ref, sigs, e, what)
	c.verified.mu.Lock()
	if c.verified.seen == nil {
		c.verified.seen = map[verifyKey]Verdict{}
	}
	c.verified.seen[k] = v
	c.verified.mu.Unlock()
	return v
}

// verifyFindings verifies, where the rule names keys, the signature
// (legacy or bundle) and the attestations its presence check found: none
// when an alternative verifies (policy-controller: any authority), else
// SignatureRefused or AttestationRefused when cosign refused what could
// be checked, else SignatureUnverifiable (or the fault) when what is left
// cannot be decided offline. An alternative whose artifacts are missing
// (another one was present) is passed over; one the engine refuses before
// reading anything is refused in its words (refusalIn).
func (c *Checker) verifyFindings(ctx context.Context, ru *ruleUses, im *types.Image, sets *repoSets) []types.Finding {
	if c.Verifier == nil {
		return nil
	}
	ref, ok := c.digestRef(im)
	if !ok {
		return nil
	}
	var worst *altResult
	var refused []altResult
	for _, n := range ru.rule.Alternatives {
		if needsIn(ctx, sets, n).state == artifacts.Missing {
			continue // not there: it admits nothing, and cosign has nothing to refuse
		}
		var r altResult
		if n.refusal != nil {
			r = refusalIn(ctx, sets, n) // refused in the engine's words, nothing verified
		} else {
			r = c.needsResult(ctx, ref, n)
		}
		if r.outcome == Verified {
			if ru.rule.Conditions != "" {
				return []types.Finding{ru.ruleConditionsFinding(n, im.Digest)}
			}
			return nil
		}
		if r.outcome == Refused {
			refused = append(refused, r)
		}
		if worst == nil || r.outcome == Unverifiable && worst.outcome == Refused {
			worst = &r
		}
	}
	if worst == nil {
		return nil
	}
	if worst.outcome == Refused && len(refused) > 1 {
		*worst = everyRefusal(refused)
	}
	return []types.Finding{ru.verifyFinding(*worst, im.Digest)}
}

// everyRefusal is the refusal of a policy none of whose alternatives
// (policy-controller authorities: any one admits, as ValidatePolicy in
// pkg/webhook/validator.go keeps a policy when one authority matches)
// verifies: each one's entry and cosign's text, as policy-controller
// lists each authority's error; one refused before anything was read
// (refusal.go) says so.
func everyRefusal(rs []altResult) altResult {
	out := rs[0]
	paths := make([]string, 0, len(rs))
	reasons := make([]string, 0, len(rs))
	engine := engineOnly(rs) // then said as the engine's refusal (refusalFinding)
	for _, r := range rs {
		paths = append(paths, r.entry.Path)
		if r.refusal != nil && !engine {
			// Refused before anything was read: the engine's text and
			// what to do, not cosign's.
			reasons = append(reasons, fmt.Sprintf("%s: the engine refuses the authority before reading anything: %q (%s)", r.entry.Path, r.verdict.Reason, r.refusal.advice))
			continue
		}
		reasons = append(reasons, r.entry.Path+": "+r.verdict.Reason)
	}
	if !engine {
		out.refusal = nil
	}
	out.entry.Path = "any of " + strings.Join(paths, ", ")
	out.verdict.Reason = strings.Join(reasons, "; ")
	return out
}

// engineOnly reports whether every one of rs was refused by the engine
// before it read anything.
func engineOnly(rs []altResult) bool {
	return !slices.ContainsFunc(rs, func(r altResult) bool { return r.refusal == nil })
}

// digestRef is im's digest in its repository as the registry client
// reaches it.
func (c *Checker) digestRef(im *types.Image) (name.Digest, bool) {
	_, r, err := c.Parse(im.Reference)
	if err != nil {
		return name.Digest{}, false
	}
	return r.Context().Digest(im.Digest), true
}

// repository is where a rule reads ref's signatures: ref's own repository
// when repo is "", else repo as the registry client reaches it (its
// insecure hosts included).
func (c *Checker) repository(ref name.Digest, repo string) (name.Repository, error) {
	if repo == "" {
		return ref.Context(), nil
	}
	_, r, err := c.Parse(repo)
	if err != nil {
		return name.Repository{}, err
	}
	return r.Context(), nil
}

// altResult is one alternative's verification and the entry that says
// why it did not pass; attestation and predicate when an attestation did
// not.
type altResult struct {
	outcome     Outcome
	entry       KeyEntry
	verdict     Verdict
	attestation bool
	predicate   string
	conditions  string         // Unverifiable: the attestation verifies, these are not evaluated
	refusal     *engineRefusal // Refused by the engine before it read anything (refusal.go)
}

// alternative verifies what against attestor sets: every set must pass;
// a set passes when Count of its entries (all, when 0) verify. A set that
// fails is unverifiable when its undecided entries could still make the
// count, refused otherwise.
func (c *Checker) alternative(ctx context.Context, ref name.Digest, sets []AttestorSet, what check) altResult {
	out := altResult{outcome: Verified}
	for _, set := range sets {
		need := set.Count
		if need <= 0 || need > len(set.Entries) {
			need = len(set.Entries)
		}
		var verified, open int
		var refused, undecided *altResult
		for _, e := range set.Entries {
			v := c.verifyEntry(ctx, ref, e, what)
			switch v.Outcome {
			case Verified:
				verified++
			case Unverifiable:
				open++
				undecided = &altResult{outcome: Unverifiable, entry: e, verdict: v}
			default:
				refused = &altResult{outcome: Refused, entry: e, verdict: v}
			}
		}
		switch {
		case verified >= need:
			continue
		case verified+open >= need && undecided != nil:
			out = *undecided
		case refused != nil && out.outcome != Unverifiable:
			out = *refused
		}
	}
	return out
}

// verifyFinding says what verification gave: a refusal (broken under an
// enforcing rule, at-risk under an auditing or unsure one), or what
// could not be decided (unknown).
func (ru *ruleUses) verifyFinding(r altResult, digest string) types.Finding {
	what, it, refused := "a signature", "the signature", types.SignatureRefused
	if r.attestation {
		what, it, refused = "an attestation of predicate type "+r.predicate, "the attestation", types.AttestationRefused
	}
	if r.conditions != "" {
		return ru.conditionsFinding(r, digest)
	}
	if r.refusal != nil {
		return ru.refusalFinding(r, digest)
	}
	if r.outcome == Unverifiable {
		code := types.SignatureUnverifiable
		if r.verdict.Fault {
			code = cmp.Or(types.FaultCode(r.verdict.Cause), types.RegistryFault)
		}
		return types.NewAdvisedFinding(code, digest, "",
			fmt.Sprintf("%s requires %s of %s by %s for %s; whether it verifies could not be decided offline: %s",
				ru.rule.named(), what, types.ShortDigest(digest), r.entry.Path, usesText(ru.uses), r.verdict.Reason),
			code.Advice("", digest))
	}
	msg := fmt.Sprintf("%s%s requires %s of %s by %s for %s; %s is there, and cosign refuses it: %s",
		ru.rule.named(), ru.overridden(), what, types.ShortDigest(digest), r.entry.Path, usesText(ru.uses), it, r.verdict.Reason)
	return ru.act(types.NewFinding(refused, digest, "", "%s", msg))
}
