//go:build !linux

package worktree

import "os/exec"

// dieWithUs has no parent-death signal to use outside Linux.
func dieWithUs(*exec.Cmd) {}
