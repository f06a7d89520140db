package admission

import (
	"testing"

	"github.com/regcheck/regcheck/imageref"
)

// The engines' own matcher tests, copied as tables: where regcheck
// answered otherwise, regcheck was changed (the engine is the truth).

// TestWildcardKyvernoTable: Kyverno's ext/wildcard/match_test.go
// (kyverno/kyverno 111e07bb, TestMatch; the same 52 cases as the
// go-wildcard v1.0.3 module's own wildcard_test.go TestMatch, the module
// Kyverno's go.mod pins), held to regcheck's wildcard.
func TestWildcardKyvernoTable(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		matched       bool
	}{
		{"*", "s3:GetObject", true},                                                                      // star pattern matches any text
		{"", "s3:GetObject", false},                                                                      // empty pattern matches nothing on non-empty text
		{"", "", true},                                                                                   // empty pattern matches empty text
		{"s3:*", "s3:ListMultipartUploadParts", true},                                                    // single star wildcard at suffix matches prefix
		{"s3:ListBucketMultipartUploads", "s3:ListBucket", false},                                        // no wildcard exact mismatch on suffix
		{"s3:ListBucket", "s3:ListBucket", true},                                                         // no wildcard exact match succeeds
		{"s3:ListBucketMultipartUploads", "s3:ListBucketMultipartUploads", true},                         // no wildcard exact match succeeds long suffix
		{"my-bucket/oo*", "my-bucket/oo", true},                                                          // prefix with wildcard matches prefix alone
		{"my-bucket/In*", "my-bucket/India/Karnataka/", true},                                            // star wildcard at suffix matches multiple subdirectories
		{"my-bucket/In*", "my-bucket/Karnataka/India/", false},                                           // star wildcard at suffix fails when prefixes are shuffled
		{"my-bucket/In*/Ka*/Ban", "my-bucket/India/Karnataka/Ban", true},                                 // multiple wildcards match correctly expanded path segments
		{"my-bucket/In*/Ka*/Ban", "my-bucket/India/Karnataka/Ban/Ban/Ban/Ban/Ban", true},                 // multiple wildcards match when path segments are repeated
		{"my-bucket/In*/Ka*/Ban", "my-bucket/India/Karnataka/Area1/Area2/Area3/Ban", true},               // wildcard expands to match multiple intermediate subdirectories
		{"my-bucket/In*/Ka*/Ban", "my-bucket/India/State1/State2/Karnataka/Area1/Area2/Area3/Ban", true}, // wildcard expands to match multiple subdirectories at multiple levels
		{"my-bucket/In*/Ka*/Ban", "my-bucket/India/Karnataka/Bangalore", false},                          // multiple wildcards fail when trailing segment is modified
		{"my-bucket/In*/Ka*/Ban*", "my-bucket/India/Karnataka/Bangalore", true},                          // multiple wildcards match when trailing segment contains wildcard
		{"my-bucket/*", "my-bucket/India", true},                                                         // star wildcard matches single folder path suffix
		{"my-bucket/oo*", "my-bucket/odo", false},                                                        // prefix wildcard fails on incorrect match prefix
		{"my-bucket?/abc*", "mybucket/abc", false},                                                       // question mark wildcard fails on missing character
		{"my-bucket?/abc*", "my-bucket1/abc", true},                                                      // question mark wildcard matches single numeric character
		{"my-?-bucket/abc*", "my--bucket/abc", false},                                                    // question mark fails on missing middle character
		{"my-?-bucket/abc*", "my-1-bucket/abc", true},                                                    // question mark matches middle number
		{"my-?-bucket/abc*", "my-k-bucket/abc", true},                                                    // question mark matches middle character letter
		{"my??bucket/abc*", "mybucket/abc", false},                                                       // two question marks fail on missing characters
		{"my??bucket/abc*", "my4abucket/abc", true},                                                      // two question marks match two characters
		{"my-bucket?abc*", "my-bucket/abc", true},                                                        // question mark matches path separator slash
		{"my-bucket/abc?efg", "my-bucket/abcdefg", true},                                                 // question mark matches middle character in filename
		{"my-bucket/abc?efg", "my-bucket/abc/efg", true},                                                 // question mark matches slash separator in middle
		{"my-bucket/abc????", "my-bucket/abc", false},                                                    // four question marks fail on too short suffix
		{"my-bucket/abc????", "my-bucket/abcde", false},                                                  // four question marks fail on two short characters suffix
		{"my-bucket/abc????", "my-bucket/abcdefg", true},                                                 // four question marks match exact character suffix length
		{"my-bucket/abc?", "my-bucket/abc", false},                                                       // single question mark fails on empty match character
		{"my-bucket/abc?", "my-bucket/abcd", true},                                                       // single question mark matches single character suffix
		{"my-bucket/abc?", "my-bucket/abcde", false},                                                     // single question mark fails on too long suffix text
		{"my-bucket/mnop*?", "my-bucket/mnop", false},                                                    // wildcard and question mark fails on missing single character
		{"my-bucket/mnop*?", "my-bucket/mnopqrst/mnopqr", true},                                          // wildcard and question mark matches multi segment text
		{"my-bucket/mnop*?", "my-bucket/mnopqrst/mnopqrs", true},                                         // wildcard and question mark matches multi segment text long
		{"my-bucket/mnop*?", "my-bucket/mnop", false},                                                    // wildcard and question mark fails on missing character duplicate case
		{"my-bucket/mnop*?", "my-bucket/mnopq", true},                                                    // wildcard and question mark matches single character suffix
		{"my-bucket/mnop*?", "my-bucket/mnopqr", true},                                                   // wildcard and question mark matches two character suffix
		{"my-bucket/mnop*?and", "my-bucket/mnopqand", true},                                              // wildcard and question mark with final suffix matches
		{"my-bucket/mnop*?and", "my-bucket/mnopand", false},                                              // wildcard and question mark with final suffix fails on missing character
		{"my-bucket/mnop*?and", "my-bucket/mnopqand", true},                                              // wildcard and question mark with final suffix matches duplicate case
		{"my-bucket/mnop*?", "my-bucket/mn", false},                                                      // wildcard and question mark fails on prefix mismatch
		{"my-bucket/mnop*?", "my-bucket/mnopqrst/mnopqrs", true},                                         // wildcard and question mark matches duplicate long case
		{"my-bucket/mnop*??", "my-bucket/mnopqrst", true},                                                // wildcard and two question marks match long text
		{"my-bucket/mnop*qrst", "my-bucket/mnopabcdegqrst", true},                                        // wildcard in middle matches correctly
		{"my-bucket/mnop*?and", "my-bucket/mnopqand", true},                                              // wildcard and question mark with final suffix matches duplicate case 3
		{"my-bucket/mnop*?and", "my-bucket/mnopand", false},                                              // wildcard and question mark with final suffix fails on missing character duplicate case 2
		{"my-bucket/mnop*?and?", "my-bucket/mnopqanda", true},                                            // wildcards and question marks match trailing pattern segment
		{"my-bucket/mnop*?and", "my-bucket/mnopqanda", false},                                            // wildcard and question mark fail on extra trailing suffix characters
		{"my-?-bucket/abc*", "my-bucket/mnopqanda", false},                                               // question mark and wildcard fail when prefix is incorrect
	} {
		if got := wildcard(c.pattern, c.text); got != c.matched {
			t.Errorf("wildcard(%q, %q) = %v, Kyverno's table says %v", c.pattern, c.text, got, c.matched)
		}
	}
}

