//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/types"
)

// seedProtect pushes the seed's shapes to a running registry of version:
// the fixtures (a buildx index with its attestation, a two-platform index,
// a manifest list, an index with one child tagged), a tag that moved (its
// old build pinned by digest), a digest-only push, and the two-platform
// index's amd64 child tagged in another repository only. It returns the
// registry and the in-use references.
func seedProtect(t *testing.T, version string) (*registry.Registry, []string) {
	t.Helper()
	r, imgs := startRegistry(t, version)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := r.Host()
	base := "base layer shared by app-a, app-b and the multiarch children"
	old := gcPush(t, ctx, h+"/gc/retag:v1", gcImage(t, base, "retag first build"))
	gcPush(t, ctx, h+"/gc/retag:v1", gcImage(t, base, "retag second build"))
	only := gcPush(t, ctx, h+"/gc/single@", gcImage(t, base, "pushed by digest only"))
	var refs []string
	for _, im := range imgs {
		refs = append(refs, im.Ref)
		if im.Name != "multiarch" {
			continue
		}
		child, err := name.NewDigest(h+"/gc/multiarch@"+im.Children[0].Digest.String(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(child, remote.WithContext(ctx), remote.WithTransport(http.DefaultTransport))
		if err != nil {
			t.Fatal(err)
		}
		gcPush(t, ctx, h+"/gc/other:amd64", img)
	}
	refs = append(refs, h+"/gc/retag:v1", h+"/gc/retag@"+old.String(), h+"/gc/single@"+only.String())
	return r, refs
}

// protectCLI runs regcheck with args and returns its exit code and stdout.
func protectCLI(t *testing.T, args ...string) (int, []byte) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	t.Logf("regcheck %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.Bytes()
}

// writeRefs writes an --images-from file.
func writeRefs(t *testing.T, refs []string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in-use.txt")
	if err := os.WriteFile(p, []byte(strings.Join(refs, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// scanBroken is what regcheck scan says is broken among refs, sorted.
func scanBroken(t *testing.T, refs []string) []string {
	t.Helper()
	_, out := protectCLI(t, append([]string{"scan", "-o", "json"}, refs...)...)
	var doc report.Document
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("scan output: %v", err)
	}
	var broken []string
	for _, im := range doc.Images {
		if im.Verdict == types.Broken {
			broken = append(broken, im.Reference)
		}
		if im.Verdict == types.Unknown {
			t.Fatalf("scan could not decide %s", im.Reference)
		}
	}
	sort.Strings(broken)
	return broken
}

// predictBroken is what gc-check predicts the run breaks among the refs.
func predictBroken(t *testing.T, root, model, from string) []string {
	t.Helper()
	_, out := protectCLI(t, "gc-check", "-o", "json", "--storage", root, "--gc-model", model, "--delete-untagged", "--images-from", from)
	var rep gcresult.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("gc-check output: %v", err)
	}
	var broken []string
	for _, e := range rep.WouldBreak {
		if e.Verdict == types.Broken {
			broken = append(broken, e.Reference)
		}
	}
	sort.Strings(broken)
	return broken
}

// protectJSON runs protect -o json and decodes its report.
func protectJSON(t *testing.T, wantCode int, args ...string) protectresult.Report {
	t.Helper()
	code, out := protectCLI(t, append([]string{"protect", "-o", "json"}, args...)...)
	if code != wantCode {
		t.Fatalf("protect exit %d, want %d", code, wantCode)
	}
	var rep protectresult.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("protect output: %v", err)
	}
	return rep
}

// TestProtectDistribution28 is the seed incident: docker/distribution
// 2.8.3's own garbage-collect --delete-untagged, run without protect,
// breaks exactly what gc-check predicts; after protect --apply, scan says
// nothing in use is broken. A second --apply writes nothing.
func TestProtectDistribution28(t *testing.T) {
	for _, shield := range []bool{false, true} {
		t.Run(map[bool]string{false: "without", true: "with"}[shield], func(t *testing.T) {
			r, refs := seedProtect(t, registry.V2)
			from := writeRefs(t, refs)
			predicted := predictBroken(t, r.Root, "distribution-2.8", from)
			if len(predicted) == 0 {
				t.Fatal("gc-check predicts nothing breaks: the seed does not reproduce the incident")
			}
			base := []string{"--storage", r.Root, "--gc-model", "distribution-2.8", "--delete-untagged", "--images-from", from}
			if shield {
				applyTwice(t, base, len(predicted))
			}
			collect(t, r)
			broken := scanBroken(t, refs)
			if shield {
				if len(broken) != 0 {
					t.Fatalf("after protect --apply and the real GC, scan says %d broken: %v", len(broken), broken)
				}
				return
			}
			if !slices.Equal(broken, predicted) {
				t.Fatalf("the real GC broke %v; gc-check predicted %v", broken, predicted)
			}
			t.Logf("without protect the real GC broke %d in-use images: %v", len(broken), broken)
		})
	}
}

// applyTwice runs protect --apply: the proof says 0 would break over the
// shield and breakBefore is gc-check's count; a second run writes nothing
// and leaves the audit file as it was.
func applyTwice(t *testing.T, base []string, predicted int) {
	t.Helper()
	audit := filepath.Join(t.TempDir(), "audit.json")
	args := append(append([]string{}, base...), "--apply", "--audit", audit, "--owner", "prod")
	rep := protectJSON(t, cli.ExitClean, args...)
	if rep.Proof.BreakBefore != predicted || rep.Proof.BreakAfter != 0 || rep.Counts.Written == 0 || rep.Counts.Written != rep.Counts.Tags {
		t.Fatalf("first --apply: proof %+v counts %+v; want %d before, 0 after, every tag written", rep.Proof, rep.Counts, predicted)
	}
	first, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var a protectresult.Audit
	if err := json.Unmarshal(first, &a); err != nil || len(a.Entries) != rep.Counts.Written {
		t.Fatalf("audit: %v, %d entries; want %d", err, len(a.Entries), rep.Counts.Written)
	}
	again := protectJSON(t, cli.ExitClean, args...)
	if again.Counts.Written != 0 || again.Counts.Present != rep.Counts.Tags {
		t.Fatalf("second --apply: counts %+v; want nothing written, %d present", again.Counts, rep.Counts.Tags)
	}
	if second, _ := os.ReadFile(audit); !bytes.Equal(first, second) {
		t.Fatal("second --apply changed the audit file")
	}
}
