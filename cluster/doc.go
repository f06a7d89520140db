// Package cluster checks what a cluster runs against its registries: will
// each container come back after a restart, and with the same bits?
package cluster
