//go:build tools

// Package tools records the Kyverno CLI as a dependency of this module, so
// that `go build github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno` resolves it.
package tools

import _ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
