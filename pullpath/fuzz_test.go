package pullpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzRefs are the references each configuration that loads is asked
// about: by tag and digest, Docker Hub, a host with a port, localhost.
var fuzzRefs = []string{
	"docker.io/library/nginx:1.27",
	"registry.example.com:5000/team/app@" + zeroDigest,
	"quay.io/org/app:v1",
	"localhost:5000/app:latest",
	"registry.example.com/app@" + zeroDigest,
}

// seedFiles adds every file the globs match as a seed.
func seedFiles(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// checkLoaded holds any configuration a loader accepts to the contract:
// Endpoints answers every reference without panicking, each endpoint has
// a URL, and a secret in userinfo never reaches an error or a note; a
// loader's error is a *ParseError with a line not below 0, or says the
// format is unknown.
func checkLoaded(t *testing.T, c *Config, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && pe.Line < 0 {
			t.Errorf("ParseError with line %d: %v", pe.Line, err)
		}
		checkNoSecret(t, err.Error())
		return
	}
	for _, s := range fuzzRefs {
		eps, err := c.Endpoints(mustRef(t, s))
		if err != nil {
			checkNoSecret(t, err.Error())
			continue
		}
		for _, ep := range eps {
			if ep.URL == nil {
				t.Fatalf("Endpoints(%s): an endpoint without a URL: %+v", s, ep)
			}
			for _, n := range ep.Notes {
				checkNoSecret(t, n)
			}
		}
	}
	for _, n := range c.Notices() {
		checkNoSecret(t, n.Message)
	}
}

// fuzzSecret is the password seeds plant in userinfo; no message may hold it.
const fuzzSecret = "fuzzpw9"

func checkNoSecret(t *testing.T, msg string) {
	t.Helper()
	if strings.Contains(msg, ":"+fuzzSecret+"@") {
		t.Errorf("a message holds the userinfo secret: %s", msg)
	}
}

// FuzzK3s loads any registries.yaml as k3s reads it.
func FuzzK3s(f *testing.F) {
	seedFiles(f, "testdata/k3s/*.yaml", "testdata/detect/*.yaml")
	f.Add([]byte("mirrors:\n  docker.io:\n    endpoint: [\"https://u:" + fuzzSecret + "@m.example.com\"]\nconfigs:\n  m.example.com:\n    auth: {password: x}\n"))
	f.Add([]byte("mirrors:\n  \"*\":\n    endpoint: [\"http://localhost:5000/v2/x\"]\n    rewrite: {\"^(.*)$\": \"lib/$1\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := loadK3s("registries.yaml", data, options{})
		checkLoaded(t, c, err)
	})
}

// FuzzHostsTOML loads any hosts.toml, with containerd's and k3s's rules.
func FuzzHostsTOML(f *testing.F) {
	seedFiles(f, "testdata/certs.d/*/hosts.toml", "testdata/bad/*/*/hosts.toml", "testdata/k3s-certs.d/*/hosts.toml", "testdata/detect/*.toml")
	f.Add([]byte("server = \"https://r.example.com\"\n[host.\"https://u:" + fuzzSecret + "@m.example.com\"]\n  capabilities = [\"pull\"]\n  [host.\"https://u:" + fuzzSecret + "@m.example.com\".header]\n    Authorization = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := "/etc/containerd/certs.d/registry.example.com_5000_"
		for _, o := range []options{{runtime: RuntimeContainerd}, {runtime: RuntimeK3s}} {
			c, err := loadHostsFile(filepath.Join(dir, "hosts.toml"), data, o)
			checkLoaded(t, c, err)
		}
	})
}

// FuzzRegistriesConf loads any registries.conf as containers/image reads it.
func FuzzRegistriesConf(f *testing.F) {
	seedFiles(f, "testdata/conf/*.conf", "testdata/detect/*.conf", "testdata/detect/registries.toml")
	f.Add([]byte("[[registry]]\nprefix = \"registry.example.com\"\nlocation = \"u:" + fuzzSecret + "@m.example.com\"\n[[registry.mirror]]\nlocation = \"m2.example.com\"\npull-from-mirror = \"digest-only\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := loadRegistriesConf("registries.conf", data)
		checkLoaded(t, c, err)
	})
}

// FuzzDetect tells any file's format without panicking, and loads it.
func FuzzDetect(f *testing.F) {
	seedFiles(f, "testdata/detect/*", "testdata/k3s/*.yaml", "testdata/conf/*.conf")
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil && errors.Is(err, ErrUnknownFormat) {
			return
		}
		checkLoaded(t, c, err)
	})
}
