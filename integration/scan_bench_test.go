//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/regcheck/regcheck/internal/fixture"
	"github.com/regcheck/regcheck/internal/testregistry"
	"github.com/regcheck/regcheck/scan"
)

// BenchmarkScan walks 210 images (30 copies of the seven fixture shapes:
// single images sharing a base layer, a buildx index with an attestation,
// two-platform indexes, a Docker manifest list) on a local distribution
// 3.x, each down to every blob, with a new Scanner (no warm cache) per run.
// It reports requests and images per run; -benchmem gives the allocations.
func BenchmarkScan(b *testing.B) {
	const copies = 30
	r := startEmpty(b, testregistry.V3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		g       errgroup.Group
		targets = make([][]scan.Target, copies)
	)
	g.SetLimit(4)
	for i := range copies {
		g.Go(func() error {
			imgs, err := fixture.Push(ctx, r.Host(), fmt.Sprintf("bench%02d/", i))
			for _, im := range imgs {
				targets[i] = append(targets[i], scan.Target{Ref: im.Ref})
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	var all []scan.Target
	for _, t := range targets {
		all = append(all, t...)
	}

	b.ResetTimer()
	requests := 0
	for range b.N {
		res, err := scan.Run(ctx, all)
		if err != nil {
			b.Fatal(err)
		}
		if c := res.Count(); c[scan.OK] != len(all) {
			b.Fatalf("verdicts %v, want all %d ok", c, len(all))
		}
		for _, rc := range res.Requests {
			requests += rc.Count
		}
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	b.ReportMetric(float64(len(all)), "images/op")
}
