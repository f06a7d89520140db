// Package rescue puts back, byte for byte, the manifests and blobs a registry lost (a garbage collector's orphans) from where copies still are: a node's containerd content store, an OCI image layout, another registry.
package rescue
