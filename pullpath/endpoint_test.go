package pullpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestRequestURLs(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "testdata/k3s/mirrors.yaml")
	eps := endpointsOf(t, c, "registry.example.com/team/app:1")
	tests := []struct {
		name string
		got  string
		want string
	}{
		// override_path: the path is the API root, no /v2 added; mirrors
		// get ?ns=<upstream> (resolver.go addNamespace).
		{"override path, mirror", eps[1].ManifestURL("1"), "https://proxy.example.com/project/registry/team/app/manifests/1?ns=registry.example.com"},
		{"override path with v2", eps[0].BlobURL(zeroDigest), "https://registry.example.com/prefix/v2/team/app/blobs/" + zeroDigest},
		{"upstream", eps[3].ManifestURL("1"), "https://registry.example.com/v2/team/app/manifests/1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

// Credentials never print, whichever way an endpoint is printed.
func TestAuthRedacted(t *testing.T) {
	t.Parallel()
	c := mustLoad(t, "testdata/k3s/mirrors.yaml")
	e := endpointsOf(t, c, "rancher/klipper:v1")[0]
	if e.Auth == nil {
		t.Fatal("no credentials on the mirror endpoint")
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("endpoint", "auth", e.Auth, "endpoint", e)
	encoded, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{
		"%v":     fmt.Sprintf("%v", e),
		"%+v":    fmt.Sprintf("%+v", e),
		"%#v":    fmt.Sprintf("%#v", e),
		"String": e.Auth.String(),
		"slog":   logged.String(),
		"json":   string(encoded),
	} {
		if strings.Contains(out, "s3cret-pass") || strings.Contains(out, "robot") {
			t.Errorf("%s shows a credential: %s", name, out)
		}
	}
}
