// Package loopback gives tests addresses on 127.0.0.1.
package loopback

import (
	"fmt"
	"net"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address nothing listens on: free for a
// server a test starts, or refused for a test of an unreachable host.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Closed is FreeAddr for a test: a 127.0.0.1 address nothing listens on,
// or the test fails.
func Closed(tb testing.TB) string {
	tb.Helper()
	addr, err := FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}
