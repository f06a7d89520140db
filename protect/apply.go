package protect

import (
	"context"
	"time"

	"github.com/regcheck/regcheck/results/protectresult"
)

// Tagger writes and removes tags in a registry.
type Tagger interface {
	// Tag makes tag name the manifest digest names in repository: the
	// manifest's exact bytes PUT by the tag, with its media type.
	Tag(ctx context.Context, repository, digest, tag string) error
}

// Untagger removes a tag and never the manifest it names.
type Untagger interface {
	Untag(ctx context.Context, repository, tag string) error
}

// Apply writes the planned keep-tags of rep with t and adds each tag
// written, or found already there and not yet audited, to the audit at
// now. Tags already there are not written again. It returns whether the
// audit changed; a tag that could not be written is Failed, with why.
func Apply(ctx context.Context, rep *protectresult.Report, t Tagger, a *protectresult.Audit, now time.Time) bool {
	changed := false
	for i := range rep.Keep {
		k := &rep.Keep[i]
		switch k.Status {
		case protectresult.Planned:
			if err := t.Tag(ctx, k.Repository, k.Digest, k.Tag); err != nil {
				k.Status, k.Error = protectresult.Failed, err.Error()
				continue
			}
			k.Status = protectresult.Written
		case protectresult.Present:
		default:
			continue
		}
		if !audited(a, rep.Owner, k.Repository, k.Tag, k.Digest) {
			a.Entries = append(a.Entries, protectresult.AuditEntry{Repository: k.Repository, Tag: k.Tag, Digest: k.Digest, Why: k.Why, Owner: rep.Owner, Time: now.UTC()})
			changed = true
		}
	}
	rep.Applied = true
	count(rep)
	return changed
}
