package pin

import (
	stdctx "context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/artifacts"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/yamlfile"
)

// enforcedPolicy requires a cosign signature of every image of HOST.
const enforcedPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-signed
spec:
  rules:
    - name: verify
      match:
        any:
          - resources:
              kinds: [Pod]
      verifyImages:
        - imageReferences: ["HOST/*"]
          failureAction: Enforce
          attestors:
            - entries:
                - keys:
                    publicKeys: "cosign.pub"
`

// TestRunRefusesUnsigned: a digest whose tree is whole but whose
// signature an enforcing policy requires is not there is refused, and the
// refusal says so: the image is whole, admission would refuse it, sign it
// again; not that the tree is broken.
func TestRunRefusesUnsigned(t *testing.T) {
	t.Parallel()
	host, s := testRegistry(t)
	ref := host + "/app:v1"
	d := pushImage(t, ref, "unsigned")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(testDeployment("prod", "app", ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(strings.ReplaceAll(enforcedPolicy, "HOST", host)), 0o644); err != nil {
		t.Fatal(err)
	}
	m := refusal(t, s, dir, d, nil).Message
	for _, want := range []string{"the image is whole", "require-signed", "cosign sign", d} {
		if !strings.Contains(m, want) {
			t.Errorf("refusal %q does not say %q", m, want)
		}
	}
	if strings.Contains(m, "tree is broken") {
		t.Errorf("refusal %q says the tree is broken; it is whole", m)
	}
}

// refusal pins the files under dir to d with the image policies they hold
// (one rule) read by admission, verifying signatures with v (nil: presence
// only), and returns the one broken finding: the file left as it was.
func refusal(t *testing.T, s *scan.Scanner, dir, d string, v admission.Verifier) pinresult.Finding {
	t.Helper()
	ps, problems := admission.ReadFiles([]string{dir})
	if len(ps.Rules) != 1 || len(problems) > 0 {
		t.Fatalf("policies: %d rules, problems %+v", len(ps.Rules), problems)
	}
	c := &admission.Checker{Policies: ps, Finder: artifacts.NewFinder(s), Parse: s.Parse, Verifier: v}
	r, err := Run(stdctx.Background(), []string{dir}, Config{Scanner: s, Admission: c.Apply,
		Running: func(yamlfile.Image) (string, error) { return d, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Files[0].New) != string(r.Files[0].Old) {
		t.Errorf("pinned a digest admission refuses:\n%s", r.Files[0].New)
	}
	b := findingsOf(r, pinresult.KindBroken)
	if len(b) != 1 {
		t.Fatalf("broken findings %+v, want one", r.Findings)
	}
	return b[0]
}
