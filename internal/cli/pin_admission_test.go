package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/results/pinresult"
	"github.com/regcheck/regcheck/scan"
)

// badClusterPolicy is a Kyverno ClusterPolicy whose rules do not decode:
// admission cannot read it, at line 1 of its file.
const badClusterPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: check-signatures}
spec:
  rules: not a list
`

// forbiddenPolicies is a dynamic fake whose ClusterPolicy list is
// forbidden and whose other policy kinds are not served.
func forbiddenPolicies() *dynamicfake.FakeDynamicClient {
	gvrs := map[schema.GroupVersionResource]string{
		{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}:                                  "ClusterPolicyList",
		{Group: "kyverno.io", Version: "v1", Resource: "policies"}:                                         "PolicyList",
		{Group: "policy.sigstore.dev", Version: "v1beta1", Resource: "clusterimagepolicies"}:               "ClusterImagePolicyList",
		{Group: "policy.sigstore.dev", Version: "v1alpha1", Resource: "clusterimagepolicies"}:              "ClusterImagePolicyList",
		{Group: "policies.kyverno.io", Version: "v1", Resource: "imagevalidatingpolicies"}:                 "ImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1beta1", Resource: "imagevalidatingpolicies"}:            "ImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1alpha1", Resource: "imagevalidatingpolicies"}:           "ImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1", Resource: "namespacedimagevalidatingpolicies"}:       "NamespacedImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1beta1", Resource: "namespacedimagevalidatingpolicies"}:  "NamespacedImageValidatingPolicyList",
		{Group: "policies.kyverno.io", Version: "v1alpha1", Resource: "namespacedimagevalidatingpolicies"}: "NamespacedImageValidatingPolicyList",
		{Version: "v1", Resource: "namespaces"}:                                                            "NamespaceList",
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs)
	dyn.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gr := a.GetResource().GroupResource()
		if gr.Resource == "clusterpolicies" {
			return true, nil, apierrors.NewForbidden(gr, "", errors.New("RBAC: no list"))
		}
		return true, nil, apierrors.NewNotFound(gr, "")
	})
	return dyn
}

// TestPinAdmissionUnread: the policies pin could not read, a forbidden
// cluster list (through client-go's dynamic fake) and a file's policy that
// does not decode, are findings policy-unread naming the kind or the file
// and line, shown in every --check format: incomplete, not refusing.
func TestPinAdmissionUnread(t *testing.T) {
	dir := pinTree(t, map[string]string{"policy.yaml": badClusterPolicy, "app.yaml": pinPod})
	sc, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	f := &pinFlags{paths: []string{dir}, policies: policyFlags{enabled: true}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	apply, unread, err := pinAdmission(context.Background(), f, &kubeTarget{dynamic: forbiddenPolicies()}, sc, logger)
	if err != nil {
		t.Fatal(err)
	}
	if apply != nil {
		t.Error("an admission check with no rule read")
	}
	policyFile := filepath.Join(dir, "policy.yaml")
	want := []struct{ file, text string }{
		{policyFile, "image policies: ClusterPolicy check-signatures: spec.rules"},
		{"", "the cluster's image policies: listing clusterpolicies.kyverno.io: "},
	}
	if len(unread) != len(want) {
		t.Fatalf("findings %+v, want %d", unread, len(want))
	}
	for i, w := range want {
		fd := unread[i]
		if fd.Kind != pinresult.KindPolicyUnread || fd.File != w.file || !strings.Contains(fd.Message, w.text) || !fd.Kind.Incomplete() || fd.Kind.Fails() {
			t.Errorf("finding %d %+v, want policy-unread in %q saying %q", i, fd, w.file, w.text)
		}
	}
	if unread[0].Line != 1 {
		t.Errorf("file finding at line %d, want 1", unread[0].Line)
	}
	r := &pinresult.Report{Findings: unread}
	if err := pinExit(r); exitCode(err) != ExitIncomplete {
		t.Errorf("exit %v, want %d", err, ExitIncomplete)
	}
	for _, format := range report.PinCheckFormats {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			if err := report.PinCheck(&out, io.Discard, format, r); err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{"clusterpolicies.kyverno.io", "policy.yaml", "check-signatures"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("%s output lacks %q:\n%s", format, w, out.String())
				}
			}
			if format == "sarif" {
				checkUnreadSARIF(t, out.Bytes())
			}
		})
	}
}

// checkUnreadSARIF: the file's finding is a result on its file and line,
// the cluster's (no file) a notification, as code scanning wants.
func checkUnreadSARIF(t *testing.T, data []byte) {
	t.Helper()
	var doc struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
			Invocations []struct {
				Notifications []struct {
					Level   string
					Message struct{ Text string }
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.Runs) != 1 {
		t.Fatalf("%v: %s", err, data)
	}
	run := doc.Runs[0]
	if len(run.Results) != 1 || run.Results[0].RuleID != "policy-unread" || len(run.Results[0].Locations) != 1 ||
		!strings.HasSuffix(run.Results[0].Locations[0].PhysicalLocation.ArtifactLocation.URI, "/policy.yaml") {
		t.Errorf("results %+v, want one policy-unread on policy.yaml", run.Results)
	}
	if len(run.Invocations) != 1 || len(run.Invocations[0].Notifications) != 1 ||
		run.Invocations[0].Notifications[0].Level != "error" ||
		!strings.Contains(run.Invocations[0].Notifications[0].Message.Text, "clusterpolicies.kyverno.io") {
		t.Errorf("invocations %+v, want one error notification for the cluster", run.Invocations)
	}
}

// exitCode is the code err carries, 0 for nil.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestPinPolicyFileUnread: a policy among the files pinned that does not
// decode is reported on its file and line, the rest is pinned, and the
// run exits 3; a pin refused as well makes it 1.
func TestPinPolicyFileUnread(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	good := host + "/t/app:v1"
	digest, err := fixture.PushSingle(context.Background(), good, "pin policy-unread")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		code  int
	}{
		{"only the policy unread", map[string]string{"app.yaml": pinDeployment("app", good)}, ExitIncomplete},
		{"a pin refused too", map[string]string{"app.yaml": pinDeployment("app", good), "gone.yaml": pinDeployment("gone", host+"/t/gone:v1")}, ExitFindings},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.files["policy.yaml"] = badClusterPolicy
			dir := pinTree(t, tc.files)
			code, out, errs := runPinCmd(t, "--write", dir)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			want := filepath.Join(dir, "policy.yaml") + ":1: policy-unread: image policies: ClusterPolicy check-signatures: spec.rules"
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
			got, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
			if err != nil || string(got) != pinDeployment("app", good+"@"+digest) {
				t.Errorf("app.yaml not pinned (%v):\n%s", err, got)
			}
		})
	}
}
