package work_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// A `git worktree add` cut off by Ctrl-C leaves the worktree registered,
// locked "initializing" and unpopulated (no index, no files). The resumed
// phase must not use it: its leftover commit would delete every file. It
// is set aside and made again.
func TestRunRecreatesUnpopulatedWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.gitIn(f.top, "worktree", "add", "-q", "--no-checkout", "-b", "auto/p1", f.wt(), "main")
	f.gitIn(f.top, "worktree", "lock", "--reason", "initializing", f.wt())
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent("echo work > work.txt\n" + doneBody)
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v, want OK", o)
	}
	for _, p := range []string{"README.md", "roadmap/p2-second.md", manifestRel, doneRel, "work.txt"} {
		if !f.hasFile("auto/p1", p) {
			t.Errorf("auto/p1 lacks %s", p)
		}
	}
	if aside, _ := filepath.Glob(f.wt() + ".broken-*"); len(aside) != 1 {
		t.Errorf("the unpopulated worktree was not set aside: %v", aside)
	}
	if out := f.gitIn(f.top, "worktree", "list", "--porcelain"); strings.Contains(out, "locked") {
		t.Errorf("a worktree is still locked:\n%s", out)
	}
}

// A kill can cut `git worktree add` off after it created the admin
// folder's commondir and before it wrote it (CI: TestCrashResumeStacked).
// An empty commondir makes every `git worktree list` of the repository
// die ("failed to read .git/worktrees/p1/commondir"), so every phase
// failed with reason worktree until a human cleaned up. The runner sets
// the worktree aside and makes it again, as for any cut-off add.
func TestRunRecreatesWorktreeCutOffBeforeCommondir(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.gitIn(f.top, "worktree", "add", "-q", "--no-checkout", "-b", "auto/p1", f.wt(), "main")
	f.gitIn(f.top, "worktree", "lock", "--reason", "initializing", f.wt())
	admin := strings.TrimSpace(f.gitIn(f.wt(), "rev-parse", "--absolute-git-dir"))
	if err := os.WriteFile(filepath.Join(admin, "commondir"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.Command("git", "-C", f.top, "worktree", "list").CombinedOutput(); err == nil {
		t.Fatal("git lists worktrees with an empty commondir: the test does not reproduce the crash")
	}
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent("echo work > work.txt\n" + doneBody)
	if o := f.run(j); !o.OK {
		t.Fatalf("outcome = %+v, want OK", o)
	}
	if !f.hasFile("auto/p1", "work.txt") || !f.hasFile("auto/p1", "README.md") {
		t.Errorf("auto/p1 lacks the agent's work or the base's files")
	}
	if aside, _ := filepath.Glob(f.wt() + ".broken-*"); len(aside) != 1 {
		t.Errorf("the cut-off worktree was not set aside: %v", aside)
	}
}

// In depth: a leftover commit never deletes a tracked file that was
// already missing when the agent started; it is refused (reason
// worktree). A file the agent itself deletes is committed as usual.
func TestLeftoversNeverDeleteUntouchedFiles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"work.txt": "earlier\n", "old.txt": "old\n"}, true)
	if err := os.Remove(filepath.Join(f.wt(), "README.md")); err != nil {
		t.Fatal(err)
	}
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent("echo more > more.txt\nexit 1\n")
	o := f.run(j)
	if o.Reason != state.ReasonWorktree || !strings.Contains(o.Detail, "README.md") {
		t.Fatalf("outcome = %+v, want Reason worktree naming README.md", o)
	}
	if !f.hasFile("auto/p1", "README.md") || f.hasFile("auto/p1", "more.txt") {
		t.Errorf("the refused leftover commit was made")
	}
	// The checkout repaired: the agent's own deletion is its work.
	f.gitIn(f.wt(), "checkout", "--", "README.md")
	j.Resume, j.Attempt = false, 2
	f.runner.Agent = f.agent("rm old.txt\nexit 1\n")
	if o := f.run(j); o.Reason != state.ReasonExit {
		t.Fatalf("outcome = %+v, want Reason exit", o)
	}
	if f.hasFile("auto/p1", "old.txt") || !f.hasFile("auto/p1", "more.txt") || !f.hasFile("auto/p1", "README.md") {
		t.Errorf("auto/p1: want old.txt deleted, more.txt and README.md committed")
	}
}

