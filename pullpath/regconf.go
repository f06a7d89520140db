package pullpath

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/distribution/reference"
)

// The pull-from-mirror values (sysregistriesv2 MirrorAll and friends).
const (
	mirrorAll        = "all"
	mirrorDigestOnly = "digest-only"
	mirrorTagOnly    = "tag-only"
)

// regEndpoint is sysregistriesv2.Endpoint.
type regEndpoint struct {
	Location       string `toml:"location"`
	Insecure       bool   `toml:"insecure"`
	PullFromMirror string `toml:"pull-from-mirror"`
	line           int
}

// regRegistry is sysregistriesv2.Registry.
type regRegistry struct {
	Prefix string `toml:"prefix"`
	regEndpoint
	Mirrors            []regEndpoint `toml:"mirror"`
	Blocked            bool          `toml:"blocked"`
	MirrorByDigestOnly bool          `toml:"mirror-by-digest-only"`
	capped             capped        // mirrors past MaxMirrors
	file               string        // the file it was read from (a drop-in's own)
}

// regFile holds every key containers/image decodes with a type, so that a
// wrongly typed value fails here as it fails there; other keys are ignored.
type regFile struct {
	Registries                     []regRegistry     `toml:"registry"`
	UnqualifiedSearchRegistries    []string          `toml:"unqualified-search-registries"`
	ShortNameMode                  string            `toml:"short-name-mode"`
	CredentialHelpers              []string          `toml:"credential-helpers"`
	AdditionalLayerStoreAuthHelper string            `toml:"additional-layer-store-auth-helper"`
	Aliases                        map[string]string `toml:"aliases"`
	V1                             map[string]any    `toml:"registries"`
}

// regConfig is a registries.conf after postProcessRegistries: one registry
// per prefix, sorted by prefix.
type regConfig struct {
	path       string
	registries []regRegistry
}

func loadRegistriesConf(path string, data []byte) (*Config, error) {
	var f regFile
	if _, err := toml.Decode(string(data), &f); err != nil {
		var pe toml.ParseError
		line := 0
		if errors.As(err, &pe) {
			line = pe.Position.Line
		}
		return nil, &ParseError{Path: path, Line: line, Err: err}
	}
	if len(f.V1) > 0 {
		return nil, &ParseError{Path: path, Line: lineOfPrefix(data, "[registries"), Err: errors.New("registries.conf v1 ([registries.search] and friends) is not supported; only v2")}
	}
	setRegistryLines(data, f.Registries)
	regs, err := postProcess(f, data)
	if err != nil {
		return nil, &ParseError{Path: path, Line: err.line, Err: err.err}
	}
	for i := range regs {
		regs[i].file = path
	}
	return &Config{format: FormatRegistriesConf, path: path, regs: &regConfig{path: path, registries: regs}}, nil
}

// setRegistryLines finds each [[registry]] and [[registry.mirror]] header,
// in order; registries given as inline tables keep line 0.
func setRegistryLines(data []byte, regs []regRegistry) {
	r, m, n := -1, 0, 0
	for raw := range bytes.Lines(data) {
		n++
		line := strings.ReplaceAll(strings.TrimSpace(string(raw)), " ", "")
		switch {
		case strings.HasPrefix(line, "[[registry]]"):
			r, m = r+1, 0
			if r < len(regs) {
				regs[r].line = n
			}
		case strings.HasPrefix(line, "[[registry.mirror]]"):
			if r >= 0 && r < len(regs) && m < len(regs[r].Mirrors) {
				regs[r].Mirrors[m].line = n
			}
			m++
		}
	}
}

func lineOfPrefix(data []byte, prefix string) int {
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return i + 1
		}
	}
	return 0
}

type lineErr struct {
	line int
	err  error
}

var anchoredDomain = regexp.MustCompile("^" + reference.DomainRegexp.String() + "$")

// postProcess is postProcessRegistries and loadConfigFile's checks
// (pkg/sysregistriesv2/system_registries_v2.go): locations without a
// scheme, prefix defaulting to location, mirror settings valid, no
// conflicting insecure/blocked for one location; then the first entry of
// each prefix kept and all sorted by prefix.
func postProcess(f regFile, data []byte) ([]regRegistry, *lineErr) {
	byLoc := map[string][]regRegistry{}
	for i := range f.Registries {
		reg := &f.Registries[i]
		if line, err := checkRegistry(reg); err != nil {
			return nil, &lineErr{line, err}
		}
		key := reg.Location
		if key == "" {
			key = reg.Prefix
		}
		byLoc[key] = append(byLoc[key], *reg)
	}
	for _, reg := range f.Registries {
		key := reg.Location
		if key == "" {
			key = reg.Prefix
		}
		for _, other := range byLoc[key] {
			if reg.Insecure != other.Insecure {
				return nil, &lineErr{reg.line, fmt.Errorf("registry '%s' is defined multiple times with conflicting 'insecure' setting", reg.Location)}
			}
			if reg.Blocked != other.Blocked {
				return nil, &lineErr{reg.line, fmt.Errorf("registry '%s' is defined multiple times with conflicting 'blocked' setting", reg.Location)}
			}
		}
	}
	for _, s := range f.UnqualifiedSearchRegistries {
		loc, err := parseLocation(s)
		if err == nil && !anchoredDomain.MatchString(loc) {
			err = fmt.Errorf("invalid unqualified-search-registries entry %#v", loc)
		}
		if err != nil {
			return nil, &lineErr{lineOfPrefix(data, "unqualified-search-registries"), err}
		}
	}
	if m := f.ShortNameMode; m != "" && m != "enforcing" && m != "permissive" && m != "disabled" {
		return nil, &lineErr{lineOfPrefix(data, "short-name-mode"), fmt.Errorf("invalid short name mode: %q", m)}
	}
	return capMirrors(uniqueSorted(f.Registries)), nil
}

