package cleanup

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// snokCutOff is snok/container-retention-policy's cut-off: a version is
// old enough when its timestamp is before the run's time less the
// cut-off (v3: a humantime duration, "1w"; v1/v2: dateparser text, "2
// days ago UTC", or a fixed time).
type snokCutOff struct {
	text string
	// fixed is a fixed cut-off time (v1/v2 given a date).
	fixed        time.Time
	months, days int
	dur          time.Duration
}

// before is the cut-off time for a run at at.
func (c snokCutOff) before(at time.Time) time.Time {
	if !c.fixed.IsZero() {
		return c.fixed
	}
	return at.AddDate(0, -c.months, -c.days).Add(-c.dur)
}

// eligible is when a version stamped ts passes a relative cut-off; zero
// for a fixed one.
func (c snokCutOff) eligible(ts time.Time) time.Time {
	if !c.fixed.IsZero() {
		return time.Time{}
	}
	return ts.AddDate(0, c.months, c.days).Add(c.dur)
}

// humantimeUnits are the units humantime (snok v3's duration parser)
// reads, in seconds; months and years are its fixed lengths.
var humantimeUnits = map[string]time.Duration{
	"nsec": time.Nanosecond, "ns": time.Nanosecond,
	"usec": time.Microsecond, "us": time.Microsecond,
	"msec": time.Millisecond, "ms": time.Millisecond,
	"seconds": time.Second, "second": time.Second, "sec": time.Second, "s": time.Second,
	"minutes": time.Minute, "minute": time.Minute, "min": time.Minute, "mins": time.Minute, "m": time.Minute,
	"hours": time.Hour, "hour": time.Hour, "hr": time.Hour, "hrs": time.Hour, "h": time.Hour,
	"days": 24 * time.Hour, "day": 24 * time.Hour, "d": 24 * time.Hour,
	"weeks": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "w": 7 * 24 * time.Hour,
	"months": 2_630_016 * time.Second, "month": 2_630_016 * time.Second, "M": 2_630_016 * time.Second,
	"years": 31_557_600 * time.Second, "year": 31_557_600 * time.Second, "y": 31_557_600 * time.Second,
}

var humantimePart = regexp.MustCompile(`^\s*(\d+)\s*([a-zA-Z]+)`)

// parseHumantime reads a v3 cut-off ("1w", "2d 12h", "30days").
func parseHumantime(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var total time.Duration
	for i := 0; rest != "" && i < 32; i++ {
		m := humantimePart.FindStringSubmatch(rest)
		if m == nil {
			return 0, fmt.Errorf("duration %q: cannot read %q", s, rest)
		}
		u, ok := humantimeUnits[m[2]]
		if !ok {
			return 0, fmt.Errorf("duration %q: unknown unit %q", s, m[2])
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %w", s, err)
		}
		total += time.Duration(n) * u
		rest = strings.TrimSpace(rest[len(m[0]):])
	}
	if rest != "" {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	return total, nil
}

// dateparserAgo is the relative form of a v1/v2 cut-off: "2 days ago
// UTC", "a week ago UTC"; the time zone is required.
var dateparserAgo = regexp.MustCompile(`(?i)^(\d+|an?)\s+(second|minute|hour|day|week|month|year)s?\s+ago(?:\s+(\S+))?$`)

// parseDateparser reads a v1/v2 cut-off: a relative time with a time zone,
// or an RFC 3339 time. ok is false for text the model does not read
// (dateparser reads more); err is set for text the action rejects.
func parseDateparser(s string) (c snokCutOff, ok bool, err error) {
	c.text = s
	if t, perr := time.Parse(time.RFC3339, s); perr == nil {
		c.fixed = t
		return c, true, nil
	}
	m := dateparserAgo.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return c, false, nil
	}
	if m[3] == "" {
		return c, true, fmt.Errorf("cut-off %q has no time zone (the action requires one)", s)
	}
	n := 1
	if m[1][0] >= '0' && m[1][0] <= '9' {
		n, _ = strconv.Atoi(m[1])
	}
	switch strings.ToLower(m[2]) {
	case "second":
		c.dur = time.Duration(n) * time.Second
	case "minute":
		c.dur = time.Duration(n) * time.Minute
	case "hour":
		c.dur = time.Duration(n) * time.Hour
	case "day":
		c.days = n
	case "week":
		c.days = 7 * n
	case "month":
		c.months = n
	case "year":
		c.months = 12 * n
	}
	return c, true, nil
}
