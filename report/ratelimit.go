package report

import (
	"fmt"
	"time"

	"github.com/regcheck/regcheck/types"
)

// rateLimitText says a host's pull budget and what the scan spent of it:
// "index.docker.io: 12 of 100 pulls left per 6h (10 kept in reserve); 4
// manifest GETs sent, 2 withheld".
func rateLimitText(rl types.RateLimit) string {
	s := rl.Host + ": "
	switch {
	case rl.Reported && rl.Limit > 0:
		s += fmt.Sprintf("%d of %d pulls left", rl.Remaining, rl.Limit)
	case rl.Reported:
		s += fmt.Sprintf("%d pulls left", rl.Remaining)
	default:
		s += "no rate limit said"
	}
	if rl.Reported && rl.WindowSeconds > 0 {
		s += " per " + window(rl.WindowSeconds)
	}
	if rl.Reported {
		s += fmt.Sprintf(" (%d kept in reserve)", rl.Reserve)
	}
	s += fmt.Sprintf("; %s sent", plural(rl.Pulls, "manifest GET"))
	if rl.MaxPulls > 0 {
		s += fmt.Sprintf(" (at most %d)", rl.MaxPulls)
	}
	return s + fmt.Sprintf(", %d withheld", rl.Withheld)
}

// window writes a rate limit's window in the largest whole unit: 6h, 15m, 90s.
func window(seconds int) string {
	d := time.Duration(seconds) * time.Second
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", seconds/3600)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", seconds/60)
	}
	return fmt.Sprintf("%ds", seconds)
}
