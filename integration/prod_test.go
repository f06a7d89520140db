//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regcheck/regcheck/internal/cli"
	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/s3registry"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/recordresult"
	"github.com/regcheck/regcheck/types"
)

// prodRun is one regcheck command run against the production-shaped
// registry, kept for the credential leak check.
type prodRun struct {
	args     []string
	code     int
	out, err string
}

func (r prodRun) String() string { return "regcheck " + strings.Join(r.args, " ") }

// prodCLI runs regcheck in-process with --log-level debug and remembers
// every run's output.
type prodCLI struct {
	ctx  context.Context
	runs []prodRun
}

func (c *prodCLI) run(t *testing.T, args ...string) prodRun {
	t.Helper()
	args = append(slices.Clone(args), "--log-level", "debug")
	var out, errb bytes.Buffer
	code := cli.Run(c.ctx, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	r := prodRun{args: args, code: code, out: out.String(), err: errb.String()}
	c.runs = append(c.runs, r)
	return r
}

// scanJSON runs a scan with -o json and returns its images by reference.
func (c *prodCLI) scanJSON(t *testing.T, wantCode int, args ...string) (map[string]*types.Image, report.Document) {
	t.Helper()
	r := c.run(t, append([]string{"scan", "-o", "json", "--timeout", "20s"}, args...)...)
	var doc report.Document
	if err := json.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("%s: exit %d, output not JSON: %v\n%s\n%s", r, r.code, err, r.out, r.err)
	}
	if r.code != wantCode {
		t.Errorf("%s: exit %d, want %d\n%s", r, r.code, wantCode, lastLines(r.err, 30))
	}
	byRef := byReference(doc)
	return byRef, doc
}

// prodWant is what one image must come out as: its verdict and every
// finding's code with the digest it names ("" for none), sorted.
type prodWant struct {
	verdict  types.Verdict
	findings []string // "code digest"
}

