package land_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/scheduler"
)

// A train's first-parent commit is written in the pack of its last
// phase's merge and flip, not by a commit-tree of its own (issue 25 §1:
// one git process fewer per car), with the message and parents
// commit-tree gave it; when the last phase does not join (here it
// conflicts with the one before it), commit-tree writes it over the
// phases that did.
func TestTrainCommitInTheLastPack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	js := f.trainJobs("true", map[string]map[string]string{"t2": {"same.txt": "two\n"}, "t3": {"same.txt": "three\n"}}, "t1", "t2", "t3")
	base := f.rev("main")
	trace := filepath.Join(t.TempDir(), "trace")
	f.owner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	b := f.mustBuild("", js[:2])
	for _, c := range gitCalls(t, trace) {
		if strings.Contains(c, "commit-tree") {
			t.Errorf("a train of two ran %s", c)
		}
	}
	if got := f.gitIn(f.top, "log", "-1", "--format=%B", b.Commit); !strings.HasPrefix(got, "Merge train: t1, t2\n\n- t1: ") || !strings.Contains(got, "(phase t2)") {
		t.Errorf("the car's message = %q", got)
	}
	if f.rev(b.Commit+"^1") != base || f.rev(b.Commit+"^2^1^1") != base || f.rev(b.Commit+"^{tree}") != f.rev(b.Commit+"^2^{tree}") {
		t.Errorf("the car's commit is not the base merged with its side line's tree")
	}

	c := f.owner.Build(f.ctx, scheduler.CarJob{Jobs: js})
	if len(c.Joined) != 2 || c.Commit == "" || c.Err != nil {
		t.Fatalf("Build(t1, t2, t3 conflicting with t2) = %+v, want t1 and t2 joined", c)
	}
	if got := f.gitIn(f.top, "log", "-1", "--format=%s", c.Commit); got != "Merge train: t1, t2" || f.rev(c.Commit+"^1") != base {
		t.Errorf("the car without its last phase: %q on %s", got, f.rev(c.Commit+"^1"))
	}
}