// An agent that deletes its worktree's .git file and is then stopped: git
// in the worktree folder would work on the main repository. Nothing is
// committed there, and its index.lock is left alone.
func TestLeftoversNeverReachTheMainRepository(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := f.rev("main")
	f.write(f.top, "README.md", "the user's edit\n")
	f.write(f.top, ".env", "AWS_SECRET_ACCESS_KEY=x\n")
	ready := filepath.Join(f.tmp, "ready")
	f.runner.KillGrace = 500 * time.Millisecond
	f.runner.Agent = f.agent("echo work > work.txt\nrm .git\ntouch '" + ready + "'\nsleep 30\n")
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	lock := filepath.Join(f.top, ".git", "index.lock")
	go func() {
		for !exists(ready) {
			time.Sleep(20 * time.Millisecond)
		}
		// The user's own git holds the main index now.
		os.WriteFile(lock, nil, 0o644)
		cancel()
	}()
	o := f.runner.Run(ctx, job(), nil)
	if o.Reason != state.ReasonWorktree {
		t.Errorf("outcome = %+v, want Reason worktree", o)
	}
	if !exists(lock) {
		t.Fatal("the main repository's index.lock was removed")
	}
	os.Remove(lock)
	if got := f.rev("main"); got != base {
		t.Errorf("main moved: %s", f.gitIn(f.top, "log", "--stat", "-1", "main"))
	}
	if st := f.gitIn(f.top, "status", "--porcelain"); !strings.Contains(st, " M README.md") || !strings.Contains(st, "?? .env") {
		t.Errorf("main checkout status = %q, want README.md modified and .env untracked", st)
	}
}

// What WORKTREE_PREPARE_CMD leaves untracked is environment, not work: a
// leftover commit leaves it out. Files with conflict markers stay out too.
func TestLeftoversLeaveOutEnvironmentAndMarkers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	local := filepath.Join(f.tmp, "local.env")
	f.write(f.tmp, "local.env", "API_TOKEN=s3cr3t\n")
	f.runner.Prepare = "cp '" + local + "' .env && mkdir -p cfg && echo gen > cfg/gen.cfg"
	f.runner.Agent = f.agent(`echo work > work.txt
echo changed >> .env
printf 'a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> main\n' > clash.txt
printf 'Title\n=======\n' > heading.md
exit 1
`)
	o := f.run(job())
	if o.Reason != state.ReasonExit {
		t.Fatalf("outcome = %+v, want Reason exit", o)
	}
	if !f.hasFile("auto/p1", "work.txt") || !f.hasFile("auto/p1", "heading.md") {
		t.Errorf("the agent's work was not committed")
	}
	for _, p := range []string{".env", "cfg/gen.cfg", "clash.txt"} {
		if f.hasFile("auto/p1", p) {
			t.Errorf("the leftover commit took %s", p)
		}
		if !exists(filepath.Join(f.wt(), p)) {
			t.Errorf("%s is gone from the worktree", p)
		}
	}
}

// A lock in a phase worktree is not stale while a process still works
// there (a killed driver's git, say): it is left alone and the attempt
// fails closed.
func TestRunKeepsLockWhileAProcessWorksThere(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"work.txt": "earlier\n"}, true)
	gitDir := f.gitIn(f.wt(), "rev-parse", "--absolute-git-dir")
	lock := filepath.Join(gitDir, "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "60")
	sleeper.Dir = f.wt()
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent(doneBody)
	if o := f.run(j); o.Reason != state.ReasonWorktree || !strings.Contains(o.Detail, "still works") {
		t.Fatalf("outcome = %+v, want Reason worktree", o)
	}
	if !exists(lock) {
		t.Error("the lock was removed")
	}
}

// OwnGitDir accepts a phase worktree and refuses the main checkout and a
// folder inside it.
func TestOwnGitDir(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"work.txt": "earlier\n"}, true)
	if _, err := work.OwnGitDir(f.ctx, f.git, f.wt()); err != nil {
		t.Errorf("a phase worktree: %v", err)
	}
	if _, err := work.OwnGitDir(f.ctx, f.git, f.top); err == nil {
		t.Error("the main checkout passed")
	}
	// A `git worktree add` killed half-way leaves an empty commondir,
	// which git refuses to work on.
	gd, err := work.OwnGitDir(f.ctx, f.git, f.wt())
	if err != nil {
		t.Fatal(err)
	}
	cd, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gd, "commondir"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := work.OwnGitDir(f.ctx, f.git, f.wt()); err == nil {
		t.Error("a worktree whose admin folder has an empty commondir passed")
	}
	if err := os.WriteFile(filepath.Join(gd, "commondir"), cd, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gd, "HEAD"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := work.OwnGitDir(f.ctx, f.git, f.wt()); err == nil {
		t.Error("a worktree whose admin folder has an empty HEAD passed")
	}
	os.Remove(filepath.Join(f.wt(), ".git"))
	if _, err := work.OwnGitDir(f.ctx, f.git, f.wt()); err == nil {
		t.Error("a worktree without its .git passed")
	}
}

