// Package cosign runs the real cosign v3 (built by hack/build-bins.sh
// cosign) against loopback registries, offline: a key pair generated in a
// temporary folder, nothing uploaded to a transparency log, no TUF root
// fetched. It signs the legacy way (the sha256-<hex>.sig tag) and in the
// sigstore bundle format (an OCI 1.1 referrer of the image, kept under the
// referrers tag sha256-<hex> on a registry without the referrers API),
// attests, and verifies: cosign verify is the ground truth regcheck's
// artifact finder is held to.
package cosign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/regcheck/regcheck/internal/testing/bins"
)

// Version is the cosign binary hack/build-bins.sh builds.
const Version = "cosign-v3.1.3"

// password protects the generated private key; it is a test key.
const password = "regcheck-test-only"

// timeout bounds one cosign run.
const timeout = 2 * time.Minute

// Cosign is a key pair and the cosign binary that uses it.
type Cosign struct {
	// Bin is the cosign executable.
	Bin string
	// Key and Pub are the private and public key files.
	Key, Pub string
	dir      string
}

// Format is how a signature or attestation is stored.
type Format int

// Formats cosign v3 writes.
const (
	// Bundle is cosign v3's default: a sigstore bundle pushed as an OCI
	// 1.1 referrer (and, where the registry has no referrers API, listed
	// in the referrers tag's index).
	Bundle Format = iota
	// Legacy is the tag scheme: sha256-<hex>.sig, .att.
	Legacy
)

// New finds the cosign binary and generates a key pair in dir.
func New(ctx context.Context, dir string) (*Cosign, error) {
	bin, err := bins.Path(Version)
	if err != nil {
		return nil, err
	}
	c := &Cosign{Bin: bin, dir: dir, Key: filepath.Join(dir, "cosign.key"), Pub: filepath.Join(dir, "cosign.pub")}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o700); err != nil {
		return nil, fmt.Errorf("creating cosign's home: %w", err)
	}
	if out, err := c.run(ctx, "generate-key-pair"); err != nil {
		return nil, fmt.Errorf("generating a key pair: %w\n%s", err, out)
	}
	return c, nil
}

// registryFlags let cosign talk plain HTTP to a loopback registry.
var registryFlags = []string{"--allow-http-registry", "--allow-insecure-registry"}

// formatFlags are the flags that choose the format, for sign and attest.
func formatFlags(f Format) []string {
	if f == Legacy {
		return []string{"--new-bundle-format=false"}
	}
	return []string{"--new-bundle-format=true"}
}

// signFlags sign offline with the key: no transparency log, no signing
// config fetched.
func (c *Cosign) signFlags(f Format) []string {
	out := []string{"--key", c.Key, "--tlog-upload=false", "--use-signing-config=false", "--yes"}
	return append(append(out, formatFlags(f)...), registryFlags...)
}

// Sign signs ref (repo@digest). With recursive, an index's children are
// signed too (one signature each, under each child's digest).
func (c *Cosign) Sign(ctx context.Context, ref string, f Format, recursive bool) error {
	args := append([]string{"sign"}, c.signFlags(f)...)
	if recursive {
		args = append(args, "--recursive")
	}
	if out, err := c.run(ctx, append(args, ref)...); err != nil {
		return fmt.Errorf("cosign sign %s: %w\n%s", ref, err, out)
	}
	return nil
}

// SignAnnotated signs ref (repo@digest) in format f with annotations
// ("key=value", cosign sign -a each): in a legacy signature's payload
// (its optional map), in a bundle's in-toto subject.
func (c *Cosign) SignAnnotated(ctx context.Context, ref string, f Format, annotations ...string) error {
	args := append([]string{"sign"}, c.signFlags(f)...)
	for _, a := range annotations {
		args = append(args, "-a", a)
	}
	if out, err := c.run(ctx, append(args, ref)...); err != nil {
		return fmt.Errorf("cosign sign %s: %w\n%s", ref, err, out)
	}
	return nil
}

