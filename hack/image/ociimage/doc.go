// Package ociimage assembles regcheck's own container image from a static binary, a CA bundle and a non-root user, with no base image, the same digest for the same inputs.
package ociimage
