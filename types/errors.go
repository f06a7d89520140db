package types

import "errors"

// Errors a read of an image can end in, whatever it reads from (a
// registry, its storage, a cache). Only ErrNotFound and ErrDigestMismatch
// say something about an image; the rest are faults: it could not be asked.
var (
	// ErrNotFound: the store itself says the manifest, blob or tag is not
	// there (a registry's 404 on the request, a missing link on disk).
	ErrNotFound = errors.New("not found")
	// ErrDigestMismatch: bytes that parse, but hash to another digest.
	ErrDigestMismatch = errors.New("digest mismatch")

	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrRateLimited  = errors.New("rate limited")
	ErrRegistry     = errors.New("registry error")
	ErrUnreachable  = errors.New("unreachable")
	// ErrPing: the registry's version check (GET /v2/) failed.
	ErrPing = errors.New("registry version check failed")
	// ErrToken: the token service did not issue a token.
	ErrToken = errors.New("token service failed")
	// ErrTLS: the registry's (or its token service's) certificate could
	// not be verified.
	ErrTLS = errors.New("certificate not trusted")
	// ErrBadResponse: the store answered with a body that is not what was
	// asked for, twice.
	ErrBadResponse = errors.New("bad response")
	// ErrLimit: the store served more than regcheck reads.
	ErrLimit = errors.New("over regcheck's limit")
	// ErrCredentials: the credentials for the registry could not be read.
	ErrCredentials = errors.New("credentials unreadable")
	// ErrPullBudget: a manifest GET was not sent, to keep within the
	// registry's pull budget (its rate limit, less a reserve) or a cap.
	ErrPullBudget = errors.New("pull budget spent")
)

// faultErrs pairs each fault sentinel with its finding code.
var faultErrs = []struct {
	err  error
	code Code
}{
	{ErrTLS, TLSError},
	{ErrCredentials, CredentialsError},
	{ErrPing, PingFailed},
	{ErrToken, TokenFailed},
	{ErrUnauthorized, Unauthorized},
	{ErrForbidden, Forbidden},
	{ErrRateLimited, RateLimited},
	{ErrUnreachable, Unreachable},
	{ErrBadResponse, BadResponse},
	{ErrLimit, LimitExceeded},
	{ErrPullBudget, RateLimitBudget},
}

// FaultCode maps an error to the fault finding it is: "" for absence
// (ErrNotFound) and ErrDigestMismatch, which are facts about the image,
// and registry-error for any error it does not know.
func FaultCode(err error) Code {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrDigestMismatch) {
		return ""
	}
	for _, f := range faultErrs {
		if errors.Is(err, f.err) {
			return f.code
		}
	}
	return RegistryFault
}
