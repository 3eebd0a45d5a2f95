package issues

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/state"
)

// An issue's files come from the one layout under its graph id "#n": a
// phase whose id is issue-n keeps its own worktree, logs, sandbox and
// review checkouts.
func TestIssuePathsDoNotCollideWithPhase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue("w", &syncBuf{}, nil)
	l := state.Layout{Top: q.git.Dir}
	for _, c := range []struct{ what, issue, phase string }{
		{"worktree", q.WorktreePath(3), l.Worktree("issue-3")},
		{"logs", q.LogDir(3), l.LogDir("issue-3")},
		{"sandbox", q.SandboxDir(3), l.SandboxDir("issue-3")},
		{"review", q.layout().ReviewCheckout(IssueID(3), 1), l.ReviewCheckout("issue-3", 1)},
	} {
		if c.issue == c.phase {
			t.Errorf("issue #3's %s is phase issue-3's: %s", c.what, c.issue)
		}
		if filepath.Dir(c.issue) != filepath.Dir(c.phase) {
			t.Errorf("issue #3's %s %s is not beside the phases' (%s)", c.what, c.issue, c.phase)
		}
	}
}

// A worktree an older version left at .claudopilot/worktrees/issue-N on
// the issue's branch is moved to the layout's place and worked on there.
func TestIssueOldWorktreeMoved(t *testing.T) {
	t.Parallel()
	if !soak() {
		t.Skip("a queue run: CLAUDOPILOT_SOAK=1 only; TestIssueOldWorktreeIsMovedWhenBroughtIn proves the move where the run makes it (bringIn, before the runner takes the layout's worktree)")
	}
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "Add a widget", "Please add a widget.", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, nil)
	old := q.oldWorktreePath(n)
	e.git(q.git.Dir, "worktree", "add", "-q", "-b", Branch(n), old, "main")
	sum := run(t, q, log)
	if sum.Count(Merged) != 1 {
		t.Fatalf("summary %+v\nlog:\n%s\n%s", sum, log, dump(e, n))
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old worktree %s is still there: %v", old, err)
	}
}

// TestIssueOldWorktreeIsMovedWhenBroughtIn is TestIssueOldWorktreeMoved
// without a run: bringing an issue in (what the run does before its
// runner takes the issue's worktree at the layout's place) moves the
// worktree an older version left at .claudopilot/worktrees/issue-N on the
// issue's branch there, with what it held, still on that branch.
func TestIssueOldWorktreeIsMovedWhenBroughtIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "Add a widget", "Please add a widget.", []string{"agent-ready"}, "")
	q := e.queue("w", &syncBuf{}, nil)
	old := q.oldWorktreePath(n)
	e.git(q.git.Dir, "worktree", "add", "-q", "-b", Branch(n), old, "main")
	writeFile(t, filepath.Join(old, "begun.txt"), "work begun by an older version\n")
	if err := q.bringIn(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old worktree %s is still there: %v", old, err)
	}
	wt := q.WorktreePath(n)
	if b, err := os.ReadFile(filepath.Join(wt, "begun.txt")); err != nil || !strings.Contains(string(b), "begun") {
		t.Errorf("the worktree at %s lacks what the old one held: %v", wt, err)
	}
	if got := e.git(wt, "symbolic-ref", "--short", "HEAD"); got != Branch(n) {
		t.Errorf("the moved worktree is on %q, want %s", got, Branch(n))
	}
}

// An agent that exits 0 without a commit fails the scheduler's done check:
// the reason is the scheduler's word, no-done, as for a phase.
func TestIssueNoCommitIsNoDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "lazy", "do nothing", []string{"agent-ready"}, "")
	lazy := e.script("lazy.sh", "exit 0\n")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent = lazy })
	sum := runWith(t, q, log, harness{maxSuper: 1}) // one repair is enough to end it: each is an agent run
	if sum.Count(Blocked) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	is := e.issue(n)
	if commentsWith(is, "could not finish this issue: **no-done**") != 1 {
		t.Errorf("failure comment:\n%s", dump(e, n))
	}
}
