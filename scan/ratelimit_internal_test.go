package scan

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestParseRateLimit(t *testing.T) {
	for _, tc := range []struct {
		in     string
		n      int
		window time.Duration
		ok     bool
	}{
		{"100;w=21600", 100, 6 * time.Hour, true}, // Docker Hub
		{"76;w=21600", 76, 6 * time.Hour, true},
		{" 0;w=21600 ", 0, 6 * time.Hour, true},
		{"100, 100;w=21600", 100, 6 * time.Hour, true}, // the IETF draft's quota policies
		{"10, 10;w=1, 50;w=60", 10, time.Second, true},
		{"100", 100, 0, true},
		{`100;w="3600"`, 100, time.Hour, true},
		{"", 0, 0, false},
		{"many;w=60", 0, 0, false},
		{"-1;w=60", 0, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			n, w, ok := parseRateLimit(tc.in)
			if n != tc.n || w != tc.window || ok != tc.ok {
				t.Errorf("parseRateLimit(%q) = %d, %s, %v; want %d, %s, %v", tc.in, n, w, ok, tc.n, tc.window, tc.ok)
			}
		})
	}
}

func TestPullReserve(t *testing.T) {
	for limit, want := range map[int]int{0: 1, 1: 1, 10: 1, 11: 2, 100: 10, 200: 20} {
		if got := pullReserve(limit); got != want {
			t.Errorf("pullReserve(%d) = %d, want %d", limit, got, want)
		}
	}
}

// TestRateLimitOrder checks which answer says what is left: one to a
// request sent after the last answer was read replaces it (the window may
// have moved on); an older one, which the registry may have counted before
// or after, only lowers it.
func TestRateLimitOrder(t *testing.T) {
	r := &rateLimits{}
	h := func(n string) http.Header {
		return http.Header{"Ratelimit-Remaining": {n + ";w=60"}, "Ratelimit-Limit": {"100;w=60"}}
	}
	early := time.Now()
	r.observe("reg", time.Now(), h("50"))
	r.observe("reg", early, h("60")) // sent before the answer above was read
	if got := r.hosts["reg"].remaining; got != 50 {
		t.Errorf("an older answer raised what is left to %d", got)
	}
	r.observe("reg", early, h("40"))
	if got := r.hosts["reg"].remaining; got != 40 {
		t.Errorf("an older answer saying less left %d", got)
	}
	r.observe("reg", time.Now(), h("70"))
	if got := r.hosts["reg"].remaining; got != 70 {
		t.Errorf("a newer answer left %d, want 70", got)
	}
}

// TestPullTicket checks that a reserved GET's first attempt goes without a
// second count, that a retry is a pull of its own, refused once past the
// budget and counted as withheld once, and that a ticket never sent is
// given back.
func TestPullTicket(t *testing.T) {
	next := &okTransport{}
	r := &rateLimits{next: next, maxPulls: 2}
	get := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://reg/v2/a/manifests/sha256:00", nil)
		_, err := r.RoundTrip(req)
		return err
	}
	ctx, t1, why := r.reserve(context.Background(), "reg")
	if why != "" {
		t.Fatal(why)
	}
	if err := get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := get(ctx); err != nil { // a retry: the second pull
		t.Fatal(err)
	}
	for range 2 {
		if err := get(ctx); err == nil {
			t.Fatal("a third pull went out under a cap of 2")
		}
	}
	r.release(t1)
	if b := r.hosts["reg"]; b.pulls != 2 || b.withheld != 1 || b.inflight != 0 || next.calls != 2 {
		t.Errorf("pulls %d withheld %d in flight %d sent %d; want 2 1 0 2", b.pulls, b.withheld, b.inflight, next.calls)
	}
	r.maxPulls = 3
	_, t2, _ := r.reserve(context.Background(), "reg")
	r.release(t2) // never sent: given back
	if b := r.hosts["reg"]; b.pulls != 2 {
		t.Errorf("pulls %d after a ticket given back, want 2", b.pulls)
	}
}

func TestWindowText(t *testing.T) {
	for w, want := range map[time.Duration]string{6 * time.Hour: " per 6h", time.Hour + 30*time.Minute: " per 1h30m", 90 * time.Second: " per 1m30s", time.Minute: " per 1m", 0: ""} {
		if got := windowText(w); got != want {
			t.Errorf("windowText(%s) = %q, want %q", w, got, want)
		}
	}
}