func checkProdImages(t *testing.T, got map[string]*types.Image, want map[string]prodWant) {
	t.Helper()
	for ref, w := range want {
		im, ok := got[ref]
		if !ok {
			t.Errorf("%s: not in the report", ref)
			continue
		}
		var fs []string
		for _, f := range im.Findings {
			fs = append(fs, strings.TrimSpace(string(f.Code)+" "+f.Digest))
		}
		sort.Strings(fs)
		if im.Verdict != w.verdict || !slices.Equal(fs, w.findings) {
			t.Errorf("%s: %s %q, want %s %q", ref, im.Verdict, fs, w.verdict, w.findings)
			for _, f := range im.Findings {
				t.Logf("    %s %s: %s", f.Severity, f.Code, f.Message)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("report has %d images, want %d", len(got), len(want))
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestProdRegistry puts regcheck against distribution v3.1.2 as production
// runs it: the s3 storage driver against a real S3 server, blob GET and
// HEAD answered with a 307 to a presigned URL on the S3 server's host:port,
// TLS from a CA only --ca-file names, and token authentication whose
// password only the Docker config (or a pull secret) holds. Every verdict
// must be the truth the registry serves; no credential, token or presigned
// URL may appear in any output, at --log-level debug.
func TestProdRegistry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	reg, err := s3registry.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	host := reg.Host()
	imgs, err := fixture.Push(ctx, host, "gc/", fixture.WithTransport(reg.Transport()), fixture.WithAuth(reg.Auth()))
	if err != nil {
		t.Fatal(err)
	}
	fx := map[string]fixture.Image{}
	var refs []string
	for _, im := range imgs {
		fx[im.Name] = im
		refs = append(refs, im.Ref)
	}

	// The Docker config holds the only copy of the credentials regcheck gets.
	withCreds := t.TempDir()
	if err := os.WriteFile(filepath.Join(withCreds, "config.json"), reg.DockerConfigJSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", withCreds)
	ca := []string{"--ca-file", reg.CA.File}
	c := &prodCLI{ctx: ctx}
	// The pull secret's .dockerconfigjson, for the leak check; the cluster
	// subtest puts it in a Secret.
	secretJSON := reg.DockerConfigJSON()
	t.Cleanup(func() { checkLeaks(t, reg, secretJSON, c.runs) })

	for _, im := range imgs {
		if err := reg.Pull(ctx, im.Ref); err != nil {
			t.Fatalf("%s does not pull as pushed: %v", im.Name, err)
		}
	}

	t.Run("scan intact", func(t *testing.T) {
		got, doc := c.scanJSON(t, cli.ExitClean, append(ca, refs...)...)
		want := map[string]prodWant{}
		for _, im := range imgs {
			want[im.Ref] = prodWant{verdict: types.OK}
		}
		checkProdImages(t, got, want)
		// Every blob answered with a redirect: a walk that reached the
		// verdict ok without asking the S3 server did not check a blob.
		s3 := 0
		for _, rc := range doc.Summary.RequestLog {
			if rc.Host == reg.S3.Addr && rc.Status == "200" {
				s3 += rc.Count
			}
		}
		if s3 == 0 {
			t.Errorf("no request reached the S3 server %s: the blob redirects were not followed; requests %+v", reg.S3.Addr, doc.Summary.RequestLog)
		}
	})

	t.Run("without credentials unknown", func(t *testing.T) {
		t.Setenv("DOCKER_CONFIG", t.TempDir())
		got, _ := c.scanJSON(t, cli.ExitIncomplete, append(ca, fx["single"].Ref)...)
		im := got[fx["single"].Ref]
		if im == nil || im.Verdict != types.Unknown || len(im.Findings) != 1 ||
			(im.Findings[0].Code != types.Unauthorized && im.Findings[0].Code != types.TokenFailed) {
			t.Fatalf("without credentials: %+v; want unknown with one unauthorized or token-failed fault", im)
		}
	})

	t.Run("without the CA unknown", func(t *testing.T) {
		got, _ := c.scanJSON(t, cli.ExitIncomplete, fx["single"].Ref)
		im := got[fx["single"].Ref]
		if im == nil || im.Verdict != types.Unknown || len(im.Findings) != 1 || im.Findings[0].Code != types.TLSError {
			t.Fatalf("without --ca-file: %+v; want unknown with one tls-error fault", im)
		}
		if adv := im.Findings[0].Advice; !strings.Contains(adv, "--ca-file") || !strings.Contains(adv, "--insecure-registry") {
			t.Errorf("the tls-error advice names neither flag that acts on it: %q", adv)
		}
	})

	t.Run("pin", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "apps.yaml", deployment("app-a", fx["app-a"].Ref, "")+"---\n"+deployment("multiarch", fx["multiarch"].Ref, ""))
		writeFile(t, dir, "signaling.yaml", deployment("signaling", fx["buildx"].Ref, ""))
		before := snapshot(t, dir)
		r := c.run(t, append([]string{"pin", dir}, ca...)...)
		if r.code != cli.ExitClean {
			t.Fatalf("%s: exit %d\n%s%s", r, r.code, r.out, r.err)
		}
		if got := snapshot(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
			t.Fatal("pin without --write changed files")
		}
		for _, n := range []string{"app-a", "multiarch", "buildx"} {
			if want := fx[n].Ref + "@" + fx[n].Digest.String(); !strings.Contains(r.out, want) {
				t.Errorf("the diff lacks %s:\n%s", want, r.out)
			}
		}
		r = c.run(t, append([]string{"pin", "--write", dir}, ca...)...)
		if r.code != cli.ExitClean {
			t.Fatalf("%s: exit %d\n%s%s", r, r.code, r.out, r.err)
		}
		apps, signaling := readFile(t, filepath.Join(dir, "apps.yaml")), readFile(t, filepath.Join(dir, "signaling.yaml"))
		for _, tc := range []struct{ file, name string }{{apps, "app-a"}, {apps, "multiarch"}, {signaling, "buildx"}} {
			if want := "image: " + fx[tc.name].Ref + "@" + fx[tc.name].Digest.String() + "\n"; !strings.Contains(tc.file, want) {
				t.Errorf("--write did not pin %s to its tag's digest: want %q in\n%s", tc.name, want, tc.file)
			}
		}
	})

	// Damage, three ways, each checked against what the registry serves:
	// an untagged index child deleted through the API, a blob unlinked
	// through the API, and a blob's data deleted from the bucket behind the
	// registry's back (the registry still redirects to it; S3 says 404).
	var arm64 fixture.Child
	for _, ch := range fx["multiarch"].Children {
		if ch.Platform == "linux/arm64/v8" {
			arm64 = ch
		}
	}
	if arm64.Tagged || arm64.Digest.Hex == "" {
		t.Fatalf("multiarch has no untagged linux/arm64/v8 child: %+v", fx["multiarch"].Children)
	}
	singleLayer := fx["single"].Blobs[len(fx["single"].Blobs)-1].String() // "single app", its own layer
	appBLayer := fx["app-b"].Blobs[len(fx["app-b"].Blobs)-1].String()     // "app-b", its own layer
	if err := reg.DeleteManifest(ctx, "gc/multiarch", arm64.Digest.String()); err != nil {
		t.Fatal(err)
	}
	if err := reg.DeleteBlob(ctx, "gc/single", singleLayer); err != nil {
		t.Fatal(err)
	}
	if err := reg.DeleteBlobData(ctx, appBLayer); err != nil {
		t.Fatal(err)
	}
	if a, err := reg.HeadManifest(ctx, "gc/multiarch", arm64.Digest.String()); err != nil || a.Status != http.StatusNotFound {
		t.Fatalf("the deleted child still answers: %+v %v", a, err)
	}
	if a, err := reg.HeadBlob(ctx, "gc/single", singleLayer); err != nil || a.Status != http.StatusNotFound {
		t.Fatalf("the unlinked blob still answers: %+v %v", a, err)
	}
	if a, err := reg.HeadBlob(ctx, "gc/app-b", appBLayer); err != nil || a.Status != http.StatusTemporaryRedirect || a.Final != http.StatusNotFound {
		t.Fatalf("the blob whose data is gone: %+v %v; want the registry's 307 and S3's 404", a, err)
	}
	base := fx["app-a"].Blobs[1].String() // shared by app-a, app-b and single; untouched
	if a, err := reg.HeadBlob(ctx, "gc/app-a", base); err != nil || a.Status != http.StatusTemporaryRedirect || a.Final != http.StatusOK {
		t.Fatalf("the shared base layer: %+v %v; want 307 then 200", a, err)
	}
	damaged := map[string]prodWant{
		fx["multiarch"].Ref: {types.Broken, []string{string(types.ChildMissing) + " " + arm64.Digest.String()}},
		fx["single"].Ref:    {types.Broken, []string{string(types.BlobMissing) + " " + singleLayer}},
		// The registry vouches for the blob and redirects; the bucket no
		// longer has it. Every node's pull fails (reg.Pull below proves it):
		// broken, though the 404 came from the redirect's target.
		fx["app-b"].Ref: {types.Broken, []string{string(types.BlobMissing) + " " + appBLayer}},
	}
	wantAfter := map[string]prodWant{}
	for _, im := range imgs {
		wantAfter[im.Ref] = prodWant{verdict: types.OK}
		if w, ok := damaged[im.Ref]; ok {
			wantAfter[im.Ref] = w
		}
		// What a node could no longer pull decides: a pull of every
		// platform, redirects followed, fails exactly for the damaged.
		if err := reg.Pull(ctx, im.Ref); (err != nil) != (wantAfter[im.Ref].verdict == types.Broken) {
			t.Fatalf("%s: a node's pull says %v, but the test expects %s", im.Name, err, wantAfter[im.Ref].verdict)
		}
	}
	// The in-use manifests: one Deployment per fixture.
	inUse := t.TempDir()
	var docs []string
	for _, im := range imgs {
		docs = append(docs, deployment(im.Name, im.Ref, ""))
	}
	writeFile(t, inUse, "all.yaml", strings.Join(docs, "---\n"))

	t.Run("scan damaged", func(t *testing.T) {
		got, _ := c.scanJSON(t, cli.ExitFindings, append(ca, refs...)...)
		checkProdImages(t, got, wantAfter)
	})

	t.Run("every format", func(t *testing.T) {
		for _, format := range append(report.Formats(), "prom") {
			r := c.run(t, append([]string{"scan", "-o", format, "-f", inUse}, ca...)...)
			if r.code != cli.ExitFindings {
				t.Errorf("%s: exit %d, want %d (three images are broken)\n%s", r, r.code, cli.ExitFindings, lastLines(r.err, 20))
			}
			if !strings.Contains(r.out, "gc/multiarch") {
				t.Errorf("%s: the output does not name the broken multiarch image:\n%s", r, r.out)
			}
		}
	})

	t.Run("pin refuses the broken", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "apps.yaml", deployment("app-a", fx["app-a"].Ref, "")+"---\n"+deployment("single", fx["single"].Ref, ""))
		r := c.run(t, append([]string{"pin", dir}, ca...)...)
		if r.code != cli.ExitFindings {
			t.Errorf("%s: exit %d, want %d (single is broken)\n%s%s", r, r.code, cli.ExitFindings, r.out, r.err)
		}
		if !strings.Contains(r.out, fx["app-a"].Ref+"@"+fx["app-a"].Digest.String()) || strings.Contains(r.out, fx["single"].Ref+"@") {
			t.Errorf("want app-a pinned and single left as is:\n%s", r.out)
		}
	})

	t.Run("gc-check API", func(t *testing.T) {
		r := c.run(t, append([]string{"gc-check", "--gc-model", string(gcresult.Distribution3), "--delete-untagged", "-o", "json", "-f", inUse}, ca...)...)
		var rep gcresult.Report
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("%s: exit %d, output not JSON: %v\n%s\n%s", r, r.code, err, r.out, lastLines(r.err, 20))
		}
		var broken []string
		for _, e := range rep.AlreadyBroken {
			broken = append(broken, e.Reference)
		}
		want := []string{fx["app-b"].Ref, fx["multiarch"].Ref, fx["single"].Ref}
		if r.code != cli.ExitFindings || !sameSet(broken, want) || len(rep.WouldBreak) != 0 {
			t.Errorf("%s: exit %d, already broken %v, would break %+v; want exit %d, already broken %v, nothing more (distribution 3 keeps every child of a tagged index)",
				r, r.code, broken, rep.WouldBreak, cli.ExitFindings, want)
		}
	})

	t.Run("cluster", func(t *testing.T) { prodCluster(t, ctx, c, reg, fx, secretJSON, ca) })
}

