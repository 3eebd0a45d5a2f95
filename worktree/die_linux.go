package worktree

import (
	"os/exec"
	"syscall"
)

// dieWithUs makes git die with the driver. A git left running by a
// SIGKILLed driver would go on writing in a worktree while the restarted
// driver clears its lock as stale and runs git there too (seen: conflict
// markers committed as leftovers). The signal comes when the OS thread
// that started git ends; Go ends threads only for goroutines that exit
// locked to one, which this package never does.
func dieWithUs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
