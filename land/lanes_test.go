package land_test

import (
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/work"
)

// The merge commit names the lane of each launch the branch's description
// recorded (worker 1 on claude, relaunched on its fallback codex, then a
// supervisor on codex); a line the driver did not write is left out.
func TestMergeCommitNamesTheLanes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"a.txt": "a from p1\n"})
	br := f.layout.Branch("p1")
	// A person's note and the lines the runner appends
	// (AppendBranchDescription, proven in worktree's
	// TestAppendBranchDescription), written in one git config: the
	// appends were two processes each.
	lanes := []string{work.LaneLine("worker", 1, "claude"), work.LaneLine("worker", 1, "codex"), work.LaneLine("supervisor", 1, "codex")}
	f.gitIn(f.top, "config", "branch."+br+".description", "a person's note\n"+strings.Join(lanes, "\n")+"\n")
	f.mustMerge(job("p1", "first phase", tip))
	want := "Merge p1: first phase\n\nClaudopilot-Lanes: worker 1 claude; worker 1 codex; supervisor 1 codex"
	if got := f.gitIn(f.top, "log", "-1", "--format=%B", "main"); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got := f.gitIn(f.top, "log", "-1", "--format=%(trailers:key=Claudopilot-Lanes,valueonly)", "main"); got != "worker 1 claude; worker 1 codex; supervisor 1 codex" {
		t.Errorf("git reads the trailer as %q", got)
	}
	// The branch went in the base's move (update-ref --stdin, issue 25
	// §1); its config section, which git branch -D drops, goes too.
	if f.branchExists("p1") {
		t.Errorf("branch %s left", br)
	}
	if out, _ := f.git.GitIn(f.ctx, f.top, "config", "--local", "--get-regexp", `^branch\.`); out != "" {
		t.Errorf("the deleted branch's config is left: %q", out)
	}
}
