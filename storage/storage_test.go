package storage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/regcheck/regcheck/internal/testing/regtree"
	"github.com/regcheck/regcheck/storage"
	"github.com/regcheck/regcheck/types"
)

func TestOpenNotStorage(t *testing.T) {
	if _, err := storage.Open(t.TempDir()); err == nil {
		t.Fatal("an empty folder opened as storage")
	}
}

// The storage as a walk.Reader: absence is types.ErrNotFound, as a
// registry's 404 is; manifest data that is not a manifest is a fault.
func TestReader(t *testing.T) {
	tr, s := regtree.Seeded(t)
	corrupt := tr.Blob("not a manifest")
	tr.Write(filepath.Join("repositories", "app", "_manifests", "revisions", "sha256", regtree.Hex(corrupt), "link"), corrupt)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, app := context.Background(), storage.Repo("app")
	rd := st.Reader(storage.V3)
	if d, err := rd.Resolve(ctx, app, "v1"); err != nil || d.Digest != s.Idx {
		t.Errorf("resolve app:v1: %v %v", d, err)
	}
	if m, err := rd.Manifest(ctx, app, s.Idx); err != nil || !m.IsIndex() || len(m.Manifests) != 2 {
		t.Errorf("manifest %s: %+v %v", s.Idx, m, err)
	}
	if err := rd.Blob(ctx, app, s.AmdBlobs[1]); err != nil {
		t.Errorf("blob: %v", err)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"tag", func() error { _, err := rd.Resolve(ctx, app, "v2"); return err }()},
		{"repository", func() error { _, err := rd.Resolve(ctx, storage.Repo("nope"), "v1"); return err }()},
		{"manifest of another repository", func() error { _, err := rd.Manifest(ctx, app, s.Lone); return err }()},
		{"blob of another repository", rd.Blob(ctx, app, s.OldBlobs[0])},
	} {
		if !errors.Is(tc.err, types.ErrNotFound) {
			t.Errorf("%s: %v, want not found", tc.name, tc.err)
		}
	}
	if _, err := rd.Manifest(ctx, app, corrupt); err == nil || errors.Is(err, types.ErrNotFound) || types.FaultCode(err) == "" {
		t.Errorf("corrupt manifest: %v, want a fault", err)
	}
	// Data gone since Open is absence.
	os.Remove(tr.DataPath(s.Arm))
	if _, err := rd.Manifest(ctx, app, s.Arm); !errors.Is(err, types.ErrNotFound) {
		t.Errorf("data gone: %v, want not found", err)
	}
}

// TestWithout: a removal leaves the storage it came from as it was, and
// the copy serves neither the removed revision, the layer link, nor the
// blob data; nil removes nothing.
func TestWithout(t *testing.T) {
	tr, s := regtree.Seeded(t)
	st, err := storage.Open(tr.Root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, app := context.Background(), storage.Repo("app")
	after := st.Without(&storage.Removal{
		Blobs:      []string{s.ArmBlobs[1]},
		Revisions:  []storage.Revision{{RepoDigest: storage.RepoDigest{Repository: "app", Digest: s.Arm}}},
		LayerLinks: []storage.RepoDigest{{Repository: "app", Digest: s.AmdBlobs[0]}},
	})
	for _, tc := range []struct {
		name        string
		err, before error
	}{
		{"removed revision", manifestErr(after, s.Arm), manifestErr(st, s.Arm)},
		{"removed layer link", after.Reader(storage.V3).Blob(ctx, app, s.AmdBlobs[0]), st.Reader(storage.V3).Blob(ctx, app, s.AmdBlobs[0])},
		{"removed blob data", after.Reader(storage.V3).Blob(ctx, app, s.ArmBlobs[1]), st.Reader(storage.V3).Blob(ctx, app, s.ArmBlobs[1])},
	} {
		if !errors.Is(tc.err, types.ErrNotFound) {
			t.Errorf("%s: %v after, want not found", tc.name, tc.err)
		}
		if tc.before != nil {
			t.Errorf("%s: the storage removed from changed too: %v", tc.name, tc.before)
		}
	}
	if err := manifestErr(st.Without(nil), s.Amd); err != nil {
		t.Errorf("Without(nil) removed something: %v", err)
	}
}

func manifestErr(st *storage.Storage, d string) error {
	_, err := st.Reader(storage.V3).Manifest(context.Background(), storage.Repo("app"), d)
	return err
}
