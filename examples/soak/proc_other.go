//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing outside Linux: a soak killed outright leaves
// its server running there.
func dieWithParent(*exec.Cmd) {}
