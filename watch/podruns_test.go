package watch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPodRuns: a slot's pods answer as a map would, searched in order
// while few and indexed once many, through additions, updates and
// removals in any order.
func TestPodRuns(t *testing.T) {
	for _, n := range []int{1, podRunsScan, podRunsScan + 1, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(n), 7))
			var rs podRuns
			model := map[string]podRun{}
			for step := range 20 * n {
				pod := fmt.Sprintf("pod-%d", rng.IntN(n+n/2+1))
				switch rng.IntN(3) {
				case 0, 1:
					r := podRun{digest: fmt.Sprint("sha256:", step), restarts: int32(step)}
					rs.set(pod, r)
					model[pod] = r
				case 2:
					rs.remove(pod)
					delete(model, pod)
				}
				if rs.len() != len(model) {
					t.Fatalf("step %d: %d pods, want %d", step, rs.len(), len(model))
				}
				if rs.at != nil && len(rs.at) != len(rs.runs) {
					t.Fatalf("step %d: the index holds %d pods, the slot %d", step, len(rs.at), len(rs.runs))
				}
				for p, want := range model {
					if got, ok := rs.get(p); !ok || got != want {
						t.Fatalf("step %d: get(%s) = %+v, %v; want %+v", step, p, got, ok, want)
					}
				}
			}
			if _, ok := rs.get("absent"); ok {
				t.Fatal("a pod never set is found")
			}
		})
	}
}
