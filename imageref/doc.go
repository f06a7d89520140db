// Package imageref parses an image reference once, the way container runtimes read it, and spells it for each reader: the kubelet, go-containerregistry, Kyverno, policy-controller, a running digest.
package imageref
