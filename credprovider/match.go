package credprovider

import (
	"maps"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// parseSchemeless parses a registry pattern or image name, which has no
// scheme, as a URL (the kubelet's ParseSchemelessURL).
func parseSchemeless(s string) (*url.URL, error) {
	u, err := url.Parse("https://" + s)
	if err != nil {
		return nil, err
	}
	u.Scheme = ""
	return u, nil
}

// splitHost returns the dot-separated labels of u's host and its port.
func splitHost(u *url.URL) (labels []string, port string) {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Host, ""
	}
	return strings.Split(host, "."), port
}

// matches reports whether image matches pattern as the kubelet's URLsMatch
// decides: the same number of host labels, each label matching its glob
// (a glob matches within one label: *.io does not match a.b.io), the same
// port (none matches none only), and the pattern's path a string prefix of
// the image's. A pattern or image that does not parse matches nothing.
func matches(pattern, image string) bool {
	p, err := parseSchemeless(pattern)
	if err != nil {
		return false
	}
	t, err := parseSchemeless(image)
	if err != nil {
		return false
	}
	pLabels, pPort := splitHost(p)
	tLabels, tPort := splitHost(t)
	if pPort != tPort || len(pLabels) != len(tLabels) || !strings.HasPrefix(t.Path, p.Path) {
		return false
	}
	for i, glob := range pLabels {
		// path.Match is filepath.Match on Linux, where the kubelet runs it,
		// and the same on every platform regcheck runs on.
		if ok, err := path.Match(glob, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// registryOf is the cache key of a Registry cacheKeyType: the image's first
// path segment, its host and port (the kubelet's parseRegistry).
func registryOf(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}

// keyring orders the credentials that providers return as the kubelet's
// BasicDockerKeyring does: keys normalized, then reverse-sorted, so that a
// longer key comes before a shorter one it extends and a plain label
// before a glob; for one key, the credentials in the order providers
// returned them (the earlier provider in the config first).
type keyring struct {
	index []string
	creds map[string][]*Credential
}

// add adds one provider's auth map.
func (k *keyring) add(provider string, auth map[string]credentialproviderv1.AuthConfig) {
	if k.creds == nil {
		k.creds = map[string][]*Credential{}
	}
	// Sorted, so that two patterns that normalize to one key keep an order.
	for _, pattern := range slices.Sorted(maps.Keys(auth)) {
		key, ok := normalizeKey(pattern)
		if !ok {
			continue // the kubelet logs and ignores an entry it cannot parse
		}
		a := auth[pattern]
		if _, seen := k.creds[key]; !seen {
			k.index = append(k.index, key)
		}
		k.creds[key] = append(k.creds[key], &Credential{Provider: provider, Pattern: pattern, Username: a.Username, password: a.Password})
	}
	slices.Sort(k.index)
	slices.Reverse(k.index)
}

// lookup returns the credentials whose key matches image, best first. With
// none, an image on Docker Hub gets those for index.docker.io.
func (k *keyring) lookup(image string) []*Credential {
	var out []*Credential
	for _, key := range k.index {
		if matches(key, image) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(image) {
		out = append(out, k.creds[dockerHubKey]...)
	}
	return out
}

const dockerHubKey = "index.docker.io"

// normalizeKey turns an auth key into the keyring's form: no scheme, and a
// /v1/ or /v2/ path prefix taken as the host alone, as docker does.
func normalizeKey(pattern string) (string, bool) {
	v := pattern
	if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
		v = "https://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", false
	}
	p := u.Path
	if strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/v1/") {
		p = p[3:]
	}
	if p == "" || p == "/" {
		return u.Host, true
	}
	return u.Host + p, true
}

// isDockerHub reports whether image is pulled from Docker Hub, by docker's
// rule (the kubelet's isDefaultRegistryMatch).
func isDockerHub(image string) bool {
	first, _, hasSlash := strings.Cut(image, "/")
	switch {
	case first == "":
		return false
	case !hasSlash:
		return true
	case first == "docker.io" || first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}
