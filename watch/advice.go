package watch

// What the watcher says to a person about an unplanned upgrade: the
// finding's message, the command that pins the workload back, and the
// owners a summary names. The orchestration that raises them is walk.go.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// upgradeOwners names the owner containers of at most n upgrades, sorted,
// and how many more there are.
func upgradeOwners(ups map[slot]Upgrade, n int) string {
	names := make([]string, 0, len(ups))
	for k := range ups {
		names = append(names, k.ns+"/"+k.kind+"/"+k.name+"["+k.container+k.volume+"]")
	}
	slices.Sort(names)
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// upgradeMessage says what changed, whether the previous digest is still
// whole, and whether a crash loop began with the change.
func upgradeMessage(u Upgrade, whole string) string {
	who := fmt.Sprintf("%s %s/%s (container %s)", u.OwnerKind, u.Namespace, u.OwnerName, u.Container+u.Volume)
	msg := fmt.Sprintf("%s now runs %s, not %s, since %s, while its image string %s did not change: a tag moved and a restart (restart count %d) pulled other bits",
		who, types.ShortDigest(u.To), u.From, u.Time.Format(time.RFC3339), u.Image, u.RestartCount)
	if u.LastTerminationReason != "" {
		msg += fmt.Sprintf("; the container before it ended with %s", u.LastTerminationReason)
		if u.LastExitCode != nil {
			msg += fmt.Sprintf(" (exit code %d)", *u.LastExitCode)
		}
	}
	switch whole {
	case "whole":
		msg += "; the previous digest is still whole in the registry"
	case "not whole":
		msg += "; the previous digest is no longer whole in the registry: pinning back to it will not pull"
	case "unknown":
		msg += "; whether the previous digest is still whole in the registry could not be checked"
	}
	if u.CrashLoop {
		msg += fmt.Sprintf("; the container has crash-looped since (restart count %d): the crash loop began with this image change", u.Restarts)
	}
	return msg
}

// upgradeAdvice is the command that pins the workload back: its
// manifests to the digest it ran the millisecond before the change (pin
// --records-at), then applied.
func upgradeAdvice(u Upgrade, hint string) string {
	if hint == "" {
		hint = "HISTORY"
	}
	ref := imageref.RunningOf(u.Image, u.From)
	cmd := fmt.Sprintf("regcheck pin --from-records %s", hint)
	if u.Cluster != "" {
		cmd += " --records-cluster " + shellWord(u.Cluster)
	}
	return fmt.Sprintf("pin %s %s/%s back to %s, the digest it ran before, and apply its manifests: %s --records-at %s --write PATH (PATH: its manifests' file or folder); to keep the new bits instead, the same without --records-at pins to %s",
		lower(u.OwnerKind), u.Namespace, u.OwnerName, ref, cmd, pinBackTime(u.Time), types.ShortDigest(u.To))
}

// pinBackTime is the time pin --records-at is given to pin back a change
// seen at t: the millisecond before it, in UTC, as RFC 3339 (a change
// seen less than a second after the one before it is still told apart).
func pinBackTime(t time.Time) string {
	return t.UTC().Add(-time.Millisecond).Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
}

// shellWord is s as one shell word: bare when it holds only characters
// no shell treats specially, else single-quoted.
func shellWord(s string) string {
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_./:@=+,", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// lower is kind in lower case, as kubectl names a kind in a command.
func lower(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
