package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDieHelper is not a test: TestGitDiesWithTheDriver runs the test
// binary as a "driver" that starts one git which never ends on its own.
func TestDieHelper(t *testing.T) {
	dir, out := os.Getenv("WORKTREE_DIE_DIR"), os.Getenv("WORKTREE_DIE_OUT")
	if dir == "" {
		t.Skip("only a helper")
	}
	c := &Client{Dir: dir, Env: testEnv()}
	// The alias's shell records git's pid (its parent) and its own.
	c.Git(context.Background(), "-c", "alias.hold=!echo $PPID $$ > '"+out+".tmp' && mv '"+out+".tmp' '"+out+"'; sleep 60", "hold")
}

// The driver's git processes die with it: a SIGKILLed driver must not
// leave a git writing in a worktree that the next driver then uses.
func TestGitDiesWithTheDriver(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	out := filepath.Join(t.TempDir(), "pids")
	driver := exec.Command(os.Args[0], "-test.run=^TestDieHelper$")
	driver.Env = append(os.Environ(), "WORKTREE_DIE_DIR="+c.Dir, "WORKTREE_DIE_OUT="+out)
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	// Bounds, not waits: a loaded machine starts the helper binary and its
	// git slowly.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(out); err == nil {
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			break
		}
		if time.Now().After(deadline) {
			driver.Process.Kill()
			t.Fatal("the helper's git never started")
		}
	}
	if len(pids) != 2 {
		t.Fatalf("pids = %v", pids)
	}
	gitPid, shell := pids[0], pids[1]
	defer syscall.Kill(shell, syscall.SIGKILL)
	driver.Process.Signal(syscall.SIGKILL)
	driver.Wait()
	for deadline := time.Now().Add(time.Minute); running(gitPid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(gitPid, syscall.SIGKILL)
			t.Fatalf("git (pid %d) outlived the SIGKILLed driver", gitPid)
		}
	}
}

// running reports whether pid is a live process that is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
