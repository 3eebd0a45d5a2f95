package land_test

import (
	"slices"
	"testing"

	"github.com/claudopilot/claudopilot/scheduler"
)

// Predict dry-runs the merges of running branches with each other (only
// the pairs said to be independent) and with the base: t1 and t2 change
// a.txt apart, t3 changes b.txt as the base did since; t4 has no commit.
// Nothing is written to a checkout, and the manifest is no conflict.
func TestPredictFindsConflicts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, trainManifest)
	f.branches(phase{"t1", "", map[string]string{"a.txt": "one\n", manifestRel: "edited by t1\n"}},
		phase{"t2", "", map[string]string{"a.txt": "two\n", manifestRel: "edited by t2\n"}},
		phase{"t3", "", map[string]string{"b.txt": "three\n"}})
	f.fresh("t4")
	f.commitOn(f.top, "human", map[string]string{"b.txt": "human\n"})
	status := f.status()
	all := func(a, b string) bool { return true }
	got := f.owner.Predict(f.ctx, []string{"t1", "t2", "t3", "t4"}, all)
	want := []scheduler.Conflict{{A: "t1", B: "t2", Paths: []string{"a.txt"}}, {A: "t3", Paths: []string{"b.txt"}}}
	if !slices.EqualFunc(got, want, func(x, y scheduler.Conflict) bool {
		return x.A == y.A && x.B == y.B && slices.Equal(x.Paths, y.Paths)
	}) {
		t.Errorf("Predict = %+v, want %+v", got, want)
	}
	// Dependent pairs are not tried; the answers for the rest are cached.
	none := func(a, b string) bool { return false }
	if got := f.owner.Predict(f.ctx, []string{"t1", "t2"}, none); len(got) != 0 {
		t.Errorf("Predict with no independent pair = %+v", got)
	}
	if !slices.Equal(f.status(), status) {
		t.Errorf("the base checkout changed: %v", f.status())
	}
}
