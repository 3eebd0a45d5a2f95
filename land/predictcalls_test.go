package land_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// Two running branches at one commit (both cut from a base that moved on
// since, nothing committed yet) are not dry-run against each other: a
// commit merged with itself has no conflict. One merge-tree (the base
// with that commit) is all the prediction asks.
func TestPredictSkipsBranchesAtOneCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	for _, id := range []string{"t1", "t2"} {
		f.fresh(id)
	}
	f.commitOn(f.top, "human", map[string]string{"b.txt": "human\n"})
	trace := filepath.Join(t.TempDir(), "trace")
	f.owner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	if got := f.owner.Predict(f.ctx, []string{"t1", "t2"}, func(a, b string) bool { return true }); len(got) != 0 {
		t.Errorf("Predict = %+v, want no conflict", got)
	}
	var mt []string
	for _, c := range gitCalls(t, trace) {
		if strings.Contains(c, "merge-tree") {
			mt = append(mt, c)
		}
	}
	if len(mt) != 1 {
		t.Errorf("%d merge-tree, want 1:\n%s", len(mt), strings.Join(mt, "\n"))
	}
}
