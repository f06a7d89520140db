// Package cache keeps the manifests a walk reads on disk, by digest, under any walk.RawReader.
package cache
