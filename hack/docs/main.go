// Command docs writes regcheck's command reference, one Markdown page per
// command, from the cobra commands themselves (make docs: go run ./hack/docs
// -out docs/cli). internal/cli's TestDocsUpToDate fails when the pages in
// docs/cli are not what this writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/regcheck/regcheck/internal/cli"
)

func main() {
	out := flag.String("out", "docs/cli", "folder to write the pages into; its other *.md files are removed")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "hack/docs:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	// A command removed or renamed leaves no page behind.
	old, err := filepath.Glob(filepath.Join(out, "*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := doc.GenMarkdownTree(root(), out); err != nil {
		return err
	}
	return checkLeaks(out)
}

// root is the reference's root command (see cli.NewReferenceRoot).
func root() *cobra.Command {
	return cli.NewReferenceRoot(cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
}

// checkLeaks fails when a page holds a path of this machine (its home,
// cache, config or working folder, $KUBECONFIG, $XDG_*): a flag default
// computed from the environment. Such a flag needs a stable placeholder
// for its default (say "~/.cache/regcheck/manifests"), set here, before
// generating, and in the docs test alike.
func checkLeaks(dir string) error {
	var paths []string
	add := func(p string, err error) {
		if err == nil && filepath.IsAbs(p) && len(filepath.Clean(p)) > 1 {
			paths = append(paths, filepath.Clean(p))
		}
	}
	add(os.UserHomeDir())
	add(os.UserCacheDir())
	add(os.UserConfigDir())
	add(os.Getwd())
	for _, v := range []string{"KUBECONFIG", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "REGCHECK_BIN"} {
		add(os.Getenv(v), nil)
	}
	pages, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	var leaks []string
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			return err
		}
		for _, p := range paths {
			if bytes.Contains(b, []byte(p)) {
				leaks = append(leaks, fmt.Sprintf("%s holds %s", page, p))
			}
		}
	}
	if len(leaks) > 0 {
		return fmt.Errorf("pages hold this machine's paths (a flag default from the environment? give it a placeholder in hack/docs):\n  %s", strings.Join(leaks, "\n  "))
	}
	return nil
}
