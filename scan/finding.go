package scan

import "fmt"

// Severity orders findings. Only cmd turns a severity into an exit code.
type Severity int

// Severities, lowest first.
const (
	SeverityInfo     Severity = iota // worth knowing; the image is fine
	SeverityWarning                  // the image pulls, but something around it is fragile
	SeverityHigh                     // the next pull or restart is likely to run other bits, or fail
	SeverityCritical                 // a node cannot pull the image: it is broken
)

var severityNames = []string{"info", "warning", "high", "critical"}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads a severity name.
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if n == s {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warning, high or critical)", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	*s = v
	return err
}

// Code names a kind of finding. The set is fixed: reports and users match on it.
type Code string

// Findings about the image itself.
const (
	TagMissing         Code = "tag-missing"         // the tag does not exist
	ManifestMissing    Code = "manifest-missing"    // a digest (pinned, or the tag's target) does not exist
	ChildMissing       Code = "child-missing"       // an index child is gone: the GC-orphan case
	AttestationMissing Code = "attestation-missing" // only attestation children are gone; the image still runs
	BlobMissing        Code = "blob-missing"        // a config or layer blob is gone
	DigestMismatch     Code = "digest-mismatch"     // the bytes served do not hash to the digest asked for
	InvalidReference   Code = "invalid-reference"   // the reference cannot be parsed
	ForeignLayer       Code = "foreign-layer"       // a non-distributable layer, not checked
	UnsupportedMedia   Code = "unsupported-media-type"
)

// Findings about what a cluster runs, computed on top of a walk (package
// cluster): they compare what runs with what the registry serves now.
const (
	Drift                Code = "drift"                  // the tag resolves to another digest than the one running
	RunningDigestMissing Code = "running-digest-missing" // the running digest is gone: it lives only in node caches
	MutableReference     Code = "mutable-reference"      // referenced by tag, not pinned by digest
	PullAlwaysMutable    Code = "pull-always-mutable"    // imagePullPolicy Always on a mutable reference
	PinnedDigestUntagged Code = "pinned-digest-untagged" // a pinned digest no tag points at: a GC may delete it
	ImageIDOnly          Code = "image-id-only"          // the runtime reports an image ID, not a registry digest
)

// Faults: the registry could not be asked. They prove nothing about the image.
const (
	Unauthorized  Code = "unauthorized"
	Forbidden     Code = "forbidden"
	RateLimited   Code = "rate-limited"
	RegistryFault Code = "registry-error"
	Unreachable   Code = "unreachable"
	// PingFailed: the registry's version check (GET /v2/) did not answer
	// as a registry does (a 404 from a proxy, a 5xx, an outage).
	PingFailed Code = "ping-failed"
	// TokenFailed: the token service named by the registry's challenge
	// did not issue a token.
	TokenFailed Code = "token-failed"
	// TLSError: the registry's certificate could not be verified.
	TLSError Code = "tls-error"
	// BadResponse: the registry answered, twice, with a body that is not
	// what was asked for (cut short, not a manifest, an invalid digest).
	BadResponse Code = "bad-response"
	// LimitExceeded: the image is larger than regcheck walks (children per
	// index, manifests per image); the rest was not checked.
	LimitExceeded Code = "limit-exceeded"
	// CredentialsError: the credentials for the registry could not be read
	// (a malformed pull secret, a failing credential helper).
	CredentialsError Code = "credentials-error"
)

// codeInfo is the fixed vocabulary: each code's severity and whether it is a fault.
var codeInfo = map[Code]struct {
	severity Severity
	fault    bool
}{
	TagMissing:         {SeverityCritical, false},
	ManifestMissing:    {SeverityCritical, false},
	ChildMissing:       {SeverityCritical, false},
	BlobMissing:        {SeverityCritical, false},
	DigestMismatch:     {SeverityCritical, false},
	InvalidReference:   {SeverityCritical, false},
	AttestationMissing: {SeverityWarning, false},
	UnsupportedMedia:   {SeverityWarning, false},
	ForeignLayer:       {SeverityInfo, false},
	// Drift is raised to high by package cluster where the next start pulls.
	Drift:                {SeverityWarning, false},
	RunningDigestMissing: {SeverityHigh, false},
	MutableReference:     {SeverityInfo, false}, // alone, not a risk: the verdict stays ok
	PullAlwaysMutable:    {SeverityWarning, false},
	PinnedDigestUntagged: {SeverityWarning, false},
	ImageIDOnly:          {SeverityInfo, false},
	Unauthorized:         {SeverityWarning, true},
	Forbidden:            {SeverityWarning, true},
	RateLimited:          {SeverityWarning, true},
	RegistryFault:        {SeverityWarning, true},
	Unreachable:          {SeverityWarning, true},
	PingFailed:           {SeverityWarning, true},
	TokenFailed:          {SeverityWarning, true},
	TLSError:             {SeverityWarning, true},
	BadResponse:          {SeverityWarning, true},
	LimitExceeded:        {SeverityWarning, true},
	CredentialsError:     {SeverityWarning, true},
}

