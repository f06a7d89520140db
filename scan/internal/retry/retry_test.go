package retry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header string
		want   time.Duration
		ok     bool
	}{
		{"absent", "", 0, false},
		{"seconds", "7", 7 * time.Second, true},
		{"zero", "0", 0, true},
		{"negative", "-3", 0, false},
		{"garbage", "soon", 0, false},
		{"HTTP date ahead", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"HTTP date past", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"RFC 850 date", now.Add(time.Minute).Format("Monday, 02-Jan-06 15:04:05 GMT"), time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := retryAfter(tc.header, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter(%q) = %s, %t; want %s, %t", tc.header, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	base, max := 10*time.Millisecond, 50*time.Millisecond
	for i := 0; i < 70; i++ { // past the shift cap and any overflow
		limit := min(base<<min(i, 20), max)
		if i >= 40 {
			limit = max
		}
		for range 200 {
			if d := backoff(base, max, i); d <= 0 || d > limit {
				t.Fatalf("backoff(%s, %s, %d) = %s, want in (0, %s]", base, max, i, d, limit)
			}
		}
	}
	// A huge base must not overflow into a negative or zero wait.
	if d := backoff(time.Duration(1<<62), time.Hour, 5); d <= 0 || d > time.Hour {
		t.Errorf("backoff with an overflowing base = %s", d)
	}
}

// script answers with the statuses given in turn, then 200; an entry of 0
// is a network error.
type script struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header
	calls    int
	bodies   []string
}

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		s.bodies = append(s.bodies, string(b))
	}
	status := http.StatusOK
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	if status == 0 {
		return nil, errors.New("connection reset")
	}
	h := http.Header{}
	if status != http.StatusOK {
		h = s.header.Clone()
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("body")), Request: req}, nil
}

// sleeps records the waits asked for instead of waiting.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func TestTransport(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		header   http.Header
		attempts int
		body     func() (io.Reader, bool) // the request body, and whether it can be replayed
		// want
		status int
		err    bool
		calls  int
		waits  []time.Duration // exact waits; nil to only check their number
		nwaits int
	}{
		{name: "ok first time", attempts: 3, status: 200, calls: 1},
		{name: "503 then ok", statuses: []int{503}, attempts: 3, status: 200, calls: 2, nwaits: 1},
		{name: "503 always", statuses: []int{503, 503, 503, 503}, attempts: 3, status: 503, calls: 3, nwaits: 2},
		{name: "404 is final", statuses: []int{404}, attempts: 3, status: 404, calls: 1},
		{name: "401 is final", statuses: []int{401}, attempts: 3, status: 401, calls: 1},
		{name: "network error then ok", statuses: []int{0}, attempts: 3, status: 200, calls: 2, nwaits: 1},
		{name: "network error always", statuses: []int{0, 0, 0}, attempts: 3, err: true, calls: 3, nwaits: 2},
		{
			name: "429 Retry-After seconds", statuses: []int{429}, header: http.Header{"Retry-After": {"2"}},
			attempts: 3, status: 200, calls: 2, waits: []time.Duration{2 * time.Second},
		},
		{
			name: "Retry-After capped at Max", statuses: []int{503}, header: http.Header{"Retry-After": {"3600"}},
			attempts: 3, status: 200, calls: 2, waits: []time.Duration{time.Minute},
		},
		{
			name: "replayable body retried", statuses: []int{503}, attempts: 3, status: 200, calls: 2, nwaits: 1,
			body: func() (io.Reader, bool) { return strings.NewReader("payload"), true },
		},
		{
			name: "non-replayable body tried once", statuses: []int{503}, attempts: 3, status: 503, calls: 1,
			body: func() (io.Reader, bool) { return io.MultiReader(strings.NewReader("payload")), false },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := &script{statuses: tc.statuses, header: tc.header}
			sl := &sleeps{}
			tr := &Transport{Next: next, Attempts: tc.attempts, Base: time.Millisecond, Max: time.Minute, Sleep: sl.sleep}
			var body io.Reader
			if tc.body != nil {
				body, _ = tc.body()
			}
			req, err := http.NewRequest(http.MethodGet, "http://registry.test/v2/", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tr.RoundTrip(req)
			if tc.err != (err != nil) {
				t.Fatalf("err %v, want error %t", err, tc.err)
			}
			if err == nil {
				if resp.StatusCode != tc.status {
					t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
				}
				if b, _ := io.ReadAll(resp.Body); string(b) != "body" {
					t.Errorf("final body %q, want it unread", b)
				}
			}
			if next.calls != tc.calls {
				t.Errorf("%d tries, want %d", next.calls, tc.calls)
			}
			if tc.waits != nil {
				if len(sl.waits) != len(tc.waits) || sl.waits[0] != tc.waits[0] {
					t.Errorf("waits %v, want %v", sl.waits, tc.waits)
				}
			} else if len(sl.waits) != tc.nwaits {
				t.Errorf("waits %v, want %d of them", sl.waits, tc.nwaits)
			}
			if tc.body != nil {
				for i, b := range next.bodies {
					if b != "payload" {
						t.Errorf("try %d sent body %q", i+1, b)
					}
				}
			}
		})
	}
}

// TestTransportCanceled stops waiting when the request's context ends.
func TestTransportCanceled(t *testing.T) {
	next := &script{statuses: []int{503, 503, 503}}
	tr := &Transport{Next: next, Attempts: 4, Base: time.Hour, Max: time.Hour} // the real sleep
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://registry.test/v2/", nil)
	done := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(req)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RoundTrip still waiting after its context was canceled")
	}
	if next.calls != 1 {
		t.Errorf("%d tries, want 1", next.calls)
	}
}

// TestTransportDefaults retries 4 times when nothing is set.
func TestTransportDefaults(t *testing.T) {
	next := &script{statuses: []int{500, 502, 504, 429, 503}}
	sl := &sleeps{}
	tr := &Transport{Next: next, Sleep: sl.sleep}
	req, _ := http.NewRequest(http.MethodHead, "http://registry.test/v2/x/blobs/sha256:0", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || next.calls != 4 {
		t.Errorf("status %d after %d tries, want 429 after 4", resp.StatusCode, next.calls)
	}
	for _, w := range sl.waits {
		if w <= 0 || w > 10*time.Second {
			t.Errorf("wait %s out of (0, 10s]", w)
		}
	}
}

// TestTransportDeadline returns the registry's answer rather than start a
// wait the request's deadline would cut short.
func TestTransportDeadline(t *testing.T) {
	next := &script{statuses: []int{429, 429}, header: http.Header{"Retry-After": {"30"}}}
	sl := &sleeps{}
	tr := &Transport{Next: next, Attempts: 3, Base: time.Millisecond, Max: time.Minute, Sleep: sl.sleep}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "http://registry.test/v2/x/manifests/v1", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("err %v, want the 429", err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || next.calls != 1 || len(sl.waits) != 0 {
		t.Errorf("status %d after %d tries and waits %v; want 429 after 1 try, no wait", resp.StatusCode, next.calls, sl.waits)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "body" {
		t.Errorf("body %q, want it unread", b)
	}
}
