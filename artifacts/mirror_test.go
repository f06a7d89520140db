package artifacts_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/scan"
)

// TestFindAtTheRegistryNotTheMirror: a node's mirror still serves a .sig
// the registry has lost. Admission controllers ask the registry itself:
// the finder does too, with a Scanner reading through the node's pull
// path, and finds the signature missing.
func TestFindAtTheRegistryNotTheMirror(t *testing.T) {
	upstream := startReferrersRegistry(t, nil)
	mirror := startReferrersRegistry(t, nil)
	up, mr := repoOf(t, upstream, "team/web"), repoOf(t, mirror, "team/web")
	d := pushImage(t, up, "v1", "mirrored")
	if got := pushImage(t, mr, "v1", "mirrored"); got != d {
		t.Fatalf("the mirror's copy is %s, the registry's %s", got, d)
	}
	legacySig("payload").push(t, mr, cosignTag(d, ".sig"))
	cfg := filepath.Join(t.TempDir(), "registries.yaml")
	body := "mirrors:\n  \"" + upstream + "\":\n    endpoint:\n      - \"http://" + mirror + "\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scan.New(scan.WithInsecureRegistries(upstream, mirror), scan.WithRetry(1, time.Millisecond), scan.WithPullPathFile(cfg))
	if err != nil {
		t.Fatal(err)
	}
	// The node's pull path does serve the mirror's .sig.
	if _, err := s.Reader().Resolve(context.Background(), up, cosignTag(d, ".sig")); err != nil {
		t.Fatalf("the pull path does not serve the mirror's .sig (the case tests nothing): %v", err)
	}
	set, err := artifacts.NewFinder(s).Find(context.Background(), up, d)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Presence(artifacts.Query{Kind: artifacts.Signature}); got != artifacts.Missing {
		t.Errorf("signature %s, want missing: only the mirror holds it (%+v, faults %+v)", got, set.Artifacts, set.Faults)
	}
}
