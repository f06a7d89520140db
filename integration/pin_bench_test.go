//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/pin"
	"github.com/regcheck/regcheck/scan"
)

const (
	benchImages = 500
	benchFiles  = 5000
)

// BenchmarkPin pins a generated repository of 5,000 manifests naming 500
// distinct images (each image in 10 files) against a local distribution
// 3.x, walking every image for the broken refusal, and reports the
// registry requests each run sends.
func BenchmarkPin(b *testing.B) {
	r := startEmpty(b, registry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	g, pushCtx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range benchImages {
		g.Go(func() error {
			// b.Fatal must not be called from another goroutine: the
			// error is returned, and g.Wait fails the benchmark.
			_, err := fixture.PushSingle(pushCtx, fmt.Sprintf("%s/bench/app%03d:v1", r.Host(), i), fmt.Sprintf("bench image %d", i))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for i := range benchFiles {
		sub := filepath.Join(dir, fmt.Sprintf("team%02d", i%50))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		img := fmt.Sprintf("%s/bench/app%03d:v1", r.Host(), i%benchImages)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("svc%04d.yaml", i)), []byte(deployment(fmt.Sprintf("svc%04d", i), img, "")), 0o644); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	var requests int
	for range b.N {
		s, err := scan.New()
		if err != nil {
			b.Fatal(err)
		}
		rep, err := pin.Run(ctx, []string{dir}, pin.Config{Scanner: s})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(rep.Changed()); n != benchFiles || len(rep.Findings) != 0 {
			b.Fatalf("%d files changed, findings %v; want %d, none", n, rep.Findings, benchFiles)
		}
		for _, c := range rep.Requests {
			requests += c.Count
		}
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	b.ReportMetric(benchFiles, "files/op")
}
