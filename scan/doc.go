// Package scan walks container images in their registries, from the tag down
// to every blob, and says which ones a node could no longer pull.
package scan
