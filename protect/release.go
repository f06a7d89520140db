package protect

import (
	"context"

	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/storage"
)

// Release removes, with u, exactly the tags the audit says rep's owner
// wrote that rep's keep set no longer needs, and drops them from the
// audit. A tag that no longer names the audited digest is left, and so is
// every tag when u is nil (Release says why: reason). It returns whether
// the audit changed.
func Release(ctx context.Context, rep *protectresult.Report, s *storage.Storage, u Untagger, reason string, a *protectresult.Audit) bool {
	needed := map[string]bool{}
	for _, k := range rep.Keep {
		if k.Tag != "" {
			needed[k.Repository+":"+k.Tag] = true
		}
	}
	var keep []protectresult.AuditEntry
	changed := false
	for _, e := range a.Entries {
		if e.Owner != rep.Owner || needed[e.Repository+":"+e.Tag] {
			keep = append(keep, e)
			continue
		}
		r := release(ctx, s, u, reason, e)
		rep.Released = append(rep.Released, r)
		if r.Removed || gone(s, e) {
			changed = true // removed now, or by someone else before
			continue
		}
		keep = append(keep, e)
	}
	if keep == nil {
		keep = []protectresult.AuditEntry{}
	}
	a.Entries = keep
	count(rep)
	return changed
}

// names reports whether the audited tag names its digest in s.
func names(s *storage.Storage, e protectresult.AuditEntry) bool {
	r := s.Repositories[e.Repository]
	if r == nil {
		return false
	}
	t := r.Tags[e.Tag]
	return t != nil && t.Current == e.Digest
}

// gone reports whether the audited tag is not in s at all (removed by hand).
func gone(s *storage.Storage, e protectresult.AuditEntry) bool {
	r := s.Repositories[e.Repository]
	return r == nil || r.Tags[e.Tag] == nil
}

// release removes one audited tag with u, or says why not.
func release(ctx context.Context, s *storage.Storage, u Untagger, reason string, e protectresult.AuditEntry) protectresult.Release {
	r := protectresult.Release{Repository: e.Repository, Tag: e.Tag, Digest: e.Digest}
	switch {
	case gone(s, e):
		r.Reason = "the tag is not there any more"
	case !names(s, e):
		r.Reason = "the tag no longer names the audited digest; left as it is"
	case u == nil:
		r.Reason = reason
	default:
		if err := u.Untag(ctx, e.Repository, e.Tag); err != nil {
			r.Reason = err.Error()
		} else {
			r.Removed = true
		}
	}
	return r
}