// A worktree left in a merge of the base with conflicts (the driver was
// killed while a supervisor resolved them, or during the merge itself)
// resumes as a conflict for the supervisor: no agent runs, no gate runs
// over the markers, and it is no attempt (Found).
func TestRunResumeOverUnfinishedMerge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"README.md": "the branch's\n"}, true)
	f.moveMain("main moves", map[string]string{"README.md": "main's\n"})
	if _, err := f.git.GitIn(f.ctx, f.wt(), "merge", "--no-edit", "main"); err == nil {
		t.Fatal("the merge did not conflict")
	}
	ran := filepath.Join(f.tmp, "ran")
	f.runner.Agent = f.agent("touch '" + ran + "'\n" + doneBody)
	j := job()
	j.Resume = true
	o := f.run(j)
	if o.Reason != state.ReasonConflict || !o.Found || !strings.Contains(o.Detail, "README.md") {
		t.Fatalf("outcome = %+v, want a found conflict naming README.md", o)
	}
	if exists(ran) {
		t.Error("the worker ran over the unfinished merge")
	}
	// The supervisor for the conflict gets the merge as it is.
	f.runner.Super = f.agent(`grep -q '^<<<<<<<' README.md || exit 30
echo resolved > README.md && git add README.md && git commit -q --no-edit
` + doneBody)
	j.Role, j.Failure, j.Detail = state.Supervisor, state.ReasonConflict, o.Detail
	if o := f.run(j); !o.OK {
		t.Fatalf("supervisor outcome = %+v, want OK", o)
	}
}

// The built-in script agent's own commit leaves prepare's environment out
// too.
func TestScriptAgentLeavesOutEnvironment(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.commitOn(f.top, "doc", map[string]string{docRel: "# p1\n\n```sh\necho scripted > out.txt\n```\n"})
	f.runner.Prepare = "echo API_TOKEN=x > .env && mkdir -p 'sp ace' && echo gen > 'sp ace/g.cfg'"
	f.runner.Agent = work.ScriptAgent
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome = %+v, want OK", o)
	}
	if !f.hasFile(o.Tip, "out.txt") || !f.hasFile(o.Tip, doneRel) {
		t.Error("the script's work was not committed")
	}
	for _, p := range []string{".env", "sp ace/g.cfg"} {
		if f.hasFile(o.Tip, p) {
			t.Errorf("the script agent committed %s", p)
		}
	}
}

// An agent's daemon (setsid, its parent gone) that keeps committing is
// stopped before the gate runs: the gate here passes only when it is dead.
func TestRunStopsAgentDaemonBeforeGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pid := filepath.Join(f.tmp, "daemon.pid")
	// The daemon starts committing once the agent's own last commit is
	// made (the go file), as a leftover does: the two never race for the
	// index, and what it commits after the agent exits is what the driver
	// must stop before the gate.
	f.runner.Agent = f.agent(`setsid sh -c 'echo $$ > "` + pid + `.tmp" && mv "` + pid + `.tmp" "` + pid + `"; while [ ! -e "` + pid + `.go" ]; do sleep 0.01; done; while :; do date >> daemon.txt; git add daemon.txt; git commit -qm daemon; sleep 0.05; done' </dev/null >/dev/null 2>&1 &
while [ ! -s '` + pid + `' ]; do sleep 0.01; done
` + doneBody + `
touch '` + pid + `.go'
`)
	j := job()
	// A zombie (killed, waiting for an init that does not reap) is dead.
	j.Gate = `s=$(cut -d' ' -f3 "/proc/$(cat '` + pid + `')/stat" 2>/dev/null); [ -z "$s" ] || [ "$s" = Z ] || { echo "the daemon still runs"; exit 1; }`
	o := f.run(j)
	b, _ := os.ReadFile(pid)
	if n := strings.TrimSpace(string(b)); n != "" {
		defer exec.Command("kill", "-9", n).Run()
	}
	if !o.OK {
		t.Fatalf("outcome = %+v, want OK (the gate saw the daemon alive?)", o)
	}
}

// The notes about a worktree live in the driver's state folder, out of an
// agent's reach, and a worktree made anew starts without old ones: a note
// a killed driver left for an earlier worktree does not refuse this
// agent's own deletion.
func TestNotesStartOverWithAFreshWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	note := filepath.Join(f.layout.StateDir(), "attempt-p1")
	f.write(f.layout.StateDir(), "attempt-p1", "README.md\x00")
	f.runner.Agent = f.agent("rm README.md\nexit 1\n")
	if o := f.run(job()); o.Reason != state.ReasonExit {
		t.Fatalf("outcome = %+v, want Reason exit", o)
	}
	if f.hasFile("auto/p1", "README.md") {
		t.Error("the agent's own deletion was not committed")
	}
	if exists(note) {
		t.Error("the attempt's note outlived the attempt")
	}
}
