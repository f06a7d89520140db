package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRescueUsage: what cannot be a rescue is a usage error (exit 2),
// asked before anything is contacted.
func TestRescueUsage(t *testing.T) {
	store := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no image", []string{"rescue", "--from-content-store", store}, "nothing to rescue"},
		{"no source", []string{"rescue", "reg.test/app:v1"}, "no source"},
		{"not a content store", []string{"rescue", "--from-content-store", store, "reg.test/app:v1"}, "no containerd content store"},
		{"not an OCI layout", []string{"rescue", "--from-oci-layout", store, "reg.test/app:v1"}, "not an OCI image layout"},
		{"a bad registry source", []string{"rescue", "--from-registry", "bad host", "reg.test/app:v1"}, "want HOST"},
		{"--tag without --write", []string{"rescue", "--from-content-store", store, "--tag", "x", "reg.test/app:v1"}, "--tag goes with --write"},
		{"a bad tag", []string{"rescue", "--from-content-store", store, "--write", "--tag", "-x", "reg.test/app:v1"}, "tag prefix"},
		{"--apply without --cluster", []string{"rescue", "--from-content-store", store, "--apply", "reg.test/app:v1"}, "go with --cluster"},
		{"--cluster without a push secret", []string{"rescue", "--cluster", "--job-image", "x"}, "--push-secret"},
		{"--cluster without a job image", []string{"rescue", "--cluster", "--push-secret", "ns/name"}, "--job-image"},
		{"--cluster with images", []string{"rescue", "--cluster", "--push-secret", "ns/name", "--job-image", "x", "reg.test/app:v1"}, "give no images"},
		{"--cluster with a relative content store", []string{"rescue", "--cluster", "--push-secret", "ns/name", "--job-image", "x", "--node-content-store", "var/lib"}, "absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, tc.args)
			if code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errb.String(), ExitUsage, tc.want)
			}
		})
	}
}
