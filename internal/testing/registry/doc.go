// Package registry runs a real distribution registry binary as a process
// on 127.0.0.1 with filesystem storage, for the demo and the integration tests.
package registry
