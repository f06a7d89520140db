//go:build !linux

package testkube

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
