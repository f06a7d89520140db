// Package protect shields in-use images from a registry garbage collection with keep-tags, and proves the shield with the collector's own model.
package protect
