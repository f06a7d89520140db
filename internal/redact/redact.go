package redact

import (
	"regexp"
	"strings"
)

// Mask replaces whatever redaction removes.
const Mask = "redacted"

// secretField matches a known secret field and its value, as YAML, JSON
// (quoted or escaped), TOML, a header or a key=value pair writes it: k3s's
// auth, password and identity_token, the Docker config's (and a pull
// secret's) auth, password, identitytoken and registrytoken, and the
// Authorization and Proxy-Authorization headers (their scheme and
// credentials). Group 1 is the name and separator kept; group 2 the value
// masked.
var secretField = regexp.MustCompile(`(?i)((?:^|[^a-z0-9_-])(?:\\?")?(?:auth|password|passwd|identity_?token|registry_?token|(?:proxy-)?authorization)(?:\\?")?\s*[:=]\s*)` +
	`(\\"(?:[^"\\]|\\[^"])*\\"|"(?:[^"\\]|\\.)*"|'[^']*'|\[[^\]]*\]|(?:basic|bearer)\s+[^\s,;"'}\]]+|[^\s,;"'()}\]]+)`)

// yamlValue matches the value a YAML decoder quotes in a type error
// ("cannot unmarshal !!str `s3cr3t...` into T"): the decoder does not
// say which field, so the value is masked whatever it is.
var yamlValue = regexp.MustCompile("(!![A-Za-z0-9]+ )`[^`]*`")

// String is the redaction rule applied to every message built from a
// registry configuration, a credential provider's config or answer, a pull
// secret or an image reference, before it is formatted anywhere (report,
// log, error): userinfo is stripped from every URL and reference
// ("https://user:pass@host" and "user:pass@host/repo" keep only the host
// and what follows, after a Mask), the value of every known secret field
// is masked, so is the value a YAML type error quotes, and so is every
// occurrence of each of known (secrets the caller holds, such as a
// credential provider's env values; empty strings are ignored).
func String(s string, known ...string) string {
	for _, k := range known {
		if k != "" {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	s = stripUserinfo(s, Mask)
	s = yamlValue.ReplaceAllString(s, "${1}`"+Mask+"`")
	return secretField.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretField.FindStringSubmatch(m)
		if strings.Trim(sub[2], `"'`) == Mask {
			return m
		}
		return sub[1] + Mask
	})
}

// isTokenEnd reports whether c ends a URL or reference in a message.
func isTokenEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', '=', '|', '\\':
		return true
	}
	return false
}

// DropUserinfo is the same rule for userinfo as String, for a value that
// names something rather than reports it (a metric label): userinfo is
// left out whole, without a Mask, so "user:pass@registry/app" and
// "https://user:pass@host/x" read "registry/app" and "https://host/x".
// A digest ("app@sha256:…") is kept.
func DropUserinfo(s string) string { return stripUserinfo(s, "") }

// stripUserinfo replaces, in each token (a run of characters no
// isTokenEnd ends), everything before an '@' that does not start a digest
// ("@sha256:…" in a reference) with mask, after any "scheme://"; with an
// empty mask the '@' goes too.
func stripUserinfo(s, mask string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if isTokenEnd(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && !isTokenEnd(s[j]) {
			j++
		}
		b.WriteString(stripToken(s[i:j], mask))
		i = j
	}
	return b.String()
}

func stripToken(t, mask string) string {
	start := 0
	if k := strings.Index(t, "://"); k >= 0 && !strings.Contains(t[:k], "/") {
		start = k + len("://")
	}
	end := len(t)
	if k := strings.IndexByte(t[start:], '/'); k >= 0 {
		end = start + k
	}
	// userinfo is in the authority (before the first '/') only, and an '@'
	// that starts a digest is none.
	at := strings.LastIndexByte(t[start:end], '@')
	if at < 0 || isDigest(t[start+at+1:]) {
		return t
	}
	at += start
	if mask == "" {
		return t[:start] + t[at+1:]
	}
	return t[:start] + mask + t[at:]
}

// digestPrefix is the start of an OCI digest: algorithm ":" hex.
var digestPrefix = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}`)

func isDigest(s string) bool { return digestPrefix.MatchString(s) }
