package credprovider

import (
	"sync"
	"time"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// globalCacheKey is the one key of a Global cacheKeyType response.
const globalCacheKey = "global"

// cache holds one provider's responses until they expire, keyed as the
// response's cacheKeyType says: by image, by registry, or one for all.
type cache struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	auth    map[string]credentialproviderv1.AuthConfig
	expires time.Time
}

func newCache(now func() time.Time) *cache {
	return &cache{now: now, entries: map[string]cacheEntry{}}
}

// get returns the unexpired auth map cached for image: under the image,
// else its registry, else the global key, in the kubelet's order.
func (c *cache) get(image string) (map[string]credentialproviderv1.AuthConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for _, key := range []string{image, registryOf(image), globalCacheKey} {
		e, ok := c.entries[key]
		if !ok {
			continue
		}
		if now.After(e.expires) {
			delete(c.entries, key)
			continue
		}
		return e.auth, true
	}
	return nil, false
}

// put caches auth under key until expires, and drops expired entries.
func (c *cache) put(key string, auth map[string]credentialproviderv1.AuthConfig, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, e := range c.entries {
		if now.After(e.expires) {
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry{auth: auth, expires: expires}
}

// cacheKey is the key a response is cached under for image, or false for a
// cacheKeyType the kubelet does not know (it then uses no part of the
// response).
func cacheKey(t credentialproviderv1.PluginCacheKeyType, image string) (string, bool) {
	switch t {
	case credentialproviderv1.ImagePluginCacheKeyType:
		return image, true
	case credentialproviderv1.RegistryPluginCacheKeyType:
		return registryOf(image), true
	case credentialproviderv1.GlobalPluginCacheKeyType:
		return globalCacheKey, true
	}
	return "", false
}

// expiry says until when a response is cached: its cacheDuration, else the
// provider's defaultCacheDuration; zero (either way) is not cached at all.
func expiry(now time.Time, resp *credentialproviderv1.CredentialProviderResponse, def time.Duration) (time.Time, bool) {
	d := def
	if resp.CacheDuration != nil {
		d = resp.CacheDuration.Duration
	}
	if d == 0 {
		return time.Time{}, false
	}
	return now.Add(d), true
}