// prodCluster: pods on a real kube-apiserver whose imagePullSecrets hold the
// registry's credentials; the Docker config holds none.
func prodCluster(t *testing.T, ctx context.Context, c *prodCLI, reg *s3registry.Registry, fx map[string]fixture.Image, secretJSON []byte, ca []string) {
	kc, cs := startKube(t, ctx)
	const ns = "prod"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: secretJSON},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := map[string]fixture.Image{"app-a": fx["app-a"], "single": fx["single"]}
	for name, im := range pods {
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeName:         "node-a",
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
				Containers:       []corev1.Container{{Name: "app", Image: im.Ref}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		repo := strings.TrimSuffix(im.Ref, ":v1")
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Image: im.Ref, ImageID: repo + "@" + im.Digest.String(), Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))}},
		}}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kc.WriteKubeconfig(kubeconfig, ns, adminToken(t, kc)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // the pull secret is the only source of credentials
	kube := []string{"--cluster", "--kubeconfig", kubeconfig, "-n", ns}

	t.Run("with pull secrets", func(t *testing.T) {
		got, _ := c.scanJSON(t, cli.ExitFindings, append(append(kube, "--pull-secrets"), ca...)...)
		checkProdImages(t, got, map[string]prodWant{
			fx["app-a"].Ref: {types.OK, []string{string(types.MutableReference)}},
			// Broken says it all: a tag that does not pull needs no pin advice.
			fx["single"].Ref: {types.Broken, []string{string(types.BlobMissing) + " " + fx["single"].Blobs[len(fx["single"].Blobs)-1].String()}},
		})
	})
	t.Run("without pull secrets unknown", func(t *testing.T) {
		got, _ := c.scanJSON(t, cli.ExitIncomplete, append(kube, ca...)...)
		for _, name := range []string{"app-a", "single"} {
			im := got[fx[name].Ref]
			if im == nil || im.Verdict != types.Unknown {
				t.Errorf("%s without --pull-secrets: %+v; want unknown", name, im)
			}
		}
	})
	t.Run("record", func(t *testing.T) {
		r := c.run(t, "record", "--kubeconfig", kubeconfig, "-n", ns, "--out", filepath.Join(t.TempDir(), "history.json"), "-o", "json")
		var doc struct {
			Entries []recordresult.Entry `json:"entries"`
		}
		if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != cli.ExitClean {
			t.Fatalf("%s: exit %d, %v\n%s\n%s", r, r.code, err, r.out, lastLines(r.err, 20))
		}
		got := map[string]string{}
		for _, e := range doc.Entries {
			got[e.Pod] = e.Digest
		}
		want := map[string]string{"app-a": fx["app-a"].Digest.String(), "single": fx["single"].Digest.String()}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("recorded %v, want %v", got, want)
		}
	})
}

