// Command deploy writes deploy/'s generated files from the Helm chart
// charts/regcheck, rendered with Helm's engine (make deploy); go test
// ./charts/ fails when they are not current.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/regcheck/regcheck/charts"
)

func main() {
	out := flag.String("out", "deploy", "the deploy/ folder to write into")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "deploy:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	files, err := charts.Deploy(ctx)
	if err != nil {
		return err
	}
	for _, p := range charts.DeployPaths() {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, files[p], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", dst, err)
		}
		fmt.Println(dst)
	}
	return nil
}
