package scan

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/regcheck/regcheck/types"
)

// pullReserve is how many of a registry's pulls a scan leaves untouched, for
// the nodes that pull the images it checks: a tenth of the limit, rounded
// up, and at least one (10 of Docker Hub's 100 anonymous pulls per 6 hours).
func pullReserve(limit int) int { return max(1, (limit+9)/10) }

// rateLimits is the transport layer that reads each registry's pull budget
// from its answers and keeps manifest GETs (pulls, on Docker Hub; a HEAD
// is free) within it, per host. A registry that sends
// RateLimit-Limit/RateLimit-Remaining ("100;w=21600") gets no GET that
// would leave fewer than pullReserve of its pulls; WithMaxPulls caps the GETs
// sent to each host over the Scanner's life whatever it says. A GET not
// sent fails with ErrPullBudget.
//
// It sits under the retry layer, so that every attempt on the wire is
// counted; the client reserves a pull before it sends a GET (reserve), so
// that a GET refused is refused before any attempt, and only a retry of a
// GET already sent can be refused here.
type rateLimits struct {
	next     http.RoundTripper
	maxPulls int // 0: no cap

	mu    sync.Mutex
	hosts map[string]*hostBudget
}

var _ http.RoundTripper = (*rateLimits)(nil)

// hostBudget is what one host said of its limit and what was spent there.
type hostBudget struct {
	said      bool // the host sent RateLimit-Remaining
	limit     int  // 0: not said
	remaining int
	window    time.Duration
	// at is when remaining was last taken from an answer: an answer to a
	// request sent later replaces it, an older one can only lower it (the
	// order answers arrive in is not the order the registry counted them).
	at time.Time

	inflight int // GETs reserved and not yet answered
	pulls    int // GETs sent or reserved
	withheld int // GETs refused
}

// pullTicket is a GET reserved by the client: its first attempt on the
// wire is already counted.
type pullTicket struct {
	host    string
	sent    bool
	refused bool // an attempt after the first was withheld
}

type ticketKey struct{}

func (r *rateLimits) host(h string) *hostBudget {
	if r.hosts == nil {
		r.hosts = map[string]*hostBudget{}
	}
	b, ok := r.hosts[h]
	if !ok {
		b = &hostBudget{}
		r.hosts[h] = b
	}
	return b
}

// refuse says why one more GET may not go to b's host, or "".
func (r *rateLimits) refuse(b *hostBudget) string {
	if r.maxPulls > 0 && b.pulls >= r.maxPulls {
		return fmt.Sprintf("the cap of %d manifest GETs on this registry is reached", r.maxPulls)
	}
	if !b.said {
		return ""
	}
	reserve := pullReserve(b.limit)
	if left := b.remaining - b.inflight - 1; left < reserve {
		said := fmt.Sprintf("the registry says %d pulls are left", b.remaining)
		if b.limit > 0 {
			said = fmt.Sprintf("the registry says %d of its %d pulls%s are left", b.remaining, b.limit, windowText(b.window))
		}
		if b.inflight > 0 {
			said += fmt.Sprintf(", %d being spent", b.inflight)
		}
		return fmt.Sprintf("%s: one more manifest GET would cut into the %d kept in reserve", said, reserve)
	}
	return ""
}

// reserve books one GET to host and puts its ticket on ctx, or says why
// the GET may not be sent. The ticket goes back to release.
func (r *rateLimits) reserve(ctx context.Context, host string) (context.Context, *pullTicket, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.host(host)
	if why := r.refuse(b); why != "" {
		b.withheld++
		return ctx, nil, why
	}
	b.inflight++
	b.pulls++
	t := &pullTicket{host: host}
	return context.WithValue(ctx, ticketKey{}, t), t, ""
}

// release ends a reserved GET; a ticket never sent is given back.
func (r *rateLimits) release(t *pullTicket) {
	if t == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.host(t.host)
	b.inflight--
	if !t.sent {
		b.pulls--
	}
}

// RoundTrip admits a manifest GET (its reserved first attempt, or another
// within the budget), sends the request, and reads the budget off the answer.
func (r *rateLimits) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Host
	if requestKind(req) == "manifest-get" {
		if why := r.admit(req); why != "" {
			return nil, &RegistryError{Method: req.Method, URL: redactURL(req.URL.String()), Detail: why, Err: types.ErrPullBudget}
		}
	}
	sent := time.Now()
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.observe(host, sent, resp.Header)
	}
	return resp, err
}

// admit lets a GET's reserved first attempt go, and counts any other
// attempt (a retry, a resend after a new token) as a pull of its own, or
// says why it may not be sent. A GET is withheld once, however many of its
// attempts are.
func (r *rateLimits) admit(req *http.Request) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, _ := req.Context().Value(ticketKey{}).(*pullTicket)
	if t != nil && t.host != req.URL.Host {
		t = nil
	}
	if t != nil && !t.sent {
		t.sent = true
		return ""
	}
	b := r.host(req.URL.Host)
	if why := r.refuse(b); why != "" {
		if t == nil || !t.refused {
			b.withheld++
		}
		if t != nil {
			t.refused = true
		}
		return why
	}
	b.pulls++
	return ""
}

// observe takes the budget from an answer's RateLimit headers, if any.
func (r *rateLimits) observe(host string, sent time.Time, h http.Header) {
	remaining, rw, ok := parseRateLimit(h.Get("RateLimit-Remaining"))
	if !ok {
		return
	}
	limit, lw, _ := parseRateLimit(h.Get("RateLimit-Limit"))
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.host(host)
	if !b.said || sent.After(b.at) {
		b.remaining = remaining
	} else {
		b.remaining = min(b.remaining, remaining)
	}
	b.said, b.at = true, time.Now()
	if limit > 0 {
		b.limit = limit
	}
	if w := max(lw, rw); w > 0 {
		b.window = w
	}
}

// parseRateLimit reads a RateLimit-Limit or RateLimit-Remaining value:
// a count, then optional policies ("100;w=21600", "100, 100;w=21600", as
// the IETF draft and Docker Hub write them). The window is the first w=
// given, in seconds.
func parseRateLimit(v string) (n int, window time.Duration, ok bool) {
	if v = strings.TrimSpace(v); v == "" {
		return 0, 0, false
	}
	for i, item := range strings.Split(v, ",") {
		params := strings.Split(item, ";")
		if i == 0 {
			c, err := strconv.Atoi(strings.TrimSpace(params[0]))
			if err != nil || c < 0 {
				return 0, 0, false
			}
			n, ok = c, true
		}
		for _, p := range params[1:] {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			if s, err := strconv.Atoi(strings.Trim(val, `"`)); err == nil && s > 0 && strings.EqualFold(k, "w") && window == 0 {
				window = time.Duration(s) * time.Second
			}
		}
	}
	return n, window, ok
}

// report lists the hosts that said their limit or had a GET withheld, by host.
func (r *rateLimits) report() []types.RateLimit {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []types.RateLimit
	for h, b := range r.hosts {
		if !b.said && b.withheld == 0 {
			continue
		}
		rl := types.RateLimit{Host: h, MaxPulls: r.maxPulls, Pulls: b.pulls, Withheld: b.withheld}
		if b.said {
			rl.Reported, rl.Limit, rl.Remaining = true, b.limit, b.remaining
			rl.WindowSeconds, rl.Reserve = int(b.window/time.Second), pullReserve(b.limit)
		}
		out = append(out, rl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// windowText is " per 6h", or "" for no window.
func windowText(w time.Duration) string {
	if w <= 0 {
		return ""
	}
	s := w.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return " per " + s
}
