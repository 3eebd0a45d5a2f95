package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SANDBOX_NET=outside starts no program of its own besides bwrap and
// slirp4netns (issue 25 §2: each helper was a process start per attempt,
// mktemp, mkfifo, tr, readlink twice and rm): run with a PATH that holds
// nothing, the launcher still starts the command, twice on the same jail
// (a relaunch reuses its fifos). The fifos are the jail's, gone once it
// is left.
func TestJailNetworkStartsNoHelper(t *testing.T) {
	needBwrap(t)
	slirp, err := exec.LookPath("slirp4netns")
	if err != nil {
		t.Skip("slirp4netns is not installed")
	}
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := newRepo(t)
	scratch := filepath.Join(r.top, ".claudopilot", "sandbox", "p1")
	c := &Config{Bwrap: bw, Outside: slirp, Hide: []string{r.top}}
	j, err := c.Enter(ctx, r.git, r.p1, "auto/p1", scratch, "")
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for i := range 2 {
		argv := append(j.Wrap(), "/bin/sh", "-c", `read -r x; echo "in=$x"; exit 7`)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = r.p1, []string{"PATH=" + empty}
		cmd.Stdin = strings.NewReader("prompt\n")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 || !strings.Contains(string(out), "in=prompt") {
			t.Fatalf("start %d with an empty PATH: %v, want exit 7 and the input\n%s", i+1, err, out)
		}
	}
	if _, err := j.Leave(ctx, r.git); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "net")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the launcher's fifos outlived the jail: %v", err)
	}
}