// TestImageMatchesKyvernoTable: Kyverno's pkg/engine/utils/image_test.go
// (TestImageMatches, on ImageMatches: any pattern, each by wildcard.Match
// on the image string given), held to kyvernoMatches.
func TestImageMatchesKyvernoTable(t *testing.T) {
	for _, c := range []struct {
		name     string
		image    string
		patterns []string
		want     bool
	}{
		{"exact match", "nginx:latest", []string{"nginx:latest"}, true},
		{"wildcard match", "nginx:latest", []string{"nginx:*"}, true},
		{"registry match", "ghcr.io/repo/img:v1", []string{"ghcr.io/*"}, true},
		{"no match", "redis:6", []string{"nginx:*"}, false},
		{"multiple patterns", "busybox:1.36", []string{"nginx:*", "busybox:*"}, true},
		{"empty patterns", "nginx:latest", []string{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := kyvernoMatches(c.patterns, []string{c.image}); got != c.want {
				t.Errorf("kyvernoMatches(%q, %q) = %v, Kyverno's table says %v", c.patterns, c.image, got, c.want)
			}
		})
	}
}

// TestKyvernoNameTable: the name Kyverno matches imageReferences against
// (ImageInfo.String()) for an image as written, from Kyverno's
// pkg/utils/image/infos_test.go (Test_GetImageInfo, Test_addDefaultRegistry
// and Test_ParseError, the cases with Kyverno's defaults: defaultRegistry
// docker.io, enableDefaultRegistryMutation true), held to
// imageref.KyvernoName.
func TestKyvernoNameTable(t *testing.T) {
	for _, c := range []struct {
		written, want string // want "" : an error
	}{
		{"nginx", "docker.io/nginx:latest"},
		{"nginx:v10.3", "docker.io/nginx:v10.3"},
		{"docker.io/test/nginx:v10.3", "docker.io/test/nginx:v10.3"},
		{"test/nginx", "docker.io/test/nginx:latest"},
		{"localhost:4443/test/nginx", "localhost:4443/test/nginx:latest"},
		{"docker.io/test/centos@sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f",
			"docker.io/test/centos@sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f"},
		{"test/nginx:v10.3", "docker.io/test/nginx:v10.3"},
		{"localhost/netd:v0.4.4-gke.0", "localhost/netd:v0.4.4-gke.0"},
		{"myregistry.org/test/nginx:v10.3", "myregistry.org/test/nginx:v10.3"},
		{"test/centos@sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f",
			"docker.io/test/centos@sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f"},
		{"++", ""},
	} {
		got, err := imageref.KyvernoName(c.written)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("KyvernoName(%q) = %q, Kyverno's table says it does not parse", c.written, got)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("KyvernoName(%q) = %q, %v; Kyverno's table says %q", c.written, got, err, c.want)
		}
	}
}

