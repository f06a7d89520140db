package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/regcheck/regcheck/gc"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/types"
)

// flagHints name the flags that act on a finding's advice. The libraries'
// advice says what to do; the command says which of its flags does it.
var flagHints = map[types.Code]string{
	types.Unauthorized: "docker login, or --pull-secrets with --cluster",
	types.TLSError:     "--ca-file FILE, or --insecure-registry HOST",
	// Credentials raise Docker Hub's limit; the cap is the user's own.
	types.RateLimitBudget: "docker login, or a higher --max-pulls",
	types.Drift:           "regcheck pin --from-records",
	types.MirrorOnly:      "regcheck rescue --from-registry MIRROR",
}

// addFlagHints appends the flag that acts on each finding's advice.
func addFlagHints(res *types.Result) {
	for _, im := range res.Images {
		for i, f := range im.Findings {
			if h, ok := flagHints[f.Code]; ok && !strings.Contains(f.Advice, h) {
				im.Findings[i].Advice = strings.TrimSuffix(f.Advice, ".") + " (" + h + ")"
			}
		}
	}
}

// pinHints name the flags that act on pin's refusals: inside the
// parentheses a message ends with (what to do), after a colon, or else in
// parentheses of their own.
var pinHints = map[pinresult.Kind]string{
	pinresult.KindBroken:   "--allow-broken pins anyway",
	pinresult.KindPlatform: "regcheck pin without --from-cluster or --from-records",
}

// addPinHints adds to each refusal of r the flags that act on it.
func addPinHints(r *pinresult.Report) {
	for i, f := range r.Findings {
		h, ok := pinHints[f.Kind]
		if !ok || strings.Contains(f.Message, h) {
			continue
		}
		if m, inside := strings.CutSuffix(f.Message, ")"); inside {
			r.Findings[i].Message = m + ": " + h + ")"
		} else {
			r.Findings[i].Message = f.Message + " (" + h + ")"
		}
	}
}

// gcNoteHints are the words that end a gc-check note with the flag that
// acts on it.
var gcNoteHints = map[gcresult.NoteKind]string{
	gcresult.NoteInUseOnly: "; --all-repositories examines every repository its _catalog lists",
	gcresult.NoteBlobs:     " (--storage)",
	gcresult.NoteUndecided: " (--all-repositories decides)",
}

// addGCHints ends each note of rep with the flag that acts on it, and
// returns err, the problems of an incomplete prediction, with each naming
// the flag it comes of or that decides it.
func addGCHints(rep *gcresult.Report, err error) error {
	for i, n := range rep.Notes {
		if h, ok := gcNoteHints[n.Kind]; ok && !strings.HasSuffix(n.Text, h) {
			rep.Notes[i].Text += h
		}
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return gcProblemHint(err)
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, gcProblemHint(e))
	}
	return errors.Join(out...)
}

// gcProblemHint names in one problem of gc-check the flag it concerns.
func gcProblemHint(err error) error {
	var ce *gc.CatalogError
	var ue *gc.UndecidedError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("--all-repositories: %w", err)
	case errors.As(err, &ue):
		return fmt.Errorf("%w without --all-repositories", err)
	}
	return err
}
