//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	ggcrtypes "github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/cosign"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/types"
)

// cleanupRepo is one repository the test pushes and signs: two buildx-like
// indexes (linux/amd64, linux/arm64 and an attestation manifest) tagged v1
// and v2, a single-platform image tagged old, each signed by cosign
// (legacy .sig tags, an index recursively).
type cleanupRepo struct {
	repo       name.Repository
	v1, v2, s  string // digests
	manifests  []pushedManifest
	pushedTime map[string]time.Time // digest → when the export says it was pushed
}

// pushedManifest is one manifest the repository holds, as listed by its
// tags and the indexes they name.
type pushedManifest struct {
	digest, mediaType string
	tags              []string
	children          []childRef
}

type childRef struct{ digest, platform string }

// pushBuildx pushes a buildx-like index under tag: two platform images and
// the amd64 image's attestation manifest.
func pushBuildx(t *testing.T, repo name.Repository, tag, salt string) string {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, ggcrtypes.OCIImageIndex)
	var amd v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		p := v1.Platform{OS: "linux", Architecture: arch}
		img := fixture.BuildImage(ggcrtypes.OCIManifestSchema1, p, static.NewLayer([]byte(salt+" "+arch), ggcrtypes.OCILayer))
		if amd == nil {
			amd = img
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	of, _ := amd.Digest()
	unknown := v1.Platform{OS: "unknown", Architecture: "unknown"}
	idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: fixture.BuildAttestation(amd), Descriptor: v1.Descriptor{Platform: &unknown,
		Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": of.String()}}})
	if err := remote.WriteIndex(repo.Tag(tag), idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return d.String()
}

// pushCleanupRepo pushes and signs one repository's images.
func pushCleanupRepo(t *testing.T, c *cosign.Cosign, host, path string) *cleanupRepo {
	t.Helper()
	ctx := context.Background()
	repo, err := name.NewRepository(host+"/"+path, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	r := &cleanupRepo{repo: repo}
	r.v1 = pushBuildx(t, repo, "v1", path+" first")
	r.v2 = pushBuildx(t, repo, "v2", path+" second")
	if r.s, err = fixture.PushSingle(ctx, repo.Tag("old").String(), "old build of "+path); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{r.v1, r.v2} {
		if err := c.Sign(ctx, repo.Name()+"@"+d, cosign.Legacy, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Sign(ctx, repo.Name()+"@"+r.s, cosign.Legacy, false); err != nil {
		t.Fatal(err)
	}
	r.manifests = listManifests(t, repo)
	return r
}

// listManifests lists, with go-containerregistry, every tag of repo and
// the manifests they name, with an index's children and their platforms.
func listManifests(t *testing.T, repo name.Repository) []pushedManifest {
	t.Helper()
	tags, err := remote.List(repo)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*pushedManifest{}
	var order []string
	add := func(d, mt string) *pushedManifest {
		if m, ok := by[d]; ok {
			return m
		}
		by[d] = &pushedManifest{digest: d, mediaType: mt}
		order = append(order, d)
		return by[d]
	}
	for _, tag := range tags {
		desc, err := remote.Get(repo.Tag(tag))
		if err != nil {
			t.Fatal(err)
		}
		m := add(desc.Digest.String(), string(desc.MediaType))
		m.tags = append(m.tags, tag)
		if !desc.MediaType.IsIndex() || len(m.children) > 0 {
			continue
		}
		im, err := desc.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		mf, err := im.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range mf.Manifests {
			p := ""
			if c.Platform != nil {
				p = c.Platform.String()
			}
			m.children = append(m.children, childRef{c.Digest.String(), p})
			add(c.Digest.String(), string(c.MediaType))
		}
	}
	out := make([]pushedManifest, 0, len(order))
	for _, d := range order {
		out = append(out, *by[d])
	}
	return out
}

// ageOf is how old the test says a manifest is: the old image and every
// signature 30 days, v1 and its children 20, v2 and its children 2.
func (r *cleanupRepo) ageOf(m pushedManifest) time.Duration {
	day := 24 * time.Hour
	if m.digest == r.v2 || r.childOf(r.v2, m.digest) {
		return 2 * day
	}
	if m.digest == r.v1 || r.childOf(r.v1, m.digest) {
		return 20 * day
	}
	return 30 * day
}

func (r *cleanupRepo) childOf(index, d string) bool {
	for _, m := range r.manifests {
		if m.digest != index {
			continue
		}
		for _, c := range m.children {
			if c.digest == d {
				return true
			}
		}
	}
	return false
}

// inUse are the references the test's workloads run: v1 by tag, v2 by
// digest, the old image by tag.
func (r *cleanupRepo) inUse() []string {
	return []string{r.repo.Tag("v1").String(), r.repo.Name() + "@" + r.v2, r.repo.Tag("old").String()}
}

// platformsOf are the platforms a node pulls a reference for.
func (r *cleanupRepo) platformsOf(ref string) []string {
	if strings.HasSuffix(ref, ":old") {
		return []string{"linux/amd64"}
	}
	return []string{"linux/amd64", "linux/arm64"}
}

// digestOf is the digest an in-use reference of r names.
func (r *cleanupRepo) digestOf(ref string) string {
	switch {
	case strings.HasSuffix(ref, ":v1"):
		return r.v1
	case strings.HasSuffix(ref, ":old"):
		return r.s
	}
	_, d, _ := strings.Cut(ref, "@")
	return d
}

// writeCaseFile writes content into dir/name.
func writeCaseFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// predictCleanup runs gc-check --cleanup through the CLI, as users do.
func predictCleanup(t *testing.T, ctx context.Context, host, cleanupFile, stateArg string, at time.Time, refs []string) (*gcresult.Report, int) {
	t.Helper()
	args := []string{"gc-check", "--cleanup", cleanupFile, "--registry-state", stateArg, "--registry", host, "--at", at.Format(time.RFC3339), "--runs", "2", "-o", "json"}
	args = append(args, refs...)
	var out, errb bytes.Buffer
	code := cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	var rep gcresult.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, report: %v\n%s%s", code, err, out.String(), errb.String())
	}
	return &rep, code
}

// applyDeletions applies a prediction's deletions through the registry
// API, as the cleanup would: removed tags first (DELETE by tag, which
// distribution 3 supports with deletes enabled), then deleted and
// archived manifests (DELETE by digest: an archived manifest answers 404
// as ECR's archive tier does).
func applyDeletions(t *testing.T, ctx context.Context, host string, ds []gcresult.CleanupDeletion) {
	t.Helper()
	del := func(repo, ref string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, "http://"+host+"/v2/"+repo+"/manifests/"+ref, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("DELETE %s/manifests/%s: %s", repo, ref, resp.Status)
		}
		if served(t, ctx, host, repo+"@"+ref) {
			t.Fatalf("%s/manifests/%s is still served after its DELETE", repo, ref)
		}
	}
	sorted := append([]gcresult.CleanupDeletion(nil), ds...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[i].Kind == gcresult.TagRemoved && sorted[j].Kind != gcresult.TagRemoved
	})
	for _, d := range sorted {
		repo := strings.TrimPrefix(d.Repository, host+"/")
		switch {
		case d.Kind == gcresult.TagRemoved && !d.WithManifest:
			del(repo, d.Tag)
		case d.Kind == gcresult.ManifestDeleted, d.Kind == gcresult.ManifestArchived:
			del(repo, d.Digest)
		}
	}
}

// predictedPullFails says whether the report predicts that a node of
// platform cannot pull ref: a broken entry with a critical loss for that
// platform or for every one.
func predictedPullFails(rep *gcresult.Report, ref, platform string) bool {
	for _, e := range rep.WouldBreak {
		if e.Reference != ref || e.Verdict != types.Broken {
			continue
		}
		for _, l := range e.Losses {
			if l.Code.Severity() >= types.SeverityCritical && (l.Platform == "" || l.Platform == platform) && l.Code != types.SignatureMissing {
				return true
			}
		}
	}
	return false
}

// predictedSignatureLost says whether the report lists the signature of
// subject among what the cleanup deletes.
func predictedSignatureLost(rep *gcresult.Report, subject string) bool {
	for _, a := range rep.WouldLoseArtifacts {
		if a.Subject == subject && a.Kind == "signature" {
			return true
		}
	}
	return false
}

// cleanupCase is one service's shape: the cleanup file and the export of
// the repository it cleans, as the service writes them.
type cleanupCase struct {
	service, path string
	// files returns the cleanup file's content and the export's, for the
	// repository as pushed, with times before at; stateRepo names the
	// repository for --registry-state REPO=FILE ("" when the export names
	// it).
	files     func(t *testing.T, r *cleanupRepo, at time.Time) (cleanupFile, state []byte)
	stateRepo bool
}

var cleanupCases = []cleanupCase{
	{"ghcr", "acme/app", ghcrFiles, true},
	{"ecr", "ecr/app", ecrFiles, false},
	{"gitlab", "group/app", gitlabFiles, true},
	{"harbor", "team/app", harborFiles, true},
}

// ghcrFiles: actions/delete-package-versions@v5 deleting every untagged
// version, and GitHub's package versions: a multi-arch image's platform
// manifests and attestation are untagged versions, so they go
// (actions/delete-package-versions#90).
func ghcrFiles(t *testing.T, r *cleanupRepo, at time.Time) ([]byte, []byte) {
	wf := `name: cleanup
on: {schedule: [{cron: '0 3 * * *'}]}
jobs:
  clean:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/delete-package-versions@v5
        with:
          owner: acme
          package-name: app
          package-type: container
          min-versions-to-keep: 0
          delete-only-untagged-versions: 'true'
`
	var versions []map[string]any
	for i, m := range r.manifests {
		ts := at.Add(-r.ageOf(m)).UTC().Format(time.RFC3339)
		versions = append(versions, map[string]any{"id": 1000 + i, "name": m.digest, "created_at": ts, "updated_at": ts,
			"metadata": map[string]any{"package_type": "container", "container": map[string]any{"tags": append([]string{}, m.tags...)}}})
	}
	return []byte(wf), mustJSON(t, versions)
}

// ecrFiles: an ECR lifecycle policy that archives images tagged old not
// pulled for a week and expires cosign's sha256- tags older than two
// weeks (cosign's tags are ordinary tags to every rule), and
// aws ecr describe-images.
func ecrFiles(t *testing.T, r *cleanupRepo, at time.Time) ([]byte, []byte) {
	policy := map[string]any{"registryId": "123456789012", "repositoryName": "ecr/app", "lifecyclePolicyText": string(mustJSON(t, map[string]any{"rules": []any{
		map[string]any{"rulePriority": 1, "description": "archive old builds", "selection": map[string]any{"tagStatus": "tagged", "tagPrefixList": []string{"old"}, "countType": "sinceImagePulled", "countUnit": "days", "countNumber": 7},
			"action": map[string]any{"type": "transition", "targetStorageClass": "archive"}},
		map[string]any{"rulePriority": 2, "description": "expire signatures", "selection": map[string]any{"tagStatus": "tagged", "tagPrefixList": []string{"sha256-"}, "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14},
			"action": map[string]any{"type": "expire"}},
	}}))}
	var images []map[string]any
	for _, m := range r.manifests {
		ts := at.Add(-r.ageOf(m)).UTC().Format(time.RFC3339)
		d := map[string]any{"registryId": "123456789012", "repositoryName": "ecr/app", "imageDigest": m.digest, "imagePushedAt": ts,
			"lastRecordedPullTime": ts, "imageManifestMediaType": m.mediaType, "imageStatus": "ACTIVE"}
		if len(m.tags) > 0 {
			d["imageTags"] = m.tags
		}
		images = append(images, d)
	}
	return mustJSON(t, policy), mustJSON(t, map[string]any{"imageDetails": images})
}

// gitlabFiles: a GitLab cleanup policy keeping v-tags and the newest tag,
// deleting the rest older than a week; the default name_regex .* deletes
// cosign's tags too.
func gitlabFiles(t *testing.T, r *cleanupRepo, at time.Time) ([]byte, []byte) {
	project := map[string]any{"id": 42, "path_with_namespace": "group/app", "container_expiration_policy": map[string]any{
		"cadence": "1d", "enabled": true, "keep_n": 1, "older_than": "7d", "name_regex": ".*", "name_regex_keep": `v\d+`}}
	var tags []map[string]any
	for _, m := range r.manifests {
		for _, tag := range m.tags {
			tags = append(tags, map[string]any{"name": tag, "path": "group/app:" + tag, "location": r.repo.Tag(tag).String(), "digest": m.digest,
				"created_at": at.Add(-r.ageOf(m)).UTC().Format(time.RFC3339)})
		}
	}
	return mustJSON(t, project), mustJSON(t, tags)
}

// harborFiles: Harbor tag retention keeping the most recently pushed v*
// tag of the repository; whatever no rule retains is deleted, with its
// children and accessories; and Harbor's artifacts (with_tag=true).
func harborFiles(t *testing.T, r *cleanupRepo, at time.Time) ([]byte, []byte) {
	policy := map[string]any{"id": 7, "algorithm": "or", "rules": []any{map[string]any{"id": 1, "priority": 0, "disabled": false, "action": "retain",
		"template": "latestPushedK", "params": map[string]any{"latestPushedK": 1},
		"tag_selectors":   []any{map[string]any{"kind": "doublestar", "decoration": "matches", "pattern": "v*", "extras": `{"untagged":false}`}},
		"scope_selectors": map[string]any{"repository": []any{map[string]any{"kind": "doublestar", "decoration": "repoMatches", "pattern": "app"}}}}},
		"trigger": map[string]any{"kind": "Schedule"}, "scope": map[string]any{"level": "project", "ref": 2}}
	var arts []map[string]any
	for i, m := range r.manifests {
		ts := at.Add(-r.ageOf(m)).UTC().Format(time.RFC3339)
		a := map[string]any{"id": 100 + i, "type": "IMAGE", "digest": m.digest, "manifest_media_type": m.mediaType, "push_time": ts, "pull_time": ts}
		var tags []map[string]any
		for _, tag := range m.tags {
			tags = append(tags, map[string]any{"name": tag, "push_time": ts, "pull_time": ts})
		}
		a["tags"] = tags
		var refs []map[string]any
		for _, c := range m.children {
			osName, arch, _ := strings.Cut(c.platform, "/")
			refs = append(refs, map[string]any{"child_digest": c.digest, "platform": map[string]any{"os": osName, "architecture": arch}})
		}
		a["references"] = refs
		arts = append(arts, a)
	}
	return mustJSON(t, policy), mustJSON(t, arts)
}

// TestGCCleanup holds gc-check --cleanup to what the cleanup does: for
// each service's shape (a GHCR cleanup action with GitHub's package
// versions, an ECR lifecycle policy with describe-images, a GitLab cleanup
// policy with its registry tags, Harbor retention with its artifacts), on
// the real distribution 3.1.2 with real multi-arch indexes, attestation
// manifests and cosign signatures, it predicts through the CLI, applies
// the predicted deletions through the registry API, and checks that
// exactly the images predicted broken now fail a real containerd pull
// (per platform) and exactly the signatures predicted lost fail cosign
// verify; a repository no cleanup names stays whole.
func TestGCCleanup(t *testing.T) {
	c := newCosign(t)
	r := startEmpty(t, registry.V3)
	h := r.Host()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	keep := pushCleanupRepo(t, c, h, "keep/other")
	fetch := cleanupPuller(t)
	at := time.Now().UTC().Truncate(time.Second)
	for _, tc := range cleanupCases {
		t.Run(tc.service, func(t *testing.T) {
			repo := pushCleanupRepo(t, c, h, tc.path)
			dir := t.TempDir()
			cf, st := tc.files(t, repo, at)
			cleanupFile := writeCaseFile(t, dir, "cleanup-"+tc.service, cf)
			stateArg := writeCaseFile(t, dir, tc.service+"-state.json", st)
			if tc.stateRepo {
				stateArg = tc.path + "=" + stateArg
			}
			refs := append(repo.inUse(), keep.inUse()...)
			rep, code := predictCleanup(t, ctx, h, cleanupFile, stateArg, at, refs)
			if len(rep.Skipped) > 0 || len(rep.AlreadyBroken) > 0 || rep.Cleanup == nil {
				t.Fatalf("skipped %+v, already broken %+v, cleanup %+v", rep.Skipped, rep.AlreadyBroken, rep.Cleanup)
			}
			if len(rep.WouldBreak) == 0 && len(rep.WouldLoseArtifacts) == 0 {
				t.Fatalf("exit %d: the %s cleanup breaks nothing in use; the case is meant to", code, tc.service)
			}
			if want := exitFor(rep); code != want {
				t.Fatalf("exit %d, want %d", code, want)
			}
			logPrediction(t, rep)
			applyDeletions(t, ctx, h, rep.Cleanup.Deletions)
			checkPulls(t, rep, fetch, repo, keep)
			checkSignatures(t, ctx, c, rep, repo, keep)
		})
	}
}

// exitFor is the exit code a report calls for: findings when an in-use
// image would break.
func exitFor(rep *gcresult.Report) int {
	for _, e := range rep.WouldBreak {
		if e.Verdict == types.Broken {
			return cli.ExitFindings
		}
	}
	return cli.ExitClean
}

// cleanupPuller is how the test pulls an image for a platform as a node
// does: a real containerd's ctr content fetch, each pull in a namespace of
// its own with content not shared, so nothing fetched before hides a
// missing piece. Where containerd cannot run (not root, not built), as the
// rescue tests do, go-containerregistry pulls the platform's manifest,
// config and layers instead, and the log says so.
func cleanupPuller(t *testing.T) func(ref, platform string) error {
	t.Helper()
	if why := containerdReason(); why != "" {
		t.Logf("not running containerd (%s): pulling with go-containerregistry instead", why)
		return ggcrPull
	}
	cd := startContainerd(t, true)
	var n int
	return func(ref, platform string) error {
		n++
		_, err := cd.ctr(fmt.Sprintf("pull%d", n), "content", "fetch", "--plain-http", "--skip-metadata", "--platform", platform, ref)
		return err
	}
}

// ggcrPull pulls ref for platform with go-containerregistry: the manifest
// (an index's child for the platform), its config and every layer.
func ggcrPull(ref, platform string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	img, err := remote.Image(r, remote.WithPlatform(*p))
	if err != nil {
		return err
	}
	return pullBlobs(img)
}

// pullBlobs reads img's config and every layer, as a pull does.
func pullBlobs(img v1.Image) error {
	if _, err := img.RawConfigFile(); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// logPrediction logs what the prediction says breaks.
func logPrediction(t *testing.T, rep *gcresult.Report) {
	t.Helper()
	for _, e := range rep.WouldBreak {
		for _, l := range e.Losses {
			t.Logf("predicted %s %s %s %s: %s", e.Reference, e.Verdict, l.Code, l.Platform, l.Message)
		}
	}
	for _, a := range rep.WouldLoseArtifacts {
		t.Logf("predicted lost %s of %s: %s", a.Kind, a.Subject, a.Reason)
	}
	t.Logf("%d deletions", len(rep.Cleanup.Deletions))
}

// checkPulls pulls each in-use reference for each platform with a real
// containerd, each in a namespace of its own (content not shared), and
// holds the outcome to the prediction; at least one must fail and one
// pass, or the case proves nothing.
func checkPulls(t *testing.T, rep *gcresult.Report, fetch func(ref, platform string) error, repos ...*cleanupRepo) {
	t.Helper()
	var failed, passed int
	for _, r := range repos {
		for _, ref := range r.inUse() {
			for _, p := range r.platformsOf(ref) {
				err := fetch(ref, p)
				want := predictedPullFails(rep, ref, p)
				if (err != nil) != want {
					t.Errorf("ctr content fetch --platform %s %s: error %v; predicted to fail: %v", p, ref, err, want)
				}
				if err != nil {
					failed++
				} else {
					passed++
				}
			}
		}
	}
	t.Logf("pulls: %d failed, %d passed, as predicted", failed, passed)
	if passed == 0 {
		t.Error("every pull failed: nothing shows the cleanup leaves other images whole")
	}
}

// checkSignatures runs cosign verify on each in-use image that still
// pulls and holds it to the prediction: its signature fails exactly when
// predicted lost.
func checkSignatures(t *testing.T, ctx context.Context, c *cosign.Cosign, rep *gcresult.Report, repos ...*cleanupRepo) {
	t.Helper()
	for _, r := range repos {
		for _, ref := range r.inUse() {
			if predictedPullFails(rep, ref, "linux/amd64") {
				continue // the image itself is gone: nothing to verify
			}
			d := r.digestOf(ref)
			ok, out, err := c.Verify(ctx, r.repo.Name()+"@"+d, cosign.Legacy)
			if err != nil {
				t.Fatal(err)
			}
			if want := !predictedSignatureLost(rep, d); ok != want {
				t.Errorf("cosign verify %s@%s passed %v; predicted to pass: %v\n%s", r.repo.Name(), d, ok, want, lastLines(out, 3))
			}
		}
	}
}
