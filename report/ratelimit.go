package report

import (
	"fmt"
	"github.com/regcheck/regcheck/types"
	"time"
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

// hostGauge is one gauge with a series per registry host.
type hostGauge struct {
	name, help string
	byHost     map[string]float64 // host (not yet a label value) → value
}

// rateLimitGauges are the pull budgets the registries said, and the
// manifest GETs withheld, per host; none for a scan that met no budget.
func rateLimitGauges(rls []types.RateLimit) []hostGauge {
	if len(rls) == 0 {
		return nil
	}
	limit := hostGauge{"regcheck_registry_rate_limit", "Pulls (manifest GETs) the registry's rate limit allows per window, as it last said (RateLimit-Limit).", map[string]float64{}}
	remaining := hostGauge{"regcheck_registry_rate_limit_remaining", "Pulls the registry last said are left in its window (RateLimit-Remaining).", map[string]float64{}}
	window := hostGauge{"regcheck_registry_rate_limit_window_seconds", "The window of the registry's rate limit, in seconds.", map[string]float64{}}
	withheld := hostGauge{"regcheck_registry_pulls_withheld", "Manifest GETs the scan did not send, to leave the registry's last pulls in reserve or to stay within the cap on pulls.", map[string]float64{}}
	for _, rl := range rls {
		host := rl.Host
		withheld.byHost[host] = float64(rl.Withheld)
		if !rl.Reported {
			continue
		}
		remaining.byHost[host] = float64(rl.Remaining)
		if rl.Limit > 0 {
			limit.byHost[host] = float64(rl.Limit)
		}
		if rl.WindowSeconds > 0 {
			window.byHost[host] = float64(rl.WindowSeconds)
		}
	}
	return []hostGauge{limit, remaining, window, withheld}
}
