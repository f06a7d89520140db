//go:build integration

package credprovider

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/crypto/bcrypt"

	"github.com/regcheck/regcheck/internal/testing/bins"
	testregistry "github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/types"
)

const (
	registryUser     = "puller"
	registryPassword = "pull-secret-7c1d"
)

// startRegistry runs distribution v3 with htpasswd auth on 127.0.0.1. The
// binary comes from hack/build-bins.sh; without it the test is skipped,
// except in CI, where it fails.
func startRegistry(t *testing.T) *testregistry.Registry {
	t.Helper()
	bin, err := testregistry.Binary(testregistry.V3)
	bins.Require(t, err, "registry")
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte(registryPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(registryUser+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, err := testregistry.Start(ctx, bin, dir, "127.0.0.1:0", testregistry.WithHtpasswd(htpasswd))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Stop() })
	return reg
}

// staticKeychain gives one credential for everything: a stand-in for the
// keychain after ours in a multi keychain.
type staticKeychain struct{ authn.Authenticator }

func (s staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) {
	return s.Authenticator, nil
}

func TestRegistryEndToEnd(t *testing.T) {
	reg := startRegistry(t)
	ref, err := name.ParseReference(reg.Host()+"/credprovider/app:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: registryUser, Password: registryPassword})); err != nil {
		t.Fatalf("pushing: %v", err)
	}
	want, _ := img.Digest()

	tests := []struct {
		name     string
		match    string
		env      map[string]string
		fallback authn.Authenticator // a keychain after ours; nil: none
		check    func(t *testing.T, err error)
	}{
		{name: "plugin credentials", match: reg.Host(),
			env: map[string]string{"PLUGIN_USERNAME": registryUser, "PLUGIN_PASSWORD": registryPassword}},
		{name: "glob and port", match: "127.0.0.*:" + strings.Split(reg.Host(), ":")[1],
			env: map[string]string{"PLUGIN_USERNAME": registryUser, "PLUGIN_PASSWORD": registryPassword}},
		{name: "wrong credentials", match: reg.Host(),
			env:   map[string]string{"PLUGIN_USERNAME": registryUser, "PLUGIN_PASSWORD": "wrong"},
			check: wantStatus(http.StatusUnauthorized)},
		{name: "failing plugin", match: reg.Host(), env: map[string]string{"PLUGIN_MODE": "fail"},
			fallback: &authn.Basic{Username: registryUser, Password: registryPassword}, // never asked
			check: func(t *testing.T, err error) {
				// The plugin's stderr is said by its size, never quoted: it
				// may echo a secret.
				checkErr(t, err, []string{`credential provider "cp"`, "exit status 1", "bytes to stderr (not shown"})
				if strings.Contains(err.Error(), "access denied") {
					t.Errorf("the plugin's stderr is quoted: %v", err)
				}
				checkCredentialsError(t, err)
			}},
		{name: "no match: anonymous", match: "other.example.com", check: wantStatus(http.StatusUnauthorized)},
		{name: "no match: next keychain", match: "other.example.com",
			fallback: &authn.Basic{Username: registryUser, Password: registryPassword}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, plugin{name: "cp", match: []string{tt.match}, env: tt.env})
			var kc authn.Keychain = r.load()
			if tt.fallback != nil {
				kc = authn.NewMultiKeychain(kc, staticKeychain{tt.fallback})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			desc, err := remote.Get(ref, remote.WithAuthFromKeychain(kc), remote.WithContext(ctx))
			runs := r.runs("cp")
			if tt.match == "other.example.com" {
				if len(runs) != 0 {
					t.Errorf("the plugin ran for a registry it does not match")
				}
			} else if len(runs) == 0 || runs[0].Request.Image != reg.Host()+"/credprovider/app" {
				t.Errorf("plugin runs %+v, want one for %s/credprovider/app", runs, reg.Host())
			}
			if tt.check != nil {
				if err == nil {
					t.Fatal("remote.Get succeeded, want an error")
				}
				tt.check(t, err)
				return
			}
			if err != nil {
				t.Fatalf("remote.Get: %v", err)
			}
			if desc.Digest != want {
				t.Errorf("digest %s, want %s", desc.Digest, want)
			}
		})
	}
}

func wantStatus(code int) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var te *transport.Error
		if !errors.As(err, &te) || te.StatusCode != code {
			t.Errorf("error %v, want HTTP %d", err, code)
		}
		if errors.Is(err, types.ErrCredentials) {
			t.Errorf("a registry's %d wraps ErrCredentials: %v", code, err)
		}
	}
}
