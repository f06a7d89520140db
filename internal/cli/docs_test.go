package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// docsRoot is the root command hack/docs generates the reference from.
func docsRoot() *cobra.Command { return NewReferenceRoot(Streams{In: strings.NewReader("")}) }

// TestDocsUpToDate generates the command reference as make docs does and
// compares it, page by page, with docs/cli. It generates in an environment
// no machine has, so that a flag default taken from the environment (a home,
// a cache folder, $KUBECONFIG) shows here rather than in the pages.
func TestDocsUpToDate(t *testing.T) {
	got := t.TempDir()
	for k, v := range map[string]string{
		"HOME":                 "/nonexistent/docs-home",
		"XDG_CACHE_HOME":       "/nonexistent/docs-cache",
		"XDG_CONFIG_HOME":      "/nonexistent/docs-config",
		"XDG_STATE_HOME":       "/nonexistent/docs-state",
		"KUBECONFIG":           "/nonexistent/docs-kubeconfig",
		"REGCHECK_BIN":         "/nonexistent/docs-bin",
		"TMPDIR":               "/nonexistent/docs-tmp",
		"COLUMNS":              "31",
		"JOB_COMPLETION_INDEX": "1",
		"REGCHECK_SHARD_COUNT": "4",
	} {
		t.Setenv(k, v)
	}
	if err := doc.GenMarkdownTree(docsRoot(), got); err != nil {
		t.Fatal(err)
	}
	gotPages := readPages(t, got)
	wantPages := readPages(t, filepath.Join("..", "..", "docs", "cli"))

	for name, b := range gotPages {
		if i := bytes.Index(b, []byte("/nonexistent/")); i >= 0 {
			line := bytes.Count(b[:i], []byte("\n")) + 1
			t.Errorf("%s:%d shows a path taken from the environment: give that flag's default a stable placeholder in hack/docs and in docsRoot", name, line)
		}
	}
	for _, name := range sortedKeys(gotPages) {
		want, ok := wantPages[name]
		switch {
		case !ok:
			t.Errorf("docs/cli/%s is missing: run make docs", name)
		case !bytes.Equal(want, gotPages[name]):
			t.Errorf("docs/cli/%s is stale (%s): run make docs", name, firstDifference(want, gotPages[name], "the page has", "the commands give"))
		}
	}
	for _, name := range sortedKeys(wantPages) {
		if _, ok := gotPages[name]; !ok {
			t.Errorf("docs/cli/%s is no command's page: run make docs", name)
		}
	}
}

func readPages(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := make(map[string][]byte, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = b
	}
	return pages
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// firstDifference names the first line where want and got differ.
func firstDifference(want, got []byte, wantName, gotName string) string {
	w := strings.Split(string(want), "\n")
	g := strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if i >= len(w) || i >= len(g) || wl != gl {
			return fmt.Sprintf("line %d: %s %q, %s %q", i+1, wantName, wl, gotName, gl)
		}
	}
	return "no line differs"
}
