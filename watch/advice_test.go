package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/regcheck/regcheck/record"
)

// The unplanned-upgrade advice is a command to copy: the history as pin
// reads it, the cluster, and the millisecond before the change.
func TestUpgradeAdvice(t *testing.T) {
	t.Parallel()
	from, to := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	at := time.Date(2026, 12, 2, 6, 33, 30, 700e6, time.FixedZone("x", 3600))
	up := func(cluster string) Upgrade {
		return Upgrade{Transition: record.Transition{Cluster: cluster, Namespace: "web", OwnerKind: "Deployment", OwnerName: "app",
			Container: "app", Image: "reg.example/app:latest", From: from, To: to, Time: at}}
	}
	for _, tc := range []struct {
		name, cluster, hint, want string
	}{
		{"a file", "prod", "/var/lib/regcheck/history.json",
			"regcheck pin --from-records /var/lib/regcheck/history.json --records-cluster prod --records-at 2026-12-02T05:33:30.699Z --write PATH"},
		{"no hint", "https://127.0.0.1:6443", "",
			"regcheck pin --from-records HISTORY --records-cluster https://127.0.0.1:6443 --records-at 2026-12-02T05:33:30.699Z --write PATH"},
		{"a cluster name to quote", "my cluster's", "h.json",
			`regcheck pin --from-records h.json --records-cluster 'my cluster'\''s' --records-at 2026-12-02T05:33:30.699Z --write PATH`},
		{"no cluster", "", "h.json", "regcheck pin --from-records h.json --records-at 2026-12-02T05:33:30.699Z --write PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := upgradeAdvice(up(tc.cluster), tc.hint)
			for _, want := range []string{tc.want, "reg.example/app@" + from, "pins to " + to[:19]} {
				if !strings.Contains(got, want) {
					t.Errorf("advice %q lacks %q", got, want)
				}
			}
		})
	}
}
