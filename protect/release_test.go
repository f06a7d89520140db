package protect

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/regtree"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/storage"
)

type fakeUntagger struct {
	removed []string
	fail    bool
}

func (f *fakeUntagger) Untag(_ context.Context, repo, tag string) error {
	if f.fail {
		return errors.New("400 DIGEST_INVALID")
	}
	f.removed = append(f.removed, repo+":"+tag)
	return nil
}

// TestRelease: only this owner's audited tags that the keep set no longer
// needs and that still name their audited digest are removed; an untag
// that fails leaves the tag, and the audit entry.
func TestRelease(t *testing.T) {
	t.Parallel()
	tr := regtree.New(t)
	a, _ := tr.Image("app", "a")
	b, _ := tr.Image("app", "b")
	for _, tag := range []string{"keep-needed", "keep-unneeded", "keep-other-owner", "keep-moved"} {
		tr.Tag("app", tag, a)
	}
	tr.Tag("app", "keep-moved", b)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(tag, owner string) protectresult.AuditEntry {
		return protectresult.AuditEntry{Repository: "app", Tag: tag, Digest: a, Owner: owner}
	}
	for _, tc := range []struct {
		name        string
		fail        bool
		wantRemoved []string
		wantLeft    int
	}{
		{name: "removes the unneeded one", wantRemoved: []string{"app:keep-unneeded"}, wantLeft: 3},
		{name: "a refused untag leaves it audited", fail: true, wantLeft: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			audit := &protectresult.Audit{Entries: []protectresult.AuditEntry{entry("keep-needed", "prod"), entry("keep-unneeded", "prod"), entry("keep-other-owner", "staging"), entry("keep-moved", "prod")}}
			rep := &protectresult.Report{Owner: "prod", Keep: []protectresult.Kept{{Repository: "app", Digest: a, Tag: "keep-needed"}}}
			u := &fakeUntagger{fail: tc.fail}
			changed := Release(context.Background(), rep, st, u, "", audit)
			if !slices.Equal(u.removed, tc.wantRemoved) || len(audit.Entries) != tc.wantLeft || changed != (len(tc.wantRemoved) > 0) {
				t.Fatalf("removed %v, audit %d entries, changed %v; want %v, %d", u.removed, len(audit.Entries), changed, tc.wantRemoved, tc.wantLeft)
			}
			if len(rep.Released) != 2 {
				t.Fatalf("released %+v; want the unneeded and the moved tag looked at", rep.Released)
			}
		})
	}
}
