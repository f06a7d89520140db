package kubeapi

import "syscall"

// sysProcAttr makes the child die with the test process.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