// checkLeaks fails the test if any run's stdout or stderr holds a secret:
// the password, the basic-auth value, the pull secret in either encoding,
// any token the issuer issued or its first 20 characters, or a presigned
// S3 URL (a credential for the blob until it expires).
func checkLeaks(t *testing.T, reg *s3registry.Registry, secretJSON []byte, runs []prodRun) {
	t.Helper()
	tokens := reg.Issuer.Tokens()
	if len(tokens) == 0 || len(runs) == 0 {
		t.Errorf("leak check: %d tokens issued, %d runs: it checked nothing", len(tokens), len(runs))
		return
	}
	secrets := map[string]string{
		"the registry password":                         reg.Password,
		"base64 of user:password":                       reg.BasicAuth(),
		"the pull secret's .dockerconfigjson":           string(secretJSON),
		"the pull secret's .dockerconfigjson in base64": base64.StdEncoding.EncodeToString(secretJSON),
		"a presigned S3 URL's signature":                "X-Amz-Signature=",
		"a presigned S3 URL's credential":               "X-Amz-Credential=",
	}
	prefixes := map[string]bool{}
	for i, tok := range tokens {
		secrets[fmt.Sprintf("token %d of %d", i+1, len(tokens))] = tok
		if !prefixes[tok[:20]] { // one JWT header: the tokens share their first characters
			prefixes[tok[:20]] = true
			secrets[fmt.Sprintf("the first 20 characters of token %d", i+1)] = tok[:20]
		}
	}
	for _, r := range runs {
		for what, s := range secrets {
			for stream, text := range map[string]string{"stdout": r.out, "stderr": r.err} {
				if i := strings.Index(text, s); i >= 0 {
					lo, hi := max(0, i-120), min(len(text), i+len(s)+40)
					excerpt := strings.ReplaceAll(text[lo:hi], s, "<"+what+">")
					t.Errorf("LEAK: %s: %s holds %s: …%s…", r, stream, what, excerpt)
				}
			}
		}
	}
}
