package types

import "fmt"

// Finding is one thing found about an image.
type Finding struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	// Message says what is wrong, naming digests.
	Message string `json:"message"`
	// Advice says what to do about it.
	Advice string `json:"advice,omitempty"`
	// Digest is the manifest or blob concerned, if any.
	Digest string `json:"digest,omitempty"`
	// Platform is the index child's platform (os/arch[/variant]), if any.
	Platform string `json:"platform,omitempty"`
}

// NewFinding makes a finding with the code's severity and advice; the
// message is format and args.
func NewFinding(c Code, digest, platform, format string, args ...any) Finding {
	return Finding{Code: c, Severity: c.Severity(), Digest: digest, Platform: platform,
		Message: fmt.Sprintf(format, args...), Advice: c.Advice(platform, digest)}
}

// ShortDigest abbreviates a digest to the 12 hex digits people recognize
// ("sha256:0123456789ab"). Other strings are returned as they are.
func ShortDigest(d string) string {
	const n = len("sha256:") + 12
	if len(d) > n {
		return d[:n]
	}
	return d
}

// NewAdvisedFinding makes a finding with the code's severity and the message
// and advice given, for findings whose advice depends on more than the code.
func NewAdvisedFinding(c Code, digest, platform, message, advice string) Finding {
	return Finding{Code: c, Severity: c.Severity(), Digest: digest, Platform: platform, Message: message, Advice: advice}
}
