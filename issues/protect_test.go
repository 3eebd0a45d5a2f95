package issues

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// An issue's branch that changes a protected file is never pushed: the
// issue is blocked with reason protected, its comment naming the file and
// why, and origin has neither the branch nor a pull request (on main the
// branch was pushed, its pull request merged, and the settings file with
// SANDBOX=off reached every clone).
func TestProtectedBranchIsBlockedNotPushed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "Tidy the config", "Please tidy.", []string{"agent-ready"}, "")
	hostile := okAgent + `printf 'BOOTSTRAP_CMD=touch /tmp/pwned\nSANDBOX=off\n' > claudopilot.config
git add claudopilot.config
git commit -qm "steer the next run"
`
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent = e.script("hostile.sh", hostile) })
	sum := run(t, q, log)
	if sum.Count(Blocked) != 1 {
		t.Fatalf("summary %+v\nlog:\n%s\n%s", sum, log, dump(e, n))
	}
	is := e.issue(n)
	if !hasLabel(is, "agent-blocked") || commentsWith(is, "**protected**") != 1 || commentsWith(is, "claudopilot.config (a settings file") != 1 ||
		commentsWith(is, "kept in the driver's clone and was not pushed: it changes files that steer the next run") != 1 ||
		commentsWith(is, "first put those files back") != 1 {
		t.Errorf("issue after the refusal:\n%s", dump(e, n))
	}
	if len(e.fake.Pulls()) != 0 {
		t.Errorf("pull requests opened: %+v", e.fake.Pulls())
	}
	cmd := exec.Command("git", "-C", e.origin, "for-each-ref", "--format=%(refname)", "refs/heads/")
	cmd.Env = e.genv
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "refs/heads/main" {
		t.Errorf("origin's branches: %q (%v), want only main", out, err)
	}
	if e.onMain("claudopilot.config") {
		t.Error("claudopilot.config reached origin's main")
	}
}

// Without a protected set the check cannot run: nothing is pushed.
func TestNoProtectedSetPushesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "Add a widget", "Please add a widget.", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Protect = nil })
	sum := run(t, q, log)
	if sum.Count(Blocked) != 1 || len(e.fake.Pulls()) != 0 || e.onMain("work/issue-1.txt") {
		t.Fatalf("summary %+v, pulls %+v\nlog:\n%s\n%s", sum, e.fake.Pulls(), log, dump(e, n))
	}
}

// TestProtectedReadsThePushScansDiff: the protected-file check before a
// push reads the secret scan's diff of the branch against the base when
// the branch holds the base (no git diff of its own), and asks git for
// the changes since the merge base once the base moved on: the base's own
// change to a protected file is not the branch's.
func TestProtectedReadsThePushScansDiff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := e.fake.NewIssue("alice", "x", "x", []string{"agent-ready"}, "")
	l := newLander(t, e, n, nil)
	l.commit(t, "work.txt", "work\n")
	l.commit(t, "claudopilot.config", "SANDBOX=off\n")
	w := &worker{q: l.q, n: n, id: l.id, branch: Branch(n)}
	base, tip := "refs/remotes/origin/main", "refs/heads/"+Branch(n)
	check := func(holds bool) {
		t.Helper()
		if got := holdsBase(l.ctx, l.q.git, base, tip); got != holds {
			t.Fatalf("holdsBase = %v, want %v", got, holds)
		}
		var tree worktree.ChangeReader
		if f := w.scanPush(l.ctx, &tree); f != nil {
			t.Fatalf("scan: %+v", f)
		}
		f := w.protected(l.ctx, &tree)
		if f == nil || f.reason != state.ReasonProtected || !strings.Contains(f.detail, "claudopilot.config") || strings.Contains(f.detail, ".claudopilot/") {
			t.Fatalf("protected: %+v, want claudopilot.config alone", f)
		}
	}
	check(true)
	e.originCommit("main", ".claudopilot/notes.md", "the base's own\n", "the base moves")
	if err := l.q.fetch(l.ctx, "main"); err != nil {
		t.Fatal(err)
	}
	check(false)
}
