package cosign

import "context"

// VerifyWith runs cosign verify on ref (a legacy .sig signature) with
// the verification flags given (--key, --trusted-root,
// --certificate-identity, ...), offline: TUF_ROOT is an empty folder of
// the cosign's home and HTTP(S)_PROXY a closed loopback port, so that no
// Rekor, Fulcio or TUF request leaves the machine. It returns whether
// cosign passed and what it said.
func (c *Cosign) VerifyWith(ctx context.Context, ref string, flags ...string) (bool, string, error) {
	return c.VerifyWithEnv(ctx, nil, ref, flags...)
}

// VerifyWithEnv is VerifyWith with more environment variables (cosign's
// SIGSTORE_ROOT_FILE, SIGSTORE_REKOR_PUBLIC_KEY: trust material given
// piece by piece, as a policy names it).
func (c *Cosign) VerifyWithEnv(ctx context.Context, env []string, ref string, flags ...string) (bool, string, error) {
	args := append([]string{"verify", "--offline=true"}, formatFlags(Legacy)...)
	args = append(append(append(args, flags...), registryFlags...), ref)
	env = append([]string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}, env...)
	return c.verdict(c.runEnv(ctx, env, args...))
}

// VerifyAttestationWith runs cosign verify-attestation on ref, expecting
// format f, with the verification flags given (--key, --type,
// --trusted-root, --insecure-ignore-tlog, ...), offline as VerifyWith is.
func (c *Cosign) VerifyAttestationWith(ctx context.Context, ref string, f Format, flags ...string) (bool, string, error) {
	args := append([]string{"verify-attestation", "--offline=true"}, formatFlags(f)...)
	args = append(append(append(args, flags...), registryFlags...), ref)
	env := []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	return c.verdict(c.runEnv(ctx, env, args...))
}

// VerifyFormatWith is VerifyWith expecting format f (--new-bundle-format
// for Bundle): a sigstore bundle verified with the flags given
// (--use-signed-timestamps, --trusted-root, ...).
func (c *Cosign) VerifyFormatWith(ctx context.Context, ref string, f Format, flags ...string) (bool, string, error) {
	args := append([]string{"verify", "--offline=true"}, formatFlags(f)...)
	args = append(append(append(args, flags...), registryFlags...), ref)
	env := []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	return c.verdict(c.runEnv(ctx, env, args...))
}
