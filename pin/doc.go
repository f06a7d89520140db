// Package pin rewrites image references in manifests to repo:tag@digest, editing only the bytes of each reference.
package pin