// capMirrors keeps the first MaxMirrors mirrors of each registry, once
// all are checked as containers/image checks them.
func capMirrors(regs []regRegistry) []regRegistry {
	for i := range regs {
		if m := regs[i].Mirrors; len(m) > MaxMirrors {
			regs[i].capped = capped{dropped: len(m) - MaxMirrors, line: m[MaxMirrors].line}
			regs[i].Mirrors = m[:MaxMirrors]
		}
	}
	return regs
}

func uniqueSorted(regs []regRegistry) []regRegistry {
	seen := map[string]bool{}
	var out []regRegistry
	for _, r := range regs {
		if !seen[r.Prefix] {
			seen[r.Prefix] = true
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out
}

// checkRegistry validates one [[registry]] and returns the line of the
// table at fault.
// checkRewrite refuses a location no reference can be rewritten to (a
// userinfo, a port that is not a number): containers/image loads such a
// file and then fails every pull the registry matches, in
// rewriteReference; regcheck says so at its line instead.
func checkRewrite(what, loc string) error {
	if loc == "" {
		return nil
	}
	if _, err := reference.ParseNamed(loc + "/library/image"); err != nil {
		return fmt.Errorf("%s %q: no reference can be rewritten to it (%v): every pull it matches fails", what, loc, err)
	}
	return nil
}

func checkRegistry(reg *regRegistry) (int, error) {
	var err error
	if reg.Location, err = parseLocation(reg.Location); err != nil {
		return reg.line, err
	}
	if err := checkRewrite("location", reg.Location); err != nil {
		return reg.line, err
	}
	if reg.Prefix == "" {
		if reg.Location == "" {
			return reg.line, errors.New("invalid condition: both location and prefix are unset")
		}
		reg.Prefix = reg.Location
	} else {
		if reg.Prefix, err = parseLocation(reg.Prefix); err != nil {
			return reg.line, err
		}
		if !strings.HasPrefix(reg.Prefix, "*.") && reg.Location == "" {
			return reg.line, errors.New("invalid condition: location is unset and prefix is not in the format: *.example.com")
		}
	}
	if strings.HasPrefix(reg.Prefix, "*.") && strings.ContainsAny(reg.Prefix, "/@:") {
		return reg.line, fmt.Errorf("wildcarded prefix should be in the format: *.example.com. Current prefix %q is incorrectly formatted", reg.Prefix)
	}
	if reg.PullFromMirror != "" {
		return reg.line, fmt.Errorf("pull-from-mirror must not be set for a non-mirror registry %q", reg.Prefix)
	}
	for j := range reg.Mirrors {
		if err := checkMirror(reg, &reg.Mirrors[j]); err != nil {
			return reg.Mirrors[j].line, err
		}
	}
	return 0, nil
}

func checkMirror(reg *regRegistry, mir *regEndpoint) error {
	var err error
	if mir.Location, err = parseLocation(mir.Location); err != nil {
		return err
	}
	if mir.Location == "" {
		return errors.New("invalid condition: mirror location is unset")
	}
	if err := checkRewrite("mirror location", mir.Location); err != nil {
		return err
	}
	if reg.MirrorByDigestOnly && mir.PullFromMirror != "" {
		return fmt.Errorf("cannot set mirror usage mirror-by-digest-only for the registry (%q) and pull-from-mirror for per-mirror (%q) at the same time", reg.Prefix, mir.Location)
	}
	switch mir.PullFromMirror {
	case "", mirrorAll, mirrorDigestOnly, mirrorTagOnly:
		return nil
	}
	return fmt.Errorf("unsupported pull-from-mirror value %q for mirror %q", mir.PullFromMirror, mir.Location)
}

// parseLocation trims trailing slashes and rejects a URI scheme.
func parseLocation(in string) (string, error) {
	trimmed := strings.TrimRight(in, "/")
	if strings.HasPrefix(trimmed, "http://") || strings.HasPrefix(trimmed, "https://") {
		return "", fmt.Errorf("invalid location '%s': URI schemes are not supported", in)
	}
	return trimmed, nil
}

// ParseRegistriesConf reads a registries.conf (v2) held in memory, such as
// one rendered from a cluster's objects (package mirrorsets), with the
// rules Load applies to a registries.conf file; name stands for the path
// in Source and in errors.
func ParseRegistriesConf(name string, data []byte) (*Config, error) {
	c, err := loadRegistriesConf(name, data)
	return c, redacted(err)
}
