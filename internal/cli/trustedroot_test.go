package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/regcheck/regcheck/admission"
	"github.com/regcheck/regcheck/scan"
)

// TestTrustedRootFlag: scan, pin and watch read --trusted-root before
// anything else; a file that is not a sigstore trusted root is a usage
// error naming the flag, and nothing is contacted.
func TestTrustedRootFlag(t *testing.T) {
	dir := t.TempDir()
	notRoot := filepath.Join(dir, "not-a-root.json")
	if err := os.WriteFile(notRoot, []byte(`{"mediaType":"text/plain"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")
	fifo := filepath.Join(dir, "root.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		// has is more the message says, beside the flag.
		has string
	}{
		// Before: a named pipe blocked forever, SIGTERM ignored.
		{"scan, a named pipe", []string{"scan", "--trusted-root", fifo, "127.0.0.1:1/x:v1"}, fifo + ": a named pipe, not a regular file"},
		{"scan, not a trusted root", []string{"scan", "--trusted-root", notRoot, "127.0.0.1:1/x:v1"}, ""},
		{"scan, missing", []string{"scan", "--trusted-root", missing, "127.0.0.1:1/x:v1"}, ""},
		{"pin, not a trusted root", []string{"pin", "--check", "--trusted-root", notRoot, dir}, ""},
		{"watch, missing", []string{"watch", "--trusted-root", missing, "--kubeconfig", missing}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, tc.args)
			if code != ExitUsage || !strings.Contains(errb.String(), "--trusted-root") || !strings.Contains(errb.String(), tc.has) {
				t.Fatalf("exit %d, want %d naming --trusted-root:\n%s%s", code, ExitUsage, out.String(), errb.String())
			}
		})
	}
}

// Without --trusted-root the verifier holds no trust material at all: a
// nil *root.TrustedRoot in the interface made every keyless entry panic
// (TestAdmissionIVP's keyless case, found by make test after a merge).
func TestVerifierWithoutTrustedRoot(t *testing.T) {
	s, err := scan.New()
	if err != nil {
		t.Fatal(err)
	}
	var p policyFlags
	v, ok := p.verifier(s).(admission.CosignVerifier)
	if !ok {
		t.Fatalf("verifier %T, want admission.CosignVerifier", p.verifier(s))
	}
	if v.TrustedRoot != nil {
		t.Errorf("TrustedRoot %#v without --trusted-root, want nil", v.TrustedRoot)
	}
}
