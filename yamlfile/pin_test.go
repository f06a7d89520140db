package yamlfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/pin"
	"github.com/regcheck/regcheck/yamlfile"
)

// TestPinCustomKinds pins the references of the custom kinds and GitOps
// objects in place (package pin edits the bytes of each Site's Value as
// Written says) and checks a second pass changes nothing.
func TestPinCustomKinds(t *testing.T) {
	t.Parallel()
	const d = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	lookup := func(yamlfile.Image) (string, bool, error) { return d, true, nil }
	for _, tc := range []struct {
		file string
		want []string // lines of the result
		skip []string // changes not made, by reference
	}{
		{"crds.yaml", []string{
			"        image: registry.example.com/shop/web:3@" + d,
			"  - name: compile\n    image: registry.example.com/ci/go:1.23@" + d,
			"    image: registry.example.com/ci/base:1@" + d,
			"        image: registry.example.com/wf/python:3.12@" + d,
			"  imageName: ghcr.io/cloudnative-pg/postgresql:16.4@" + d,
			"  package: xpkg.upbound.io/upbound/provider-aws-s3:v1.1.0@" + d,
		}, nil},
		{"gitops.yaml", []string{
			"      tag: 6.7.0@" + d,
			"      image: registry.example.com/sidecar:2@" + d,
			`        value: "2.1@` + d + `"`,
			`          image: "registry.example.com/worker:5@` + d + `"`,
			"            tag: v1@" + d,
			"      - backend=registry.example.com/backend:4@" + d,
		}, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			out, changes, err := pin.Rewrite(tc.file, data, lookup)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range changes {
				if c.Skipped != "" {
					t.Errorf("not edited: %v", c)
				}
			}
			for _, w := range tc.want {
				if !bytes.Contains(out, []byte(w+"\n")) {
					t.Errorf("result lacks %q", w)
				}
			}
			if n := strings.Count(string(out), d); n != len(changes) {
				t.Errorf("%d digests written, %d changes", n, len(changes))
			}
			again, more, err := pin.Rewrite(tc.file, out, lookup)
			if err != nil || len(more) != 0 || !bytes.Equal(again, out) {
				t.Errorf("second pass: %d changes, %v", len(more), err)
			}
		})
	}
}
