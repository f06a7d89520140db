package admission

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// kyvernoTestCert is the Fulcio certificate of Kyverno v1.19.1's own
// TestCosignMatchCertificateData (pkg/image/verifiers/cpol/cosign/
// verifier_test.go): a GitHub Actions identity, its workflow extensions
// set.
const kyvernoTestCert = "-----BEGIN CERTIFICATE-----\nMIIDtzCCAzygAwIBAgIUX9MdOHZMlRONmc0Iu3DtiLXLVLYwCgYIKoZIzj0EAwMw\nNzEVMBMGA1UEChMMc2lnc3RvcmUuZGV2MR4wHAYDVQQDExVzaWdzdG9yZS1pbnRl\ncm1lZGlhdGUwHhcNMjIxMDA3MTkyNDI0WhcNMjIxMDA3MTkzNDI0WjAAMFkwEwYH\nKoZIzj0CAQYIKoZIzj0DAQcDQgAE0+a5/FhwY4fREWP++3V4rciGiqWGRgHaiP1z\nSlWihKkU71sBVeTzjdrcN8wXzBAefqh5URBfCeE8pJRfQsVKxKOCAlswggJXMA4G\nA1UdDwEB/wQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDAzAdBgNVHQ4EFgQUJy79\nhpkwHtXtLWOvFu/icY56bwgwHwYDVR0jBBgwFoAU39Ppz1YkEZb5qNjpKFWixi4Y\nZD8wbgYDVR0RAQH/BGQwYoZgaHR0cHM6Ly9naXRodWIuY29tL0ppbUJ1Z3dhZGlh\nL2RlbW8tamF2YS10b21jYXQvLmdpdGh1Yi93b3JrZmxvd3MvcHVibGlzaC55YW1s\nQHJlZnMvdGFncy92MC4wLjIyMDkGCisGAQQBg78wAQEEK2h0dHBzOi8vdG9rZW4u\nYWN0aW9ucy5naXRodWJ1c2VyY29udGVudC5jb20wEgYKKwYBBAGDvzABAgQEcHVz\naDA2BgorBgEEAYO/MAEDBChjNzY0NTI4NGZhN2FlYmU1NTQ2MThlZWU4NzliNGQ2\nOTQ3Zjg1NjRlMB8GCisGAQQBg78wAQQEEWJ1aWxkLXNpZ24tYXR0ZXN0MCoGCisG\nAQQBg78wAQUEHEppbUJ1Z3dhZGlhL2RlbW8tamF2YS10b21jYXQwHwYKKwYBBAGD\nvzABBgQRcmVmcy90YWdzL3YwLjAuMjIwgYoGCisGAQQB1nkCBAIEfAR6AHgAdgAI\nYJLwKFL/aEXR0WsnhJxFZxisFj3DONJt5rwiBjZvcgAAAYOz5+pbAAAEAwBHMEUC\nIBb8fwsLBOu+qJkL6UhT4pwGvRVAN2n74BF1BL703rqPAiEAznbfgYJbqA+JIUiQ\nwwLiFOD8pqidSl+HhW8Lhdg3o+wwCgYIKoZIzj0EAwMDaQAwZgIxAJIBIkZBhM+K\nkBIFNeuWBsyVaAcFRallz3C8jvPQCPbec0ZpIsw624dUs8zD3c96AQIxALf875rt\n+oZgwE6hsDazJzoTcBZ1mYVF6bAlwVdtMiC98aApG6T+qaBirxSgu7IGQw==\n-----END CERTIFICATE-----\n"

// TestKyvernoCertMatch holds kyvernoCert to the cases of Kyverno's own
// TestCosignMatchCertificateData, each with the error Kyverno asserts
// ("" where it asserts none), plus the cases the issue found it differs
// from cosign's exact identities on.
func TestKyvernoCertMatch(t *testing.T) {
	b, _ := pem.Decode([]byte(kyvernoTestCert))
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	const (
		subject   = "https://github.com/JimBugwadia/demo-java-tomcat/.github/workflows/publish.yaml@refs/tags/*"
		subjectRE = `https://github\.com/JimBugwadia/demo-java-tomcat/.+`
		issuer    = "https://token.actions.githubusercontent.com"
		issuerRE  = `https://token\.actions\..+`
		san       = "https://github.com/JimBugwadia/demo-java-tomcat/.github/workflows/publish.yaml@refs/tags/v0.0.22"
	)
	ext := map[string]string{"githubWorkflowTrigger": "push", "githubWorkflowSha": "c7645284fa7aebe554618eee879b4d6947f8564e",
		"githubWorkflowName": "build-sign-attest", "githubWorkflowRepository": "JimBugwadia/demo-java-tomcat"}
	for _, tt := range []struct {
		name string
		k    kyvernoCert
		want string
	}{
		{"subject wildcard, issuer, extensions", kyvernoCert{subject: subject, issuer: issuer, extensions: ext}, ""},
		{"issuer and extensions", kyvernoCert{issuer: issuer, extensions: ext}, ""},
		{"subject wildcard and issuer", kyvernoCert{subject: subject, issuer: issuer}, ""},
		{"regexps", kyvernoCert{subjectRegExp: subjectRE, issuerRegExp: issuerRE}, ""},
		{"issuer regexp alone", kyvernoCert{issuerRegExp: issuerRE}, ""},
		{"all four", kyvernoCert{subject: subject, subjectRegExp: subjectRE, issuer: issuer, issuerRegExp: issuerRE}, ""},
		{"subject regexp mismatch", kyvernoCert{subjectRegExp: "^wrong-regex$", issuer: issuer, issuerRegExp: issuerRE},
			"subject mismatch: expected ^wrong-regex$, received " + san},
		{"issuer regexp mismatch", kyvernoCert{issuerRegExp: "^wrong-regex$"},
			"issuer mismatch: expected ^wrong-regex$, received " + issuer},
		{"subject mismatch", kyvernoCert{subject: "wrong-subject", issuer: issuer, extensions: ext},
			"subject mismatch: expected wrong-subject, received " + san},
		{"invalid subject regexp", kyvernoCert{subjectRegExp: "*", issuerRegExp: issuerRE},
			"invalid regexp for subject: * : error parsing regexp: missing argument to repetition operator: `*`"},
		{"invalid issuer regexp", kyvernoCert{subjectRegExp: subjectRE, issuerRegExp: "?"},
			"invalid regexp for issuer: ? : error parsing regexp: missing argument to repetition operator: `?`"},
		{"extension mismatch", kyvernoCert{subject: subject, issuer: issuer, extensions: map[string]string{"githubWorkflowTrigger": "pull"}},
			"extension mismatch: expected pull for key githubWorkflowTrigger, received push"},
		// Beyond Kyverno's table: what cosign's exact identities get wrong.
		{"subject given, subject regexp wrong: either matches", kyvernoCert{subject: subject, subjectRegExp: "^wrong$"}, ""},
		{"issuer wildcard", kyvernoCert{issuer: "https://token.actions.*"}, ""},
		{"extension by OID", kyvernoCert{extensions: map[string]string{"1.3.6.1.4.1.57264.1.2": "pu*"}}, ""},
		{"unknown extension", kyvernoCert{extensions: map[string]string{"githubWorkflowRunner": "x"}}, "invalid certificate extension githubWorkflowRunner"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.k.match(cert)
			if got := errText(err); got != tt.want {
				t.Errorf("match: %q, Kyverno says %q", got, tt.want)
			}
		})
	}
}

// errText is err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
