package work_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One worker attempt that finishes and passes its gate runs at most
// budget git processes of the driver's own (the agent's aside): the
// worktree's admin folder and HEAD are read from their files, and the
// done check reads both docs in one process (issue #17: git calls per
// landed phase). Each check still runs; only its process goes.
func TestRunGitCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	f.runner.Agent = f.agent(doneBody)
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome %+v", o)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range strings.Split(string(b), "\n") {
		if _, c, ok := strings.Cut(l, "trace: built-in: git "); ok {
			calls = append(calls, c)
		}
	}
	// 12 of the driver's, 3 that `git worktree add` runs itself (branch,
	// symbolic-ref, reset) and the new Client's one look-up of the
	// common dir; 23 before.
	const budget = 16
	if len(calls) > budget {
		t.Errorf("%d git processes for one attempt, want at most %d:\n%s", len(calls), budget, strings.Join(calls, "\n"))
	}
}
