//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// manifestAccept is what a node accepts; 2.8.3 hides an OCI index without it.
const manifestAccept = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, " +
	"application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"

// served HEADs repo@digest on a running registry.
func served(t *testing.T, ctx context.Context, host, repoDigest string) bool {
	t.Helper()
	repo, d, _ := strings.Cut(repoDigest, "@")
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+host+"/v2/"+repo+"/manifests/"+d, nil)
	req.Header.Set("Accept", manifestAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	t.Fatalf("HEAD %s: %s", repoDigest, resp.Status)
	return false
}

// TestGCAPI runs API-mode gc-check (the CLI, as users do) against a real
// registry of each version, then that version's real garbage collector with
// --delete-untagged, and checks that the in-use manifests predicted lost are
// exactly those the registry no longer serves, and that the scan engine
// then calls exactly the predicted images broken.
func TestGCAPI(t *testing.T) {
	for _, tc := range []struct {
		version string
		model   gcresult.Model
	}{
		{registry.V2, gcresult.Distribution28},
		{registry.V3, gcresult.Distribution3},
	} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r, imgs := startRegistry(t, tc.version)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var x gcExtras
			h := r.Host()
			x.retagOld = gcPush(t, ctx, h+"/gc/retag:v1", gcImage(t, "base layer shared by app-a, app-b and the multiarch children", "retag first build"))
			x.retagNew = gcPush(t, ctx, h+"/gc/retag:v1", gcImage(t, "base layer shared by app-a, app-b and the multiarch children", "retag second build"))
			x.digestOnly = gcPush(t, ctx, h+"/gc/single@", gcImage(t, "base layer shared by app-a, app-b and the multiarch children", "pushed by digest only"))
			targets := inUseTargets(h, imgs, x)
			seeded := time.Now()

			// API-mode gc-check through the CLI.
			args := []string{"gc-check", "--gc-model", string(tc.model), "--delete-untagged", "--all-repositories", "-o", "json"}
			for _, tg := range targets {
				args = append(args, tg.Ref)
			}
			var out, errb bytes.Buffer
			code := cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
			var rep gcresult.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("exit %d, report: %v\n%s%s", code, err, out.String(), errb.String())
			}
			wantCode := cli.ExitClean
			if len(rep.WouldBreak) > 0 {
				wantCode = cli.ExitFindings
			}
			if code != wantCode || rep.Mode != gcresult.ModeAPI || rep.Abort != nil || len(rep.AlreadyBroken) != 0 || len(rep.Skipped) != 0 {
				t.Fatalf("exit %d (want %d), mode %q, abort %+v, already broken %+v, skipped %+v\n%s", code, wantCode, rep.Mode, rep.Abort, rep.AlreadyBroken, rep.Skipped, errb.String())
			}
			checked := time.Now()

			// The in-use manifests: every fixture, its children, the pins.
			repoOf := func(ref string) string {
				ref = strings.TrimPrefix(ref, h+"/")
				if i := strings.IndexAny(ref, ":@"); i >= 0 {
					return ref[:i]
				}
				return ref
			}
			inUse := map[string]bool{}
			for _, fx := range imgs {
				inUse[repoOf(fx.Ref)+"@"+fx.Digest.String()] = true
				for _, c := range fx.Children {
					inUse[repoOf(fx.Ref)+"@"+c.Digest.String()] = true
				}
			}
			inUse["gc/retag@"+x.retagOld.String()] = true
			inUse["gc/retag@"+x.retagNew.String()] = true
			inUse["gc/single@"+x.digestOnly.String()] = true

			predicted, predictedBroken := map[string]bool{}, map[string]bool{}
			for _, e := range rep.WouldBreak {
				for _, d := range e.Lost {
					predicted[repoOf(e.Reference)+"@"+d] = true
				}
				if e.Verdict == types.Broken {
					predictedBroken[e.Reference] = true
				}
			}
			for _, rd := range rep.WouldDelete.Repositories {
				for _, m := range rd.Manifests {
					if k := repoOf(rd.Repository) + "@" + m.Digest; inUse[k] && !predicted[k] {
						t.Errorf("%s is listed under wouldDelete, but no in-use image loses it", k)
					}
				}
			}

			// The real collector.
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.GC(ctx, true, false); err != nil {
				t.Fatal(err)
			}
			if err := r.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			collected := time.Now()

			gone := map[string]bool{}
			for k := range inUse {
				if !served(t, ctx, h, k) {
					gone[k] = true
				}
			}
			diffSets(t, "in-use manifests lost", predicted, gone)

			res, err := scan.Run(ctx, targets)
			if err != nil {
				t.Fatal(err)
			}
			broken := map[string]bool{}
			for _, im := range res.Images {
				if im.Verdict == types.Broken {
					broken[im.Reference] = true
				}
			}
			diffSets(t, "images broken", predictedBroken, broken)
			t.Logf("%s: predicted %d in-use manifests lost and %d images broken; wouldDelete %d manifests; seed %s, gc-check %s, GC+restart %s, verify %s",
				tc.model, len(predicted), len(predictedBroken), rep.Counts.Manifests, seeded.Sub(start).Round(time.Millisecond),
				checked.Sub(seeded).Round(time.Millisecond), collected.Sub(checked).Round(time.Millisecond), time.Since(collected).Round(time.Millisecond))
			if len(predictedBroken) == 0 && tc.model == gcresult.Distribution28 {
				t.Error("2.8 with --delete-untagged should break the fixtures' indexes")
			}
			got := keys(predictedBroken)
			sort.Strings(got)
			t.Logf("predicted broken: %v", got)
		})
	}
}
