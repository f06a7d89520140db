package redact

import (
	"strings"
	"testing"
)

const marker = "s3cr3t-MARKER"

func TestString(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, in string
		known    []string
		want     string // "" when only the marker's absence is checked
	}{
		{name: "url userinfo", in: "GET https://user:" + marker + "@127.0.0.1:5000/v2/: refused", want: "GET https://" + Mask + "@127.0.0.1:5000/v2/: refused"},
		{name: "url user only", in: "http://" + marker + "@host/x", want: "http://" + Mask + "@host/x"},
		{name: "reference userinfo", in: `invalid image reference "user:` + marker + `@127.0.0.1:5999/vol:1": bad`, want: `invalid image reference "` + Mask + `@127.0.0.1:5999/vol:1": bad`},
		{name: "password with @", in: "for u:p@" + marker + "@host/r", want: "for " + Mask + "@host/r"},
		{name: "crio location", in: "rewriting reference a:1 for user:" + marker + "@127.0.0.1:5998: invalid", want: "rewriting reference a:1 for " + Mask + "@127.0.0.1:5998: invalid"},
		{name: "digest kept", in: "walking ghcr.io/o/app@" + digest + " and nginx@" + digest, want: "walking ghcr.io/o/app@" + digest + " and nginx@" + digest},
		{name: "yaml type error", in: "line 6: cannot unmarshal !!str `" + marker[:7] + "...` into pullpath.k3sAuth", want: "line 6: cannot unmarshal !!str `" + Mask + "` into pullpath.k3sAuth"},
		{name: "yaml password", in: "password: " + marker, want: "password: " + Mask},
		{name: "json auth", in: `{"auths":{"r":{"auth":"` + marker + `","identitytoken":"` + marker + `"}}}`},
		{name: "escaped json", in: `data: {\"password\":\"` + marker + `\"}`},
		{name: "k3s identity_token", in: "identity_token=" + marker},
		{name: "header bearer", in: "Authorization: Bearer " + marker, want: "Authorization: " + Mask},
		{name: "toml header", in: `Authorization = ["Basic ` + marker + `"]`},
		{name: "known env value", in: "plugin said PASSWORD is " + marker + " here", known: []string{"", marker}, want: "plugin said PASSWORD is " + Mask + " here"},
		{name: "redacted auth kept", in: "auth(username,password: redacted)", want: "auth(username,password: redacted)"},
		{name: "plain text kept", in: "auth failed: no token; the author said", want: "auth failed: no token; the author said"},
		{name: "at sign in a URL path kept", in: "GET https://registry.example/a@b/c", want: "GET https://registry.example/a@b/c"},
		{name: "at sign in a file path kept", in: "reading k8s/v2@rc/deploy.yaml", want: "reading k8s/v2@rc/deploy.yaml"},
		{name: "idempotent", in: "password: " + Mask, want: "password: " + Mask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := String(tc.in, tc.known...)
			if strings.Contains(got, marker) || strings.Contains(got, marker[:7]) {
				t.Fatalf("String(%q) = %q: the secret is still there", tc.in, got)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := String(got, tc.known...); again != got {
				t.Errorf("not idempotent: %q then %q", got, again)
			}
		})
	}
}

func TestDropUserinfo(t *testing.T) {
	t.Parallel()
	digest := "sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct{ in, want string }{
		{"user:" + marker + "@registry.example/app:v1", "registry.example/app:v1"},
		{"tok@registry.example:5000", "registry.example:5000"},
		{"https://u:" + marker + "@host/x", "https://host/x"},
		{"https://registry.example/a@b", "https://registry.example/a@b"},
		{"registry.example/app@" + digest, "registry.example/app@" + digest},
		{"app@" + digest, "app@" + digest},
		{"plain", "plain"},
	} {
		if got := DropUserinfo(tc.in); got != tc.want {
			t.Errorf("DropUserinfo(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
