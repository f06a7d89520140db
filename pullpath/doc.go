// Package pullpath reads a node's registry configuration and answers, for one image, the ordered endpoints its container runtime would try.
package pullpath
