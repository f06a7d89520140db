//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/registry"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// BenchmarkScan walks 210 images (30 copies of the seven fixture shapes:
// single images sharing a base layer, a buildx index with an attestation,
// two-platform indexes, a Docker manifest list) on a local distribution
// 3.x, each down to every blob, with a new Scanner per run: without a
// manifest cache, with an empty one (each run's own), and with a warm one
// (filled once before the runs: a second scan of an unchanged registry).
// It reports requests per run, by kind, and images per run; -benchmem
// gives the allocations.
func BenchmarkScan(b *testing.B) {
	const copies = 30
	r := startEmpty(b, registry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		g       errgroup.Group
		targets = make([][]types.Target, copies)
	)
	g.SetLimit(4)
	for i := range copies {
		g.Go(func() error {
			imgs, err := fixture.Push(ctx, r.Host(), fmt.Sprintf("bench%02d/", i))
			for _, im := range imgs {
				targets[i] = append(targets[i], types.Target{Ref: im.Ref})
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	var all []types.Target
	for _, t := range targets {
		all = append(all, t...)
	}

	const cacheSize = 256 << 20
	b.Run("no-cache", func(b *testing.B) { benchScan(b, ctx, all, func() []scan.Option { return nil }) })
	b.Run("cold-cache", func(b *testing.B) {
		benchScan(b, ctx, all, func() []scan.Option { return []scan.Option{scan.WithCache(b.TempDir(), cacheSize)} })
	})
	b.Run("warm-cache", func(b *testing.B) {
		warm := scan.WithCache(b.TempDir(), cacheSize)
		if _, err := scan.Run(ctx, all, warm); err != nil {
			b.Fatal(err)
		}
		benchScan(b, ctx, all, func() []scan.Option { return []scan.Option{warm} })
	})
}

// benchScan scans all b.N times, each with a new Scanner made with the
// options opts returns, and reports the requests per run by kind.
func benchScan(b *testing.B, ctx context.Context, all []types.Target, opts func() []scan.Option) {
	byKind := map[string]int{}
	requests := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		o := opts()
		b.StartTimer()
		res, err := scan.Run(ctx, all, o...)
		if err != nil {
			b.Fatal(err)
		}
		if c := res.Count(); c[types.OK] != len(all) {
			b.Fatalf("verdicts %v, want all %d ok", c, len(all))
		}
		for _, rc := range res.Requests {
			requests += rc.Count
			byKind[rc.Kind] += rc.Count
		}
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	for kind, n := range byKind {
		b.ReportMetric(float64(n)/float64(b.N), kind+"/op")
	}
	b.ReportMetric(float64(len(all)), "images/op")
}
