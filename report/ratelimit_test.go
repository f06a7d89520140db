package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/types"
)

// rateLimited is the demo's result on a scan that met Docker Hub's limit
// and a cap on another registry.
func rateLimited() *types.Result {
	r := result()
	r.RateLimits = []types.RateLimit{
		{Host: "index.docker.io", Reported: true, Limit: 100, Remaining: 10, WindowSeconds: 21600, Reserve: 10, Pulls: 4, Withheld: 2},
		{Host: "registry.example", MaxPulls: 5, Pulls: 5, Withheld: 1},
	}
	return r
}

// Every format that has a summary says each host's budget and what the
// scan withheld.
func TestRateLimitsRendered(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		var buf bytes.Buffer
		if err := Table(&buf, rateLimited()); err != nil {
			t.Fatal(err)
		}
		want := "rate limit  index.docker.io: 10 of 100 pulls left per 6h (10 kept in reserve); 4 manifest GETs sent, 2 withheld\n" +
			"rate limit  registry.example: no rate limit said; 5 manifest GETs sent (at most 5), 1 withheld\n"
		if !strings.HasSuffix(buf.String(), want) {
			t.Errorf("table ends\n%s\nwant it to end\n%s", buf.String(), want)
		}
	})
	t.Run("json", func(t *testing.T) {
		var buf bytes.Buffer
		if err := JSON(&buf, rateLimited()); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Summary struct {
				RateLimits []map[string]any `json:"rateLimits"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{
			{"host": "index.docker.io", "reported": true, "limit": 100.0, "remaining": 10.0, "windowSeconds": 21600.0, "reserve": 10.0, "maxPulls": 0.0, "pulls": 4.0, "withheld": 2.0},
			{"host": "registry.example", "reported": false, "limit": 0.0, "remaining": 0.0, "windowSeconds": 0.0, "reserve": 0.0, "maxPulls": 5.0, "pulls": 5.0, "withheld": 1.0},
		}
		if !reflect.DeepEqual(doc.Summary.RateLimits, want) {
			t.Errorf("summary.rateLimits %v\nwant %v", doc.Summary.RateLimits, want)
		}
	})
	t.Run("prom", func(t *testing.T) {
		var buf bytes.Buffer
		if err := metrics.WriteScan(&buf, rateLimited()); err != nil {
			t.Fatal(err)
		}
		series, err := parseExposition(buf.String())
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		for s, want := range map[string]float64{
			`regcheck_registry_rate_limit{host="index.docker.io"}`:                100,
			`regcheck_registry_rate_limit_remaining{host="index.docker.io"}`:      10,
			`regcheck_registry_rate_limit_window_seconds{host="index.docker.io"}`: 21600,
			`regcheck_registry_pulls_withheld{host="index.docker.io"}`:            2,
			`regcheck_registry_pulls_withheld{host="registry.example"}`:           1,
		} {
			if got, ok := series[s]; !ok || got != want {
				t.Errorf("%s = %v (present %v), want %v", s, got, ok, want)
			}
		}
		for s := range series {
			if strings.HasPrefix(s, "regcheck_registry_rate_limit") && strings.Contains(s, "registry.example") {
				t.Errorf("%s: the host said no limit", s)
			}
		}
	})
}

func TestWindow(t *testing.T) {
	for s, want := range map[int]string{21600: "6h", 3600: "1h", 900: "15m", 90: "90s"} {
		if got := window(s); got != want {
			t.Errorf("window(%d) = %s, want %s", s, got, want)
		}
	}
}
