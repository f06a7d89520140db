package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/testing/logbuf"
	"github.com/regcheck/regcheck/pullpath"
	"github.com/regcheck/regcheck/record"
	"github.com/regcheck/regcheck/scan"
	"github.com/regcheck/regcheck/types"
)

// TestWalkThroughPullPath: each walk asks Config.PullPath for the nodes'
// pull path (the cluster's mirror sets). A pin only a digest-only mirror
// still holds is broken without one, at-risk (mirror-only) through it; a
// pull path that cannot be read fails the walk, which says so.
func TestWalkThroughPullPath(t *testing.T) {
	ctx := context.Background()
	src, mirror := memRegistry(t), memRegistry(t)
	d, err := fixture.PushSingle(ctx, mirror+"/team/app:v1", "app v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fixture.PushSingle(ctx, src+"/team/app:v2", "app v2"); err != nil {
		t.Fatal(err)
	}
	pinned := src + "/team/app@" + d
	conf, err := pullpath.ParseRegistriesConf("registries.conf rendered from the mirror sets", []byte(fmt.Sprintf(
		"[[registry]]\nlocation = %q\ninsecure = true\n[[registry.mirror]]\nlocation = %q\ninsecure = true\npull-from-mirror = \"digest-only\"\n", src, mirror)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     *pullpath.Config
		err     error
		verdict types.Verdict
		code    types.Code
	}{
		{"no mirror sets", nil, nil, types.Broken, ""},
		{"through the mirror", conf, nil, types.AtRisk, types.MirrorOnly},
		{"unreadable", nil, errors.New("rendering the mirror sets: boom"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			dep, rs := deployment(pinned)
			c := fake.NewClientset(dep, rs, pod("app-1-x", pinned, d, 0, ""))
			logs := &logbuf.Buffer{}
			w, err := New(Config{Client: c, Cluster: "prod", Store: &record.File{Path: filepath.Join(t.TempDir(), "history.json")},
				FlushInterval: 20 * time.Millisecond, Interval: time.Hour, Debounce: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil)),
				ScanOptions: []scan.Option{scan.WithInsecureRegistries(src, mirror), scan.WithTransport(http.DefaultTransport)},
				PullPath: func(context.Context) (*pullpath.Config, error) {
					asked.Add(1)
					return tc.cfg, tc.err
				}})
			if err != nil {
				t.Fatal(err)
			}
			runWatcher(t, w)
			if tc.err != nil {
				waitFor(t, "the failed walk", func() bool {
					return strings.Contains(logs.String(), "reading the nodes' pull path: rendering the mirror sets: boom")
				})
				return
			}
			var im *types.Image
			waitFor(t, "the first walk", func() bool {
				w.walks.mu.Lock()
				defer w.walks.mu.Unlock()
				if res := w.walks.result; res != nil && len(res.Images) > 0 {
					im = res.Images[0]
				}
				return im != nil
			})
			if im.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %v", im.Verdict, tc.verdict, im.Findings)
			}
			if tc.code != "" && !hasCode(im, tc.code) {
				t.Errorf("no %s finding: %v", tc.code, im.Findings)
			}
			if asked.Load() == 0 {
				t.Error("the pull path was never asked")
			}
		})
	}
}

func hasCode(im *types.Image, c types.Code) bool {
	for _, f := range im.Findings {
		if f.Code == c {
			return true
		}
	}
	return false
}
