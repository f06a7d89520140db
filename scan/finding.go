package scan

import "github.com/regcheck/regcheck/types"

// The finding vocabulary is package types'; these names keep the scan API
// whole for its callers.
type (
	// Severity is types.Severity.
	Severity = types.Severity
	// Code is types.Code.
	Code = types.Code
	// Finding is types.Finding.
	Finding = types.Finding
	// Verdict is types.Verdict.
	Verdict = types.Verdict
)

// Severities (see package types).
const (
	SeverityInfo     = types.SeverityInfo
	SeverityWarning  = types.SeverityWarning
	SeverityHigh     = types.SeverityHigh
	SeverityCritical = types.SeverityCritical
)

// Verdicts (see package types).
const (
	OK      = types.OK
	AtRisk  = types.AtRisk
	Unknown = types.Unknown
	Broken  = types.Broken
)

// Codes (see package types).
const (
	TagMissing           = types.TagMissing
	ManifestMissing      = types.ManifestMissing
	ChildMissing         = types.ChildMissing
	AttestationMissing   = types.AttestationMissing
	BlobMissing          = types.BlobMissing
	DigestMismatch       = types.DigestMismatch
	InvalidReference     = types.InvalidReference
	ForeignLayer         = types.ForeignLayer
	UnsupportedMedia     = types.UnsupportedMedia
	Drift                = types.Drift
	RunningDigestMissing = types.RunningDigestMissing
	MutableReference     = types.MutableReference
	PullAlwaysMutable    = types.PullAlwaysMutable
	PinnedDigestUntagged = types.PinnedDigestUntagged
	ImageIDOnly          = types.ImageIDOnly
	Unauthorized         = types.Unauthorized
	Forbidden            = types.Forbidden
	RateLimited          = types.RateLimited
	RegistryFault        = types.RegistryFault
	Unreachable          = types.Unreachable
	PingFailed           = types.PingFailed
	TokenFailed          = types.TokenFailed
	TLSError             = types.TLSError
	BadResponse          = types.BadResponse
	LimitExceeded        = types.LimitExceeded
	CredentialsError     = types.CredentialsError
	RateLimitBudget      = types.RateLimitBudget
)

// ParseSeverity is types.ParseSeverity.
func ParseSeverity(s string) (Severity, error) { return types.ParseSeverity(s) }

// ShortDigest is types.ShortDigest.
func ShortDigest(d string) string { return types.ShortDigest(d) }

// NewFinding makes a finding with the code's severity and the message and
// advice given, for packages that add findings to a scan's images.
func NewFinding(c Code, digest, platform, message, advice string) Finding {
	return Finding{Code: c, Severity: c.Severity(), Digest: digest, Platform: platform, Message: message, Advice: advice}
}

func newFinding(c Code, digest, platform, format string, args ...any) Finding {
	return types.NewFinding(c, digest, platform, format, args...)
}

func verdict(fs []Finding) Verdict { return types.VerdictOf(fs) }
