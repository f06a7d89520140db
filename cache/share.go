package cache

import (
	"fmt"
	"hash/fnv"
	"math/big"
	"strings"
)

// Share is the part of the cached manifests a run reads again from the
// reader below (see WithReverify): Num of every Den, each manifest in its
// turn. The zero Share reads none again; Num == Den reads every one.
type Share struct {
	Num, Den int
}

// DefaultReverify is the Share a Reader reads again unless told otherwise:
// one in 30, so that a manifest every run uses is read again at least once
// in any 31 runs, and a warm run GETs about a thirtieth of the manifests
// it takes from the folder.
var DefaultReverify = Share{Num: 1, Den: 30}

// maxDen bounds a Share's denominator: finer shares say nothing a run
// could measure, and keep the turn's arithmetic far from overflow.
const maxDen = 1 << 20

// ParseShare reads a Share written as a fraction ("1/30"), a decimal
// ("0.033"), or "0" (none) or "1" (every one).
func ParseShare(s string) (Share, error) {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	if !ok || r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		return Share{}, fmt.Errorf("%q: want a share from 0 to 1, such as 1/30 or 0.033", s)
	}
	if !r.Denom().IsInt64() || r.Denom().Int64() > maxDen {
		return Share{}, fmt.Errorf("%q: want a share no finer than 1/%d", s, maxDen)
	}
	if r.Sign() == 0 {
		return Share{}, nil
	}
	return Share{Num: int(r.Num().Int64()), Den: int(r.Denom().Int64())}, nil
}

// String writes the share as ParseShare reads it: "0", "1", or "Num/Den".
func (s Share) String() string {
	switch {
	case s.Num == 0:
		return "0"
	case s.Num == s.Den:
		return "1"
	}
	return fmt.Sprintf("%d/%d", s.Num, s.Den)
}

// MarshalText is String, for flags and configuration files.
func (s Share) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText is ParseShare.
func (s *Share) UnmarshalText(b []byte) error {
	v, err := ParseShare(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Runs is the most runs apart a manifest every run uses is read again:
// the turn's cycle, ceil(Den/Num) runs, plus the one run the turn drifts
// by between cycles (see due). 0 for the zero Share.
func (s Share) Runs() int {
	if s.Num == 0 {
		return 0
	}
	if s.Num == s.Den {
		return 1
	}
	return (s.Den+s.Num-1)/s.Num + 1
}

// Check says what is wrong with a Share built by hand, or nil.
func (s Share) Check() error {
	if s.Num == 0 && s.Den == 0 {
		return nil
	}
	if s.Num < 0 || s.Den <= 0 || s.Num > s.Den || s.Den > maxDen {
		return fmt.Errorf("want a share Num/Den with 0 <= Num <= Den <= %d, got %d/%d", maxDen, s.Num, s.Den)
	}
	return nil
}

// due reports whether the run in slot reads the manifest with the digest
// again: whether slot's arc holds the digest's place (see dueAt).
func (s Share) due(dg string, slot uint64) bool {
	switch {
	case s.Num <= 0 || s.Den <= 0:
		return false
	case s.Num >= s.Den:
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(dg))
	return s.dueAt(h.Sum64()%uint64(s.Den), slot)
}

// dueAt reports whether the run in slot reads again the manifest at place,
// of 0 to Den-1. Run slot takes the Num places from slot*Num on, so that
// consecutive runs take consecutive arcs and every place is taken once in
// each cycle of ceil(Den/Num) runs. Each cycle the arcs drift back by one
// place: a manifest used only on some runs (every other one, as two
// clusters scanned in turn into one folder would) is not left out for
// ever by a turn that always falls on the runs that skip it.
func (s Share) dueAt(place, slot uint64) bool {
	den := uint64(s.Den)
	cycle := slot / uint64(s.Runs()-1)
	at := (place + (slot%den)*uint64(s.Num) + den - cycle%den) % den
	return at < uint64(s.Num)
}
