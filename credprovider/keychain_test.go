package credprovider

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// static is a keychain that gives one credential for everything.
type static struct{ asked int }

func (s *static) Resolve(authn.Resource) (authn.Authenticator, error) {
	s.asked++
	return &authn.Basic{Username: "fallback", Password: "fallback-pw"}, nil
}

func TestMultiKeychain(t *testing.T) {
	r := newRig(t,
		plugin{name: "ok", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "plugin-user"}},
		plugin{name: "broken", match: []string{"broken.io"}, env: map[string]string{"PLUGIN_MODE": "fail"}},
	)
	ps := r.load()
	tests := []struct {
		repo       string
		wantUser   string // "": an error
		wantAsked  int    // times the fallback was asked
		wantErrSub string
	}{
		{repo: "reg.io/team/app", wantUser: "plugin-user"},
		{repo: "quay.io/team/app", wantUser: "fallback", wantAsked: 1},
		{repo: "broken.io/app", wantErrSub: `credential provider "broken" for broken.io/app`},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			fallback := &static{}
			kc := authn.NewMultiKeychain(ps, fallback)
			repo, err := name.NewRepository(tt.repo)
			if err != nil {
				t.Fatal(err)
			}
			auth, err := authn.Resolve(context.Background(), kc, repo)
			if fallback.asked != tt.wantAsked {
				t.Errorf("fallback asked %d times, want %d", fallback.asked, tt.wantAsked)
			}
			if tt.wantErrSub != "" {
				checkErr(t, err, []string{tt.wantErrSub})
				checkCredentialsError(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := auth.Authorization()
			if err != nil || cfg.Username != tt.wantUser {
				t.Errorf("Authorization() = %+v, %v; want user %q", cfg, err, tt.wantUser)
			}
		})
	}
}

// TestResolveAnonymous: no match is authn.Anonymous itself, which is what
// a multi keychain compares with to ask the next one.
func TestResolveAnonymous(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_AUTH_KEYS": "-"}})
	ps := r.load()
	for _, ref := range []string{"quay.io/app", "reg.io/app"} { // no match; a match without auth
		repo, _ := name.NewRepository(ref)
		auth, err := ps.Resolve(repo)
		if err != nil || auth != authn.Anonymous {
			t.Errorf("Resolve(%s) = %v, %v; want authn.Anonymous", ref, auth, err)
		}
	}
	if n := len(r.runs("p")); n != 1 {
		t.Errorf("%d runs, want 1 (for reg.io only)", n)
	}
}

func TestSeveralProviders(t *testing.T) {
	tests := []struct {
		name      string
		plugins   []plugin
		image     string
		wantCreds []string // provider/username, best first
		wantErr   []string
		wantLog   string
	}{
		{
			name: "both asked, earlier first for the same key",
			plugins: []plugin{
				{name: "a", match: []string{"*.io"}, env: map[string]string{"PLUGIN_USERNAME": "ua"}},
				{name: "b", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "ub"}},
			},
			image: "reg.io/app", wantCreds: []string{"a/ua", "b/ub"},
		},
		{
			name: "more specific key first, whichever provider",
			plugins: []plugin{
				{name: "a", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "ua"}},
				{name: "b", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "ub", "PLUGIN_AUTH_KEYS": "reg.io/team"}},
			},
			image: "reg.io/team/app", wantCreds: []string{"b/ub", "a/ua"},
		},
		{
			name: "one fails, the other's credentials used",
			plugins: []plugin{
				{name: "a", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_MODE": "fail"}},
				{name: "b", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "ub"}},
			},
			image: "reg.io/app", wantCreds: []string{"b/ub"}, wantLog: `msg="credential provider failed" provider=a`,
		},
		{
			name: "all fail: every failure",
			plugins: []plugin{
				{name: "a", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_MODE": "fail"}},
				{name: "b", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_MODE": "garbage"}},
			},
			image: "reg.io/app", wantErr: []string{`credential provider "a"`, `credential provider "b"`},
		},
		{
			name: "service account required: not run",
			plugins: []plugin{
				{name: "a", match: []string{"reg.io"}},
			},
			image: "reg.io/app", wantLog: "needs a service account token, skipped",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.plugins...)
			if strings.HasPrefix(tt.name, "service account") {
				r.rewrite(`"apiVersion":"credentialprovider.kubelet.k8s.io/v1"`,
					`"apiVersion":"credentialprovider.kubelet.k8s.io/v1","tokenAttributes":{"serviceAccountTokenAudience":"x","cacheType":"Token","requireServiceAccount":true}`)
			}
			var log bytes.Buffer
			ps := r.load(WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			creds, err := ps.Lookup(context.Background(), tt.image)
			checkErr(t, err, tt.wantErr)
			if err != nil {
				checkCredentialsError(t, err)
			}
			var got []string
			for _, c := range creds {
				got = append(got, c.Provider+"/"+c.Username)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantCreds, ",") {
				t.Errorf("creds = %q, want %q", got, tt.wantCreds)
			}
			if strings.HasPrefix(tt.name, "service account") && len(r.runs("a")) != 0 {
				t.Error("the plugin ran")
			}
			if !strings.Contains(log.String(), tt.wantLog) {
				t.Errorf("log does not contain %q:\n%s", tt.wantLog, log.String())
			}
		})
	}
}

// TestServiceAccountOptional: requireServiceAccount false runs the plugin
// without a token, as the kubelet does for a pod without one.
func TestServiceAccountOptional(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}})
	r.rewrite(`"apiVersion":"credentialprovider.kubelet.k8s.io/v1"`,
		`"apiVersion":"credentialprovider.kubelet.k8s.io/v1","tokenAttributes":{"serviceAccountTokenAudience":"x","cacheType":"ServiceAccount","requireServiceAccount":false}`)
	creds, err := r.load().Lookup(context.Background(), "reg.io/app")
	if err != nil || len(creds) != 1 {
		t.Fatalf("Lookup = %v, %v", creds, err)
	}
}

func TestContextCancelled(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	repo, _ := name.NewRepository("reg.io/app")
	_, err := r.load().ResolveContext(ctx, repo)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
