package work_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
)

// Issue 21's hostile agents are the scripts in testdata/agents; each test
// runs them without the sandbox and, where bubblewrap is installed, in it.

// hostileAgent is the command that runs testdata/agents/<name>.
func hostileAgent(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "testdata", "agents", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// modes are the sandbox settings a hostile agent runs under: off always,
// bwrap where it is installed.
func modes(t *testing.T) []string {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Log("bubblewrap is not installed: the bwrap half is skipped")
		return []string{sandbox.Off}
	}
	return []string{sandbox.Off, sandbox.Bwrap}
}

// sandboxed confines the fixture's agents with bubblewrap, laid out as the
// driver lays it out (the base checkout hidden).
func (f *fixture) sandboxed() {
	f.runner.Sandbox = &sandbox.Config{Hide: []string{sandbox.Real(f.top)}}
}

// What an agent plants in its worktree's admin folder (or, for nested, a
// repository in its checkout) is never followed or run by the driver's
// own git: the leftover commit that would do it refuses, the attempt fails
// with reason worktree naming the file, and the target is untouched. On
// main the reflog line went to the target, the index was written there,
// and the nested repository's filter ran outside the sandbox.
func TestRunRefusesWhatAnAgentPlantsInTheAdminFolder(t *testing.T) {
	cases := []struct {
		plant, want string
		offOnly     bool
	}{
		{plant: "reflog-link", want: "logs/HEAD in the worktree's admin folder is a symbolic link"},
		{plant: "config-link", want: "logs/HEAD in the worktree's admin folder is a symbolic link"},
		{plant: "index-link", want: "index in the worktree's admin folder is a symbolic link"},
		{plant: "fifo", want: "ORIG_HEAD in the worktree's admin folder is a named pipe"},
		{plant: "hardlink", want: "logs/HEAD in the worktree's admin folder is a hard link", offOnly: true},
		{plant: "nested", want: "holds a repository at sub"},
	}
	for _, mode := range modes(t) {
		for _, c := range cases {
			if c.offOnly && mode != sandbox.Off {
				continue
			}
			t.Run(mode+"/"+c.plant, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t)
				if mode == sandbox.Bwrap {
					f.sandboxed()
				}
				target := filepath.Join(f.tmp, "bashrc")
				before := "# the user's .bashrc\n"
				plant := c.plant
				switch plant {
				case "config-link":
					plant, target = "reflog-link", filepath.Join(f.top, ".git", "config")
					before = f.read(target)
				case "index-link", "nested":
					before = "" // missing: git would make it
				}
				if before != "" && c.plant != "config-link" {
					f.write(filepath.Dir(target), filepath.Base(target), before)
				}
				f.runner.Agent = hostileAgent(t, "i21-admin.sh")
				f.runner.Env = append(f.runner.Env, "PLANT="+plant, "TARGET="+target)
				o := f.run(job())
				if o.OK || o.Reason != scheduler.ReasonWorktree || !strings.Contains(o.Detail, c.want) {
					t.Errorf("outcome OK=%v reason=%s detail=%q; want reason worktree naming %q", o.OK, o.Reason, o.Detail, c.want)
				}
				got, err := os.ReadFile(target)
				switch {
				case before == "" && err == nil:
					t.Errorf("the driver made %s:\n%s", target, got)
				case before != "" && string(got) != before:
					t.Errorf("the driver wrote to %s:\n%s", target, got)
				}
				// Nothing of the leftovers was committed through it.
				if f.hasFile("refs/heads/auto/p1", "leftover.txt") {
					t.Error("the leftover commit ran")
				}
			})
		}
	}
}

// In the sandbox an agent writes objects only to a private store; the
// repository's cannot be rewritten nor have objects deleted or alternates
// planted (issue 21 §3). On main the agent's text replaced README.md's
// blob on the base (git show printed it; only git fsck noticed). Its own
// commits still reach its branch. bwrap only: an unconfined agent is the
// user.
func TestRunSandboxedAgentCannotRewriteTheObjectStore(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed")
	}
	t.Parallel()
	f := newFixture(t)
	f.sandboxed()
	f.runner.Agent = hostileAgent(t, "i21-objects.sh")
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	if got := f.gitIn(f.top, "cat-file", "blob", "main:README.md"); got != "readme" {
		t.Errorf("main:README.md now reads %q", got)
	}
	f.gitIn(f.top, "cat-file", "-e", "main:"+manifestRel)
	if exists(filepath.Join(f.top, ".git", "objects", "info", "alternates")) {
		t.Error("the repository has alternates")
	}
	f.gitIn(f.top, "fsck", "--no-dangling")
	if !f.hasFile("refs/heads/auto/p1", "work/p1.txt") || !f.hasFile("refs/heads/auto/p1", doneRel) {
		t.Error("the agent's own commits did not reach its branch")
	}
}
