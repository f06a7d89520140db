// Package gc reads a distribution registry's filesystem storage and predicts, digest for digest, what its garbage collector would delete and which images that breaks.
package gc
