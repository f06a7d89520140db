// Package imageref parses an image reference once, the way container runtimes read it, for every package that names or matches images.
package imageref
