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
// breaks exactly what gc-check predicts (scan and containerd's ctr content
// fetch, per platform, agree); after protect --apply, neither finds
// anything in use broken. A second --apply writes nothing; --apply on an
// incomplete in-use set writes nothing; --release removes the tag's
// folder from the storage.
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
			audit := filepath.Join(t.TempDir(), "audit.json")
			if shield {
				refuseIncomplete(t, r.Host(), append(base, "--apply", "--audit", audit, "-f", filepath.Join(t.TempDir(), "gone.yaml")))
				applyTwice(t, append(base, "--audit", audit), len(predicted))
			}
			collect(t, r)
			broken := scanBroken(t, refs)
			failed := fetchFailures(t, refs)
			if shield {
				if len(broken) != 0 || len(failed) != 0 {
					t.Fatalf("after protect --apply and the real GC, scan says %d broken: %v; fetches failed: %v", len(broken), broken, failed)
				}
				releaseFromStorage(t, r.Host(), base, audit, refs)
				return
			}
			if !slices.Equal(broken, predicted) || !slices.Equal(failed, predicted) {
				t.Fatalf("the real GC broke %v (fetches failed for %v); gc-check predicted %v", broken, failed, predicted)
			}
			t.Logf("without protect the real GC broke %d in-use images: %v", len(broken), broken)
		})
	}
}

// refuseIncomplete runs protect --apply on an in-use set that could not
// be read whole: exit 3, no tag written, no audit file.
func refuseIncomplete(t *testing.T, host string, args []string) {
	t.Helper()
	before := listTags(t, host, "gc/multiarch")
	if code, _ := protectCLI(t, append([]string{"protect"}, args...)...); code != cli.ExitIncomplete {
		t.Fatalf("--apply on an incomplete in-use set: exit %d, want %d", code, cli.ExitIncomplete)
	}
	if got := listTags(t, host, "gc/multiarch"); !slices.Equal(got, before) {
		t.Fatalf("--apply on an incomplete in-use set wrote tags: %v, before %v", got, before)
	}
	if _, err := os.Stat(args[len(args)-3]); err == nil {
		t.Fatal("--apply on an incomplete in-use set wrote the audit file")
	}
}

// releaseFromStorage drops the retag pin from the in-use set and runs
// --release on 2.8: docker/distribution 2.x refuses DELETE by tag, so the
// tag's folder is removed from the storage; exactly that tag goes.
func releaseFromStorage(t *testing.T, host string, base []string, audit string, refs []string) {
	t.Helper()
	before := listTags(t, host, "gc/retag")
	in := append(slices.Clone(refs[:len(refs)-2]), refs[len(refs)-1])
	rep := protectJSON(t, cli.ExitClean, append(append([]string{}, base[:len(base)-1]...), writeRefs(t, in), "--release", "--audit", audit, "--owner", "prod")...)
	if len(rep.Released) != 1 || !rep.Released[0].Removed || rep.Released[0].Repository != "gc/retag" {
		t.Fatalf("--release: %+v; want the gc/retag pin's keep-tag removed alone", rep.Released)
	}
	after := listTags(t, host, "gc/retag")
	if want := slices.DeleteFunc(slices.Clone(before), func(s string) bool { return s == rep.Released[0].Tag }); !slices.Equal(after, want) || len(after) != len(before)-1 {
		t.Fatalf("gc/retag tags after --release %v, before %v", after, before)
	}
}

