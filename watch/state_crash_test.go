package watch

import (
	"testing"
	"time"
)

// When a standing unplanned upgrade is called a crash loop: the container
// running the new digest restarted since the change and is failing, by
// CrashLoopBackOff or by a non-zero last exit code (1 is the usual one,
// seen before the kubelet's back-off begins). A restart that exited 0, or
// a back-off with no restart since, is not one.
func TestCrashLoopAfterUpgrade(t *testing.T) {
	t.Parallel()
	exit := func(s sighting, code int32) sighting { s.lastExit = &code; return s }
	for _, tc := range []struct {
		name  string
		then  sighting
		crash bool
	}{
		{"exit code 1, no back-off yet", exit(see("p1", "app:latest", dB, 2, "Error"), 1), true},
		{"CrashLoopBackOff", see("p1", "app:latest", dB, 2, "CrashLoopBackOff"), true},
		{"restarted, exited 0", exit(see("p1", "app:latest", dB, 2, ""), 0), false},
		{"back-off, no restart since the change", see("p1", "app:latest", dB, 1, "CrashLoopBackOff"), false},
		{"exit code 1, no restart since the change", exit(see("p1", "app:latest", dB, 1, "Error"), 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newState("prod")
			now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
			st.observe(now, "web", "p1", []sighting{see("p1", "app:latest", dA, 0, "")})
			st.observe(now.Add(time.Second), "web", "p1", []sighting{see("p1", "app:latest", dB, 1, "")})
			st.observe(now.Add(2*time.Second), "web", "p1", []sighting{tc.then})
			u, ok := st.upgrades()[slot{"web", "Deployment", "app", "app", ""}]
			if !ok || u.CrashLoop != tc.crash {
				t.Fatalf("upgrade %v %+v, want crash loop %v", ok, u, tc.crash)
			}
		})
	}
}
