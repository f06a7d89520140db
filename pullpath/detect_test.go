package pullpath

import (
	"errors"
	"strings"
	"testing"
)

// Load tells formats apart by content: each file here has the name of
// another format.
func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, want string
		err              error
	}{
		{name: "YAML named .toml", path: "testdata/detect/registries.toml", want: FormatK3s},
		{name: "hosts.toml named .yaml", path: "testdata/detect/mirrors.yaml", want: FormatContainerd},
		{name: "registries.conf named hosts.toml", path: "testdata/detect/hosts.toml", want: FormatRegistriesConf},
		{name: "a directory", path: "testdata/certs.d", want: FormatContainerd},
		{name: "one host's directory", path: "testdata/certs.d/docker.io", want: FormatContainerd},
		{name: "YAML of something else", path: "testdata/detect/other.yaml", err: ErrUnknownFormat},
		{name: "TOML of something else", path: "testdata/detect/other.toml", err: ErrUnknownFormat},
		{name: "empty", path: "testdata/detect/empty.conf", err: ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(tt.path)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Load() error = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(): %v", err)
			}
			if c.Format() != tt.want {
				t.Errorf("Format() = %q, want %q", c.Format(), tt.want)
			}
		})
	}
}

func TestOptionsApplyToOneFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		opt  Option
	}{
		{name: "WithoutDefaultEndpoint on hosts", path: "testdata/certs.d", opt: WithoutDefaultEndpoint()},
		{name: "WithRuntime on k3s", path: "testdata/k3s/mirrors.yaml", opt: WithRuntime(RuntimeK3s)},
		{name: "WithRuntime on registries.conf", path: "testdata/conf/registries.conf", opt: WithRuntime(RuntimeContainerd)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Load(tt.path, tt.opt); !errors.Is(err, errOption) {
				t.Errorf("Load() error = %v, want errOption", err)
			}
		})
	}
	if _, err := Load("testdata/certs.d", WithRuntime(Runtime(9))); err == nil {
		t.Errorf("an unknown runtime was accepted")
	}
}

// A first line past 64 KiB (bufio.Scanner's token limit) is read, not
// taken for an empty file.
func TestDetectLongFirstLine(t *testing.T) {
	data := []byte("unqualified-search-registries = [\"" + strings.Repeat("a", 70<<10) + "\"]\n")
	got, err := detect("registries.conf", data)
	if err != nil || got != FormatRegistriesConf {
		t.Fatalf("detect = %q, %v; want %q", got, err, FormatRegistriesConf)
	}
	if _, ok := firstLine([]byte("\n  # comment\n\r\n")); ok {
		t.Error("a file of blanks and comments has a first line")
	}
}