// TestGlobPolicyControllerTable: sigstore/policy-controller's
// pkg/apis/glob/glob_test.go (f925c0c1, TestGlobMatch), held to
// globMatches on the image as policy-controller's webhook names it. The
// table tests glob.Match(glob, image) on the image as given, whose
// "deprecated fallback" tries the image string itself when ref.Name()
// does not match; but the webhook and the policy verifier call it with
// ref.Name() (pkg/webhook/validator.go validateContainerImage,
// pkg/policy/verifier.go: GetMatchingPolicies(ref.Name(), ...)), where
// ref.Name() == image and the fallback never runs. Those cases carry
// webhook: the answer admission gives, which regcheck must give.
func TestGlobPolicyControllerTable(t *testing.T) {
	const dig = "sha256:5504f2a95018e3d8a52d80d9e1a128c6ea337581808ff9fe96f5628ce2336350"
	no := false
	for _, c := range []struct {
		image, glob string
		wantMatch   bool
		webhook     *bool // the webhook's answer, where it is not wantMatch
	}{
		{image: "foo", glob: "index.docker.io/library/foo:latest", wantMatch: true},
		{image: "foo", glob: "index.docker.io/library/foo:*", wantMatch: true},
		{image: "foo", glob: "index.docker.io/library/*", wantMatch: true},
		{image: "foo", glob: "index.docker.io/library/*:latest", wantMatch: true},
		{image: "foo", glob: "index.docker.io/*/*", wantMatch: true},
		{image: "foo", glob: "index.docker.io/**", wantMatch: true},
		{image: "foo", glob: "index.docker.**", wantMatch: true},
		{image: "foo", glob: "inde**", wantMatch: true},
		{image: "foo", glob: "**", wantMatch: true},
		{image: "foo", glob: "foo", wantMatch: true, webhook: &no},   // the deprecated fallback
		{image: "foo", glob: "foo*", wantMatch: true, webhook: &no},  // the deprecated fallback
		{image: "foo", glob: "foo**", wantMatch: true, webhook: &no}, // the deprecated fallback

		{image: "myuser/myapp", glob: "index.docker.io/myuser/myapp:latest", wantMatch: true},
		{image: "myuser/myapp", glob: "index.docker.io/myuser/myapp:*", wantMatch: true},
		{image: "myuser/myapp", glob: "index.docker.io/myuser/*", wantMatch: true},
		{image: "myuser/myapp", glob: "index.docker.io/myuser/*:latest", wantMatch: true},
		{image: "myuser/myapp", glob: "index.docker.io/*/*", wantMatch: true},
		{image: "myuser/myapp", glob: "index.docker.io/**", wantMatch: true},
		{image: "myuser/myapp", glob: "index.docker.**", wantMatch: true},
		{image: "myuser/myapp", glob: "inde**", wantMatch: true},
		{image: "myuser/myapp", glob: "**", wantMatch: true},
		{image: "myuser/myapp", glob: "myuser/myapp", wantMatch: true, webhook: &no},   // the deprecated fallback
		{image: "myuser/myapp", glob: "myuser/myapp*", wantMatch: true, webhook: &no},  // the deprecated fallback
		{image: "myuser/myapp", glob: "myuser/myapp**", wantMatch: true, webhook: &no}, // the deprecated fallback

		// Fully qualified refs and globs.
		{image: "ghcr.io/foo/bar", glob: "ghcr.io/*/*", wantMatch: true},
		{image: "ghcr.io/foo/bar", glob: "ghcr.io/**", wantMatch: true},
		{image: "ghcr.io/foo", glob: "ghcr.io/*/*", wantMatch: false},
		{image: "ghcr.io/foo", glob: "ghcr.io/**", wantMatch: true},
		{image: "ghcr.io/foo", glob: "ghc**", wantMatch: true},
		{image: "ghcr.io/foo", glob: "**", wantMatch: true},
		{image: "ghcr.io/foo", glob: "*/**", wantMatch: true},
		{image: "ghcr.io/foo", glob: "ghcr.io/foo*", wantMatch: true},
		{image: "ghcr.io/foo", glob: "ghcr.io/foo**", wantMatch: true},

		// Various error cases.
		{image: "prefix-ghcr.io/foo", glob: "ghcr.io/foo", wantMatch: false},
		{image: "ghcr.io/foo-suffix", glob: "ghcr.io/foo", wantMatch: false},
		{image: "ghcrxio/foo", glob: "ghcr.io/**", wantMatch: false},
		{image: "invalid&name", glob: "**", wantMatch: false},
		{image: "invalid-glob", glob: ".+", wantMatch: false},
		{image: "invalid-glob", glob: "[a-z]*", wantMatch: false},

		// Upgrading unqualified globs to assume index.docker.io prefix.
		{image: "foo", glob: "*", wantMatch: true},
		{image: "myuser/myapp", glob: "*/*", wantMatch: true},

		// Image with digest (exact match)
		{image: "ghcr.io/foo@" + dig, glob: "ghcr.io/foo@" + dig, wantMatch: true},

		// Not in the table: a tag and a digest. go-containerregistry's
		// Digest.Name() is repository@digest (pkg/name/digest.go), so the
		// tag is not matched.
		{image: "ghcr.io/foo:v1@" + dig, glob: "ghcr.io/foo:v1*", wantMatch: false},
		{image: "ghcr.io/foo:v1@" + dig, glob: "ghcr.io/foo@sha256:*", wantMatch: true},
	} {
		t.Run(c.image+"|"+c.glob, func(t *testing.T) {
			want := c.wantMatch
			if c.webhook != nil {
				want = *c.webhook
			}
			got := false
			if ref, err := imageref.Parse(c.image); err == nil {
				got = globMatches([]string{c.glob}, ref)
			}
			if got != want {
				t.Errorf("globMatches(%q) on %q = %v, policy-controller's answer is %v", c.glob, c.image, got, want)
			}
		})
	}
}
