package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/record"
)

func TestDeniedVerb(t *testing.T) {
	gr := schema.GroupResource{Group: "batch", Resource: "cronjobs"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"named by the API server", errors.New(`cronjobs.batch is forbidden: User "x" cannot watch resource "cronjobs" in API group "batch"`), "watch"},
		{"a list the reflector wrapped", fmt.Errorf("failed to list *v1.CronJob: %w", apierrors.NewForbidden(gr, "", errors.New("no"))), "list"},
		{"a watch", apierrors.NewForbidden(gr, "", errors.New("no")), "watch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := deniedVerb(tc.err); got != tc.want {
				t.Errorf("deniedVerb(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

// A LIST the API server denies is logged at once, naming the resource and
// verb, keeps the watcher unready, and after SyncTimeout Run fails naming
// the informer that did not sync rather than wait forever.
func TestForbiddenListFailsReadiness(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("list", "cronjobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "cronjobs"}, "",
			errors.New(`User "system:serviceaccount:regcheck:regcheck" cannot list resource "cronjobs" in API group "batch"`))
	})
	logged := &logbuf.Buffer{}
	w, err := New(Config{Client: c, Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "h.json")},
		Interval: -1, SyncTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	waitFor(t, "the denial standing", func() bool { return strings.Contains(w.unready(), "list cronjobs denied") })
	if w.Ready() {
		t.Fatal("ready while list cronjobs is denied")
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cronjobs") || !strings.Contains(err.Error(), "list cronjobs denied") {
			t.Fatalf("Run = %v, want the cronjobs informer and its denial named", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still waits for the cache sync 10s after a 2s SyncTimeout")
	}
	out := logged.String()
	if n := strings.Count(out, "level=ERROR msg=\"the API server denies the watcher list on cronjobs"); n != 1 {
		t.Errorf("the denial is logged %d times, want once:\n%s", n, out)
	}
}
