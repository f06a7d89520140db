//go:build tools

// Package tools records kube-apiserver as a dependency of this module.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