// applyTwice runs protect --apply: the proof says 0 would break over the
// shield and breakBefore is gc-check's count; a second run writes nothing
// and leaves the audit file as it was.
func applyTwice(t *testing.T, base []string, predicted int) {
	t.Helper()
	audit := base[len(base)-1]
	args := append(append([]string{}, base...), "--apply", "--owner", "prod")
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

// listTags is the registry's tag list of repo, sorted.
func listTags(t *testing.T, host, repo string) []string {
	t.Helper()
	r, err := name.NewRepository(host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(r, remote.WithTransport(http.DefaultTransport))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tags)
	return tags
}

// TestProtectDistribution3 holds protect to distribution 3.1.2: without
// protect its real GC breaks what gc-check predicts (the digest pins no
// tag reaches); protect tags only those (a kept index keeps its children
// under 3.x), and after the real GC scan says 0 broken. --release, once a
// pin is no longer in use, removes exactly that audited tag by name: the
// tag lists before and after differ by it alone, the manifest stays until
// the next GC collects it.
func TestProtectDistribution3(t *testing.T) {
	t.Run("without", func(t *testing.T) {
		r, refs := seedProtect(t, registry.V3)
		predicted := predictBroken(t, r.Root, "distribution-3", writeRefs(t, refs))
		collect(t, r)
		broken, failed := scanBroken(t, refs), fetchFailures(t, refs)
		if len(predicted) == 0 || !slices.Equal(broken, predicted) || !slices.Equal(failed, predicted) {
			t.Fatalf("the real GC broke %v (fetches failed for %v); gc-check predicted %v", broken, failed, predicted)
		}
		t.Logf("without protect the real GC broke %d in-use images: %v", len(predicted), predicted)
	})
	t.Run("with, then release", func(t *testing.T) {
		r, refs := seedProtect(t, registry.V3)
		h, audit := r.Host(), filepath.Join(t.TempDir(), "audit.json")
		base := []string{"--storage", r.Root, "--gc-model", "distribution-3", "--delete-untagged", "--audit", audit, "--owner", "prod"}
		rep := protectJSON(t, cli.ExitClean, append(base, "--apply", "--images-from", writeRefs(t, refs))...)
		pins := refs[len(refs)-2:] // gc/retag@old and gc/single@digest-only
		if rep.Proof.BreakBefore != 2 || rep.Proof.BreakAfter != 0 || rep.Counts.Tags != 2 || rep.Counts.Written != 2 {
			t.Fatalf("--apply: proof %+v counts %+v; want the 2 pins tagged, 0 breaking after", rep.Proof, rep.Counts)
		}
		var retagKeep string
		for _, k := range rep.Keep {
			if k.Tag != "" && !slices.ContainsFunc(pins, func(p string) bool { return strings.HasSuffix(p, k.Repository+"@"+k.Digest) }) {
				t.Fatalf("tagged %s@%s, which 3.x keeps without a tag", k.Repository, k.Digest)
			}
			if k.Tag != "" && k.Repository == "gc/retag" {
				retagKeep = k.Tag
			}
		}
		beforeRetag, beforeSingle := listTags(t, h, "gc/retag"), listTags(t, h, "gc/single")
		rel := protectJSON(t, cli.ExitClean, append(base, "--release", "--images-from", writeRefs(t, refs[:len(refs)-2]), pins[1])...)
		if len(rel.Released) != 1 || !rel.Released[0].Removed || rel.Released[0].Tag != retagKeep {
			t.Fatalf("--release: %+v; want %s removed alone", rel.Released, retagKeep)
		}
		if got, want := listTags(t, h, "gc/retag"), slices.DeleteFunc(slices.Clone(beforeRetag), func(s string) bool { return s == retagKeep }); !slices.Equal(got, want) || len(got) != len(beforeRetag)-1 {
			t.Fatalf("gc/retag tags after --release %v, before %v; want only %s gone", got, beforeRetag, retagKeep)
		}
		if got := listTags(t, h, "gc/single"); !slices.Equal(got, beforeSingle) {
			t.Fatalf("gc/single tags after --release %v, before %v; want unchanged", got, beforeSingle)
		}
		if !serves(t, h, "gc/retag", strings.SplitN(pins[0], "@", 2)[1]) {
			t.Fatal("--release deleted the manifest, not only its tag")
		}
		collect(t, r)
		inUse := append(slices.Clone(refs[:len(refs)-2]), pins[1])
		if broken, failed := scanBroken(t, inUse), fetchFailures(t, inUse); len(broken) != 0 || len(failed) != 0 {
			t.Fatalf("after the real GC scan says %v broken; fetches failed for %v", broken, failed)
		}
		if serves(t, h, "gc/retag", strings.SplitN(pins[0], "@", 2)[1]) {
			t.Fatal("the released pin survived the GC: its shield was not released")
		}
	})
}

// fetchFailures pulls every platform of each ref (an index's children but
// its attestations; linux/amd64 for an image) with containerd's ctr
// content fetch where containerd can run, and returns the refs for which
// some platform failed, sorted.
func fetchFailures(t *testing.T, refs []string) []string {
	t.Helper()
	pull := cleanupPuller(t)
	var failed []string
	for _, ref := range refs {
		r, err := name.ParseReference(ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		platforms := []string{"linux/amd64"} // and for a manifest gone: ctr is asked too
		if desc, err := remote.Get(r, remote.WithTransport(http.DefaultTransport)); err == nil && desc.MediaType.IsIndex() {
			idx, err := desc.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			platforms = nil
			for _, c := range im.Manifests {
				if c.Platform != nil && c.Platform.OS != "unknown" {
					platforms = append(platforms, c.Platform.String())
				}
			}
		}
		for _, p := range platforms {
			if err := pull(ref, p); err != nil {
				t.Logf("fetch %s %s: %v", p, ref, err)
				failed = append(failed, ref)
				break
			}
		}
	}
	sort.Strings(failed)
	return failed
}
