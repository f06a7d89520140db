// Package walk walks an image as a node pulls it (tag, index, child
// manifests, config and layer blobs) over any Reader: a registry, its
// filesystem storage as it is or as a garbage collector would leave it, a
// cache, a node's content store. It is the one place that knows depth and
// size limits, index and attestation rules and media types.
package walk
