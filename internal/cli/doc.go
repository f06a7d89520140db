// Package cli holds regcheck's commands: each parses its flags, makes one
// library call and renders the result. cmd/regcheck only calls Run.
package cli
