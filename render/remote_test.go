package render

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// remoteTree is a GitOps tree with remote kustomize bases: a nested base
// that holds nothing but a git repository, a root with a remote
// resource, a local Pod, a patch of a ConfigMap only the remote file
// has, an images entry and a local component.
var remoteTree = map[string]string{
	"apps/kustomization.yaml":         "resources:\n- podinfo\n- web.yaml\n",
	"apps/web.yaml":                   deployment("web", "reg.example.com/web:1"),
	"apps/podinfo/kustomization.yaml": "resources:\n- https://github.com/stefanprodan/podinfo//kustomize?ref=6.7.0\n",
	"prod/kustomization.yaml": "resources:\n- https://raw.githubusercontent.com/org/repo/main/cm.yaml\n- pod.yaml\n" +
		"patches:\n- path: cm-patch.yaml\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: remote-only}\n    data: {b: \"2\"}\n" +
		"components:\n- ../comp\nimages:\n- name: app\n  newTag: v2\n",
	"prod/pod.yaml":           "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers:\n  - name: app\n    image: app:v1\n  - name: side\n    image: side:1\n",
	"prod/cm-patch.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config}\ndata: {a: \"1\"}\n",
	"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- name: side\n  newName: reg.example.com/side\n  newTag: \"3\"\n",
}

// TestRemoteBasesNotFetched renders remoteTree in a child process whose
// every proxy variable, and git's http.proxy and ssh, point at a loopback
// listener that records each connection and refuses it: nothing may
// reach it, and everything local is still rendered.
func TestRemoteBasesNotFetched(t *testing.T) {
	if dir := os.Getenv("REGCHECK_REMOTE_TREE"); dir != "" {
		tr := Find(dir)
		for _, l := range under(dir, uses(tr)) {
			os.Stdout.WriteString("use " + l + "\n")
		}
		for _, l := range under(dir, errs(tr)) {
			os.Stdout.WriteString("e " + l + "\n")
		}
		return
	}
	t.Parallel()
	dir := writeTree(t, remoteTree)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var attempts []string
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 256)
			n, _ := c.Read(buf)
			mu.Lock()
			attempts = append(attempts, strings.SplitN(string(buf[:n]), "\r\n", 2)[0])
			mu.Unlock()
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close() })
	proxy := "http://" + l.Addr().String()
	home := t.TempDir()
	gitconfig := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[http]\n\tproxy = "+proxy+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sshLog := filepath.Join(home, "ssh.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRemoteBasesNotFetched$")
	cmd.Env = append(os.Environ(), "REGCHECK_REMOTE_TREE="+dir,
		"HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "ALL_PROXY="+proxy, "https_proxy="+proxy, "http_proxy="+proxy, "NO_PROXY=", "no_proxy=",
		"GIT_CONFIG_GLOBAL="+gitconfig, "GIT_CONFIG_NOSYSTEM=1", "GIT_SSH_COMMAND=echo >>"+sshLog+" ssh", "GIT_TERMINAL_PROMPT=0", "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if ssh, _ := os.ReadFile(sshLog); len(attempts) > 0 || len(ssh) > 0 {
		t.Errorf("%d connection(s) through the proxy %q, ssh %q: want none", len(attempts), attempts, ssh)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "use ") {
			got = append(got, line)
		} else if e, ok := strings.CutPrefix(line, "e "); ok {
			got = append(got, e)
		}
	}
	check(t, "render", got, []string{
		"use D/apps/web.yaml:10 Deployment /web c0 reg.example.com/web:1 literal set-ref",
		"use D/prod/kustomization.yaml:14 Pod /app app app:v2 images-entry entry-digest",
		"use D/comp/kustomization.yaml:4 Pod /app side reg.example.com/side:3 images-entry entry-digest",
		"notice D/apps/podinfo/kustomization.yaml:2: remote https://github.com/stefanprodan/podinfo//kustomize?ref=6.7.0 not fetched: what it holds is not rendered",
		"notice D/prod/kustomization.yaml:2: remote https://raw.githubusercontent.com/org/repo/main/cm.yaml not fetched: what it holds is not rendered",
		"notice D/prod/kustomization.yaml:5: patch of ConfigMap app-config not applied: no such object without the remote base, which is not fetched",
		"notice D/prod/kustomization.yaml:6: patch of ConfigMap remote-only not applied: no such object without the remote base, which is not fetched",
	})
}

// TestRemoteBasesFetched: with WithRemote, kustomize's own loader fetches
// a remote base (a git repository, here a local one by file://) and a
// remote resource (an HTTP file, on loopback), and their images are
// rendered with the local ones.
func TestRemoteBasesFetched(t *testing.T) {
	t.Parallel()
	repo := writeTree(t, map[string]string{
		"deploy/kustomization.yaml": "resources:\n- api.yaml\n",
		"deploy/api.yaml":           deployment("api", "reg.example.com/api:1"),
	})
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(deployment("worker", "reg.example.com/worker:2")))
	}))
	t.Cleanup(srv.Close)
	dir := writeTree(t, map[string]string{
		"prod/kustomization.yaml": "resources:\n- file://" + repo + "//deploy?ref=main\n- " + srv.URL + "/worker.yaml\n- pod.yaml\nimages:\n- name: reg.example.com/api\n  newTag: \"1.1\"\n",
		"prod/pod.yaml":           "apiVersion: v1\nkind: Pod\nmetadata: {name: app}\nspec:\n  containers:\n  - name: app\n    image: reg.example.com/app:1\n",
	})
	for _, tc := range []struct {
		name string
		opts []Option
		want []string
	}{
		// The images entry naming a whole reference is read as written.
		{"not asked", nil, []string{"reg.example.com/app:1", "reg.example.com/api:1.1"}},
		{"WithRemote", []Option{WithRemote()}, []string{"reg.example.com/api:1.1", "reg.example.com/worker:2", "reg.example.com/app:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imgs, _ := Images(dir, tc.opts...)
			var got []string
			for _, img := range imgs {
				got = append(got, img.Ref)
			}
			check(t, "images", got, tc.want)
		})
	}
}