// SignIn signs ref (repo@digest) the legacy way, keeping the signature in
// the repository sigRepo instead of beside the image, as cosign does with
// COSIGN_REPOSITORY set.
func (c *Cosign) SignIn(ctx context.Context, ref, sigRepo string) error {
	args := append([]string{"sign"}, c.signFlags(Legacy)...)
	if out, err := c.runEnv(ctx, []string{"COSIGN_REPOSITORY=" + sigRepo}, append(args, ref)...); err != nil {
		return fmt.Errorf("cosign sign %s into %s: %w\n%s", ref, sigRepo, err, out)
	}
	return nil
}

// Attest attaches an in-toto attestation of predicate type typ
// ("slsaprovenance", "spdx", a URI) with the predicate JSON to ref.
func (c *Cosign) Attest(ctx context.Context, ref, typ string, predicate []byte, f Format) error {
	p := filepath.Join(c.dir, fmt.Sprintf("predicate-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(p, predicate, 0o600); err != nil {
		return fmt.Errorf("writing the predicate: %w", err)
	}
	args := append([]string{"attest", "--predicate", p, "--type", typ}, c.signFlags(f)...)
	if out, err := c.run(ctx, append(args, ref)...); err != nil {
		return fmt.Errorf("cosign attest %s: %w\n%s", ref, err, out)
	}
	return nil
}

// Verify runs cosign verify on ref with the public key, ignoring the
// transparency log, expecting the format: whether it passed, and what
// cosign said. An error is a run that could not be judged (no binary, a
// timeout).
func (c *Cosign) Verify(ctx context.Context, ref string, f Format) (bool, string, error) {
	args := append([]string{"verify", "--key", c.Pub, "--insecure-ignore-tlog=true"}, formatFlags(f)...)
	return c.verdict(c.run(ctx, append(append(args, registryFlags...), ref)...))
}

// VerifyKey runs cosign verify on ref with the public key file pub, in
// format f, with the flags that match an engine: ignoreTlog adds
// --insecure-ignore-tlog (policy-controller's key authority without
// ctlog, Kyverno with rekor.ignoreTlog); without it the log proof is
// required, carried by the signature (--offline) and checked against
// rekorPub (a key the test makes: no Rekor or TUF is ever asked;
// HTTPS_PROXY points at a closed loopback port so that nothing leaves
// the machine).
func (c *Cosign) VerifyKey(ctx context.Context, ref, pub string, f Format, ignoreTlog bool, rekorPub string) (bool, string, error) {
	return c.VerifyKeyIn(ctx, ref, "", pub, f, ignoreTlog, rekorPub)
}

// VerifyKeyIn is VerifyKey reading the signatures in sigRepo
// (COSIGN_REPOSITORY) when it is not "".
func (c *Cosign) VerifyKeyIn(ctx context.Context, ref, sigRepo, pub string, f Format, ignoreTlog bool, rekorPub string) (bool, string, error) {
	// --offline: the log proof must be carried by the signature; cosign
	// does not search Rekor for it (nor could it here).
	args := append([]string{"verify", "--key", pub, fmt.Sprintf("--insecure-ignore-tlog=%v", ignoreTlog), "--offline=true"}, formatFlags(f)...)
	env := []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	if sigRepo != "" {
		env = append(env, "COSIGN_REPOSITORY="+sigRepo)
	}
	if rekorPub != "" {
		env = append(env, "SIGSTORE_REKOR_PUBLIC_KEY="+rekorPub)
	}
	return c.verdict(c.runEnv(ctx, env, append(append(args, registryFlags...), ref)...))
}

// VerifyKeyAnnotated is VerifyKey with the log ignored
// (--insecure-ignore-tlog) requiring the annotations ("key=value",
// cosign verify -a each).
func (c *Cosign) VerifyKeyAnnotated(ctx context.Context, ref, pub string, f Format, annotations ...string) (bool, string, error) {
	args := append([]string{"verify", "--key", pub, "--insecure-ignore-tlog=true", "--offline=true"}, formatFlags(f)...)
	for _, a := range annotations {
		args = append(args, "-a", a)
	}
	env := []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	return c.verdict(c.runEnv(ctx, env, append(append(args, registryFlags...), ref)...))
}

// VerifyAttestation runs cosign verify-attestation for predicate type typ.
func (c *Cosign) VerifyAttestation(ctx context.Context, ref, typ string, f Format) (bool, string, error) {
	args := append([]string{"verify-attestation", "--key", c.Pub, "--type", typ, "--insecure-ignore-tlog=true"}, formatFlags(f)...)
	return c.verdict(c.run(ctx, append(append(args, registryFlags...), ref)...))
}

// TrustedRoot writes, with cosign trusted-root create, a trusted root
// whose only transparency log has the public key file rekorPub (a key
// the test makes): a log proof is checked against it, offline.
func (c *Cosign) TrustedRoot(ctx context.Context, rekorPub string) (string, error) {
	out := filepath.Join(c.dir, fmt.Sprintf("trusted-root-%d.json", time.Now().UnixNano()))
	log := "url=https://rekor.invalid,public-key=" + rekorPub + ",start-time=2024-01-01T00:00:00Z"
	if o, err := c.run(ctx, "trusted-root", "create", "--rekor", log, "--out", out); err != nil {
		return "", fmt.Errorf("cosign trusted-root create: %w\n%s", err, o)
	}
	return out, nil
}

// VerifyKeyRoot runs cosign verify on ref with the public key file pub,
// in format f, the log required and checked against the trusted root
// file root, offline as VerifyKey is.
func (c *Cosign) VerifyKeyRoot(ctx context.Context, ref, pub, root string, f Format) (bool, string, error) {
	args := append([]string{"verify", "--key", pub, "--insecure-ignore-tlog=false", "--offline=true", "--trusted-root", root}, formatFlags(f)...)
	env := []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	return c.verdict(c.runEnv(ctx, env, append(append(args, registryFlags...), ref)...))
}

// VerifyAttestationKey runs cosign verify-attestation on ref for
// predicate type typ with the public key file pub, in format f, with the
// engine's log flags, offline as VerifyKey is.
func (c *Cosign) VerifyAttestationKey(ctx context.Context, ref, pub, typ string, f Format, ignoreTlog bool, rekorPub string) (bool, string, error) {
	args := append([]string{"verify-attestation", "--key", pub, "--type", typ, fmt.Sprintf("--insecure-ignore-tlog=%v", ignoreTlog), "--offline=true"}, formatFlags(f)...)
	env := []string{"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9"}
	if rekorPub != "" {
		env = append(env, "SIGSTORE_REKOR_PUBLIC_KEY="+rekorPub)
	}
	return c.verdict(c.runEnv(ctx, env, append(append(args, registryFlags...), ref)...))
}

// verdict reads a verify run: exit 0 passed, another exit status failed,
// anything else is an error.
func (c *Cosign) verdict(out string, err error) (bool, string, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true, out, nil
	case errors.As(err, &ee):
		return false, out, nil
	}
	return false, out, err
}

// run runs cosign with args in its folder, offline: HOME is the folder's
// (no TUF cache of the machine's), the key's password from the
// environment. It returns stdout and stderr together.
func (c *Cosign) run(ctx context.Context, args ...string) (string, error) {
	return c.runEnv(ctx, nil, args...)
}

// runEnv is run with more environment variables.
func (c *Cosign) runEnv(ctx context.Context, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(c.dir, "home"), "COSIGN_PASSWORD="+password,
		"COSIGN_EXPERIMENTAL=0", "SIGSTORE_NO_CACHE=true", "TUF_ROOT="+filepath.Join(c.dir, "home", "tuf"))
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("cosign %s: %w", strings.Join(args[:1], " "), ctx.Err())
	}
	return out.String(), err
}
