package credprovider

import (
	"strings"
	"testing"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// fuzzSecret is an env value the seeds plant; no error may hold it.
const fuzzSecret = "fuzzenv9secret"

// configSeeds are CredentialProviderConfig files: the shapes the tests
// write, in JSON and YAML, each version, and broken ones.
var configSeeds = []string{
	`{"apiVersion":"kubelet.config.k8s.io/v1","kind":"CredentialProviderConfig","providers":[{"name":"ecr","apiVersion":"credentialprovider.kubelet.k8s.io/v1","matchImages":["*.dkr.ecr.*.amazonaws.com"],"defaultCacheDuration":"12h","args":["get-credentials"],"env":[{"name":"AWS_PROFILE","value":"` + fuzzSecret + `"}]}]}`,
	"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: CredentialProviderConfig\nproviders:\n- name: gcr\n  apiVersion: credentialprovider.kubelet.k8s.io/v1beta1\n  matchImages: [\"gcr.io\", \"*.pkg.dev\"]\n  defaultCacheDuration: 1m\n",
	"apiVersion: kubelet.config.k8s.io/v1alpha1\nkind: CredentialProviderConfig\nproviders: []\n",
	"apiVersion: kubelet.config.k8s.io/v1\nproviders:\n- name: p\n  env:\n  - name: PASSWORD\n    value: " + fuzzSecret + "\n",
	"kind: CredentialProviderConfig\nproviders:\n- name: p\n  env: [{name: X, value: " + fuzzSecret + "}]\n",
	"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n- name: p\n  apiVersion: credentialprovider.kubelet.k8s.io/v1\n  matchImages: [\"reg.io\"]\n  defaultCacheDuration: 1m\n  tokenAttributes: {serviceAccountTokenAudience: a, requireServiceAccount: true, cacheType: Token, requiredServiceAccountAnnotationKeys: [\"a/b\"]}\n",
	"apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders: [{name: p, unknown: 1, env: [{name: X, value: " + fuzzSecret + "}]}]\n",
	"{",
}

// FuzzConfig decodes and validates any CredentialProviderConfig, as Load
// does, without panicking; no error quotes the config's env.
func FuzzConfig(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := loadConfig(data)
		if err == nil {
			return
		}
		for _, quoted := range []string{"value: " + fuzzSecret, `"value":"` + fuzzSecret, "value:" + fuzzSecret} {
			if strings.Contains(err.Error(), quoted) {
				t.Errorf("the error quotes the config's env: %v", err)
			}
		}
	})
}

// loadConfig is what Load does with one file's content, but finding the
// plugins: decode, then validate the providers.
func loadConfig(data []byte) error {
	cfg, err := decodeFile("config.yaml", data)
	if err != nil {
		return err
	}
	var sources []source
	for _, p := range cfg.Providers {
		sources = append(sources, source{file: "config.yaml", CredentialProvider: p})
	}
	return validate("config.yaml", sources)
}

// responseSeeds are plugin answers: good ones of each cache key type,
// and the wrong ones the tests' plugin writes.
var responseSeeds = []string{
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"5m","auth":{"reg.io":{"username":"u","password":"p"}}}`,
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"*.reg.io/team":{"username":"u","password":"p"}}}`,
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Global"}`,
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1alpha1","kind":"CredentialProviderResponse","cacheKeyType":"Registry"}`,
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderRequest","image":"reg.io/app"}`,
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","extra":"p"}`,
	`{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Forever","cacheDuration":"-1s"}`,
	"this is not json pass",
}

// FuzzResponse decodes any plugin answer, for each request version,
// without panicking; an answer that decodes is cached and looked up as
// Lookup does; no error quotes the answer's fields.
func FuzzResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range supportedAPIVersions() {
			resp, err := decodeResponse(data, v)
			if err != nil {
				if strings.Contains(err.Error(), `"password"`) {
					t.Errorf("the error quotes the answer: %v", err)
				}
				continue
			}
			useResponse(resp)
		}
	})
}

// useResponse does with a response what fetch and Lookup do.
func useResponse(resp *credentialproviderv1.CredentialProviderResponse) {
	const image = "reg.io/team/app"
	key, ok := cacheKey(resp.CacheKeyType, image)
	if !ok {
		return
	}
	now := newFakeClock().Now
	c := newCache(now)
	if expires, cached := expiry(now(), resp, 0); cached {
		c.put(key, resp.Auth, expires)
	}
	var k keyring
	k.add("p", resp.Auth)
	_ = k.lookup(image)
	_, _ = c.get(image)
}
