package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel send the server SIGTERM if the soak dies
// first (killed, or a closed stdout), so that no server outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
