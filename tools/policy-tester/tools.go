//go:build tools

// Package tools records policy-controller's policy-tester as a dependency of
// this module, so that `go build github.com/sigstore/policy-controller/cmd/tester`
// resolves it.
package tools

import _ "github.com/sigstore/policy-controller/cmd/tester"
