// Package credprovider gets registry credentials the way the kubelet does,
// from its credential provider plugins (--image-credential-provider-config
// and --image-credential-provider-bin-dir), as an authn.Keychain.
package credprovider