// Severity returns the code's default severity.
func (c Code) Severity() Severity { return codeInfo[c].severity }

// Fault reports whether the code is a fault (the registry could not answer)
// rather than a fact about the image.
func (c Code) Fault() bool { return codeInfo[c].fault }

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

func newFinding(c Code, digest, platform, format string, args ...any) Finding {
	return Finding{Code: c, Severity: c.Severity(), Digest: digest, Platform: platform, Message: fmt.Sprintf(format, args...), Advice: advice(c, platform, digest)}
}

// NewFinding makes a finding with the code's severity, for packages that add
// findings to a scan's images (package cluster).
func NewFinding(c Code, digest, platform, message, advice string) Finding {
	return Finding{Code: c, Severity: c.Severity(), Digest: digest, Platform: platform, Message: message, Advice: advice}
}

func advice(c Code, platform, digest string) string {
	switch c {
	case TagMissing:
		return "push the tag again, or point the workload at a tag that exists"
	case ManifestMissing:
		return "the digest is gone from the registry: rebuild and push, then pin the workload to the new digest"
	case ChildMissing:
		if digest == "" {
			return fmt.Sprintf("build and push the image for %s, or drop the platform if no such node runs it", platform)
		}
		return fmt.Sprintf("rebuild and push; the tag resolves but its %s manifest %s is gone", platform, ShortDigest(digest))
	case BlobMissing:
		return "rebuild and push; the manifest resolves but a blob it needs is gone"
	case AttestationMissing:
		return "the image still runs; rebuild and push to restore its attestation (provenance and SBOM checks will fail until then)"
	case DigestMismatch:
		return "the registry serves bytes that do not match the digest: check for a proxy or a corrupt store, and rebuild"
	case InvalidReference:
		return "fix the image reference in the manifest"
	case Unauthorized:
		return "give regcheck credentials for this registry (docker login, or --pull-secrets in a cluster)"
	case Forbidden:
		return "the credentials used cannot pull this repository"
	case RateLimited:
		return "the registry rate-limited the check: run again later or with credentials"
	case RegistryFault, Unreachable:
		return "the registry could not be checked: run again when it answers"
	case PingFailed:
		return "the registry's version check (GET /v2/) did not answer as a registry does: check the host and any proxy in front of it, then run again"
	case TokenFailed:
		return "the registry's token service did not issue a token: check it and any proxy in front of it, then run again"
	case TLSError:
		return "the registry's certificate is not trusted: give its CA with --ca-file, or name the host with --insecure-registry to skip verification for it alone"
	case BadResponse:
		return "the registry answered twice with something that is not what was asked (cut short, not a manifest): check any proxy in front of it, then run again"
	case LimitExceeded:
		return "the image is larger than regcheck walks: check the rest with the registry's own tools"
	case CredentialsError:
		return "fix the credentials regcheck reads for this registry (the docker config, its credential helper, or the pull secret named)"
	}
	return ""
}

// Verdict is what a scan concludes about one image.
type Verdict string

// Verdicts, from best to worst for ordering purposes in Rank.
const (
	OK      Verdict = "ok"      // every manifest and blob a node needs is there
	AtRisk  Verdict = "at-risk" // it pulls today, but something makes the next pull fragile or different
	Unknown Verdict = "unknown" // the registry could not be asked everything; nothing broken was found
	Broken  Verdict = "broken"  // a node cannot pull it
)

// Rank orders verdicts for reports: broken first, ok last.
func (v Verdict) Rank() int {
	switch v {
	case Broken:
		return 0
	case Unknown:
		return 1
	case AtRisk:
		return 2
	}
	return 3
}

// verdict derives an image's verdict from its findings: any critical finding
// is broken; else any fault is unknown; else any warning or worse is at-risk.
func verdict(fs []Finding) Verdict {
	v := OK
	for _, f := range fs {
		switch {
		case f.Severity >= SeverityCritical && !f.Code.Fault():
			return Broken
		case f.Code.Fault():
			v = Unknown
		case f.Severity >= SeverityWarning && v == OK:
			v = AtRisk
		}
	}
	return v
}

// UpdateVerdict recomputes the image's verdict from its findings, for callers that
// add findings after a scan.
func (im *Image) UpdateVerdict() { im.Verdict = verdict(im.Findings) }

// ShortDigest abbreviates a digest to the 12 hex digits people recognize
// ("sha256:0123456789ab"). Other strings are returned as they are.
func ShortDigest(d string) string {
	const n = len("sha256:") + 12
	if len(d) > n {
		return d[:n]
	}
	return d
}
