//go:build tools

// Package tools records the Pushgateway command as a dependency of this
// module.
package tools

import _ "github.com/prometheus/pushgateway"
