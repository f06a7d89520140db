package credprovider

import (
	"context"
	"sync"
	"testing"
	"time"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

func TestCache(t *testing.T) {
	type step struct {
		advance  time.Duration
		image    string
		wantRuns int // plugin runs so far, after this lookup
	}
	tests := []struct {
		name  string
		env   map[string]string
		ttl   *time.Duration // defaultCacheDuration; nil: 10m
		steps []step
	}{
		{name: "registry key, default duration", env: map[string]string{"PLUGIN_CACHE_KEY_TYPE": "Registry"},
			steps: []step{{0, "reg.io/a", 1}, {0, "reg.io/b", 1}, {10 * time.Minute, "reg.io/a", 1}, {time.Second, "reg.io/b", 2}, {0, "reg.io/a", 2}}},
		{name: "image key", env: map[string]string{"PLUGIN_CACHE_KEY_TYPE": "Image"},
			steps: []step{{0, "reg.io/a", 1}, {0, "reg.io/b", 2}, {0, "reg.io/a", 2}, {0, "reg.io/b", 2}}},
		{name: "global key", env: map[string]string{"PLUGIN_CACHE_KEY_TYPE": "Global", "PLUGIN_AUTH_KEYS": "reg.io,other.io"},
			steps: []step{{0, "reg.io/a", 1}, {0, "other.io/b", 1}, {0, "reg.io/c", 1}}},
		{name: "response duration over the default", env: map[string]string{"PLUGIN_CACHE_DURATION": "1m"},
			steps: []step{{0, "reg.io/a", 1}, {time.Minute, "reg.io/a", 1}, {time.Second, "reg.io/a", 2}}},
		{name: "response duration 0: not cached", env: map[string]string{"PLUGIN_CACHE_DURATION": "0s"},
			steps: []step{{0, "reg.io/a", 1}, {0, "reg.io/a", 2}}},
		{name: "default duration 0: not cached", ttl: dur(0),
			steps: []step{{0, "reg.io/a", 1}, {0, "reg.io/a", 2}}},
		{name: "response duration with default 0", ttl: dur(0), env: map[string]string{"PLUGIN_CACHE_DURATION": "5m"},
			steps: []step{{0, "reg.io/a", 1}, {4 * time.Minute, "reg.io/a", 1}, {2 * time.Minute, "reg.io/a", 2}}},
		// The kubelet runs a failing plugin again for every pull; one
		// regcheck run asks once per matchImages pattern (a negative cache).
		{name: "failures cached per pattern for the run", env: map[string]string{"PLUGIN_MODE": "fail"},
			steps: []step{{0, "reg.io/a", 1}, {0, "reg.io/a", 1}, {time.Hour, "reg.io/b", 1}, {0, "other.io/b", 2}, {0, "other.io/c", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			r := newRig(t, plugin{name: "p", match: []string{"reg.io", "other.io"}, env: tt.env, ttl: tt.ttl})
			ps := r.load(WithClock(clock.Now))
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				_, _ = ps.Lookup(context.Background(), s.image)
				if got := len(r.runs("p")); got != s.wantRuns {
					t.Fatalf("step %d (%s after %s): %d runs, want %d", i, s.image, s.advance, got, s.wantRuns)
				}
			}
		})
	}
}

// TestCacheServesCredentials: a cached response gives the same credential.
func TestCacheServesCredentials(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_USERNAME": "bob"}})
	ps := r.load()
	for i := range 2 {
		creds, err := ps.Lookup(context.Background(), "reg.io/app")
		if err != nil || len(creds) != 1 || creds[0].Username != "bob" {
			t.Fatalf("lookup %d = %v, %v", i, creds, err)
		}
	}
	if n := len(r.runs("p")); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// TestConcurrentLookups: concurrent lookups of one image share one run,
// even when the response is not cached.
func TestConcurrentLookups(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"},
		env: map[string]string{"PLUGIN_MODE": "sleep", "PLUGIN_SLEEP": "500ms", "PLUGIN_CACHE_DURATION": "0s"}})
	ps := r.load()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Go(func() {
			creds, err := ps.Lookup(context.Background(), "reg.io/app")
			if err == nil && len(creds) != 1 {
				t.Errorf("lookup %d: %d creds", i, len(creds))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("lookup %d: %v", i, err)
		}
	}
	if n := len(r.runs("p")); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// TestCancelledLookup: a caller whose context ends stops waiting; the run
// goes on for the others, bounded by the timeout.
func TestCancelledLookup(t *testing.T) {
	r := newRig(t, plugin{name: "p", match: []string{"reg.io"}, env: map[string]string{"PLUGIN_MODE": "sleep", "PLUGIN_SLEEP": "1s"}})
	ps := r.load(WithTimeout(5 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ps.Lookup(ctx, "reg.io/app")
	checkErr(t, err, []string{`credential provider "p" for reg.io/app`, "deadline exceeded"})
	if time.Since(start) > 900*time.Millisecond {
		t.Errorf("waited %s after the context ended", time.Since(start))
	}
	// The run it left goes on: a second caller gets its result.
	creds, err := ps.Lookup(context.Background(), "reg.io/app")
	if err != nil || len(creds) != 1 {
		t.Fatalf("second Lookup = %v, %v", creds, err)
	}
	if n := len(r.runs("p")); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}

// With an image entry and a registry entry both cached, the image's is
// served first, as the kubelet's plugin cache looks them up
// (pkg/credentialprovider/plugin/plugin.go getCachedCredentials: image,
// then registry, then global); the registry's only when the image has
// none, and the global one last.
func TestCacheOrder(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newCache(func() time.Time { return now })
	auth := func(user string) map[string]credentialproviderv1.AuthConfig {
		return map[string]credentialproviderv1.AuthConfig{"*": {Username: user}}
	}
	later := now.Add(time.Hour)
	img := "registry.example.com/team/app"
	c.put(globalCacheKey, auth("global"), later)
	c.put(registryOf(img), auth("registry"), later)
	c.put(img, auth("image"), later)
	for _, tc := range []struct{ image, want string }{
		{img, "image"},
		{"registry.example.com/team/other", "registry"},
		{"elsewhere.example.com/x", "global"},
	} {
		got, ok := c.get(tc.image)
		if !ok || got["*"].Username != tc.want {
			t.Errorf("get(%s) = %v, %v; want the %s entry", tc.image, got, ok, tc.want)
		}
	}
}
