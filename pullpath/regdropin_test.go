package pullpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (path relative to the root → content) under a
// new folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		full := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// sources lists where a node asks for ref: host/repository and the file
// and line it was configured at, relative to root.
func sources(t *testing.T, c *Config, root, ref string) []string {
	t.Helper()
	var out []string
	for _, e := range endpointsOf(t, c, ref) {
		s := e.URL.Host + "/" + e.Repository + " " + strings.TrimPrefix(e.Source, root+"/")
		if e.Blocked {
			s += " blocked"
		}
		out = append(out, s)
	}
	return out
}

func regTable(prefix, location string, mirrors ...string) string {
	s := "[[registry]]\nprefix = \"" + prefix + "\"\nlocation = \"" + location + "\"\n"
	for _, m := range mirrors {
		s += "[[registry.mirror]]\nlocation = \"" + m + "\"\n"
	}
	return s
}

// TestDropIns: CRI-O's registries.conf.d as containers/image merges it
// (pkg/sysregistriesv2/system_registries_v2.go: dropInConfigs lists the
// *.conf files of the folder, not its subfolders, in lexical order;
// tryUpdatingCache loads each alone and merges it with
// updateWithConfigurationFrom, where a later file's [[registry]] replaces
// the earlier one of the same prefix, whole; the result sorted by prefix).
func TestDropIns(t *testing.T) {
	const ref = "src.example/ns/app:v1"
	for _, tc := range []struct {
		name  string
		files map[string]string
		load  string // the path given, relative to the root
		want  []string
	}{
		{
			name: "a folder of *.conf: the later file's registry replaces the earlier, mirrors not added",
			files: map[string]string{
				"registries.conf.d/00-base.conf":  regTable("src.example", "src.example", "a.example"),
				"registries.conf.d/10-local.conf": "\n" + regTable("src.example", "src.example", "b.example"),
			},
			load: "registries.conf.d",
			want: []string{"b.example/ns/app registries.conf.d/10-local.conf:5", "src.example/ns/app registries.conf.d/10-local.conf:2"},
		},
		{
			name: "a file with a sibling registries.conf.d: its drop-ins merged over it",
			files: map[string]string{
				"registries.conf":                  regTable("src.example", "src.example", "main.example"),
				"registries.conf.d/50-mirror.conf": regTable("src.example", "src.example", "drop.example"),
			},
			load: "registries.conf",
			want: []string{"drop.example/ns/app registries.conf.d/50-mirror.conf:4", "src.example/ns/app registries.conf.d/50-mirror.conf:1"},
		},
		{
			name: "other prefixes of the file kept; the longest prefix across files wins",
			files: map[string]string{
				"registries.conf":                  regTable("src.example", "src.example", "main.example") + regTable("other.example", "other.example", "x.example"),
				"registries.conf.d/50-narrow.conf": regTable("src.example/ns", "src.example/ns", "narrow.example/ns"),
			},
			load: "registries.conf",
			want: []string{"narrow.example/ns/app registries.conf.d/50-narrow.conf:4", "src.example/ns/app registries.conf.d/50-narrow.conf:1"},
		},
		{
			name: "a file without a sibling folder: the file alone",
			files: map[string]string{
				"registries.conf": regTable("src.example", "src.example", "main.example"),
			},
			load: "registries.conf",
			want: []string{"main.example/ns/app registries.conf:4", "src.example/ns/app registries.conf:1"},
		},
		{
			name: "files not named *.conf and subfolders are not read",
			files: map[string]string{
				"registries.conf.d/00-base.conf":        regTable("src.example", "src.example", "a.example"),
				"registries.conf.d/99-off.conf.rpmsave": regTable("src.example", "src.example", "off.example"),
				"registries.conf.d/sub/99-deep.conf":    regTable("src.example", "src.example", "deep.example"),
			},
			load: "registries.conf.d",
			want: []string{"a.example/ns/app registries.conf.d/00-base.conf:4", "src.example/ns/app registries.conf.d/00-base.conf:1"},
		},
		{
			name: "lexical order, not numeric: 9-z.conf after 10-a.conf",
			files: map[string]string{
				"registries.conf.d/10-a.conf": regTable("src.example", "src.example", "ten.example"),
				"registries.conf.d/9-z.conf":  regTable("src.example", "src.example", "nine.example"),
			},
			load: "registries.conf.d",
			want: []string{"nine.example/ns/app registries.conf.d/9-z.conf:4", "src.example/ns/app registries.conf.d/9-z.conf:1"},
		},
		{
			name: "a drop-in blocks the source the file allowed",
			files: map[string]string{
				"registries.conf":                 regTable("src.example", "src.example", "main.example"),
				"registries.conf.d/99-block.conf": "[[registry]]\nprefix = \"src.example\"\nlocation = \"src.example\"\nblocked = true\n[[registry.mirror]]\nlocation = \"main.example\"\n",
			},
			load: "registries.conf",
			want: []string{"main.example/ns/app registries.conf.d/99-block.conf:5", "src.example/ns/app registries.conf.d/99-block.conf:1 blocked"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			c := mustLoad(t, filepath.Join(root, tc.load))
			if c.Format() != FormatRegistriesConf {
				t.Fatalf("format %s, want %s", c.Format(), FormatRegistriesConf)
			}
			if got := sources(t, c, root, ref); !slices.Equal(got, tc.want) {
				t.Errorf("endpoints of %s:\ngot  %q\nwant %q", ref, got, tc.want)
			}
		})
	}
}

// TestDropInErrors: a drop-in the runtime rejects fails the whole
// configuration, naming that file; a v1 drop-in is rejected (drop-ins are
// v2 only, loadConfigFile(path, true)).
func TestDropInErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
	}{
		{"v1", "registries.conf.d/10-old.conf", "[registries.search]\nregistries = [\"docker.io\"]\n"},
		{"a scheme in a location", "registries.conf.d/20-bad.conf", regTable("src.example", "https://src.example")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, map[string]string{
				"registries.conf": regTable("src.example", "src.example"),
				tc.file:           tc.content,
			})
			_, err := Load(filepath.Join(root, "registries.conf"))
			if err == nil || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("Load: %v, want an error naming %s", err, tc.file)
			}
		})
	}
}

// TestDropInDirDetect: a folder is a drop-in folder when it holds *.conf
// files and no hosts.toml, directly or in a host folder; else it stays a
// containerd hosts directory.
func TestDropInDirDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"*.conf only", map[string]string{"a.conf": regTable("src.example", "src.example")}, FormatRegistriesConf},
		{"host folders", map[string]string{"src.example/hosts.toml": "server = \"https://src.example\"\n", "notes.conf": ""}, FormatContainerd},
		{"a hosts.toml", map[string]string{"hosts.toml": "server = \"https://src.example\"\n", "x.conf": ""}, FormatContainerd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			if got := mustLoad(t, root).Format(); got != tc.want {
				t.Errorf("format %s, want %s", got, tc.want)
			}
		})
	}
}
