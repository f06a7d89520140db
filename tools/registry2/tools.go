//go:build tools

// Package tools records the registry command as a dependency of this module,
// so that `go build github.com/docker/distribution/cmd/registry` resolves it.
package tools

import _ "github.com/docker/distribution/cmd/registry"
