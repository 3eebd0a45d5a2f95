package land_test

import (
	"testing"
)

// A review holds for exactly the head and base it read: when the base or
// the branch moved after it, nothing lands and the merge says stale; when
// both still hold, the merge lands as usual.
func TestMergeReviewedHeadAndBase(t *testing.T) {
	t.Parallel()
	t.Run("base moved", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, manifestSrc)
		_, tip := f.branch("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
		reviewedBase := f.rev("main")
		moved := f.commitOn(f.top, "human after the review", map[string]string{"base.txt": "b\n"})
		j := job("p1", "first phase", tip)
		j.ReviewHead, j.ReviewBase = tip, reviewedBase
		out := f.owner.Merge(f.ctx, j)
		if !out.Stale || out.Err != nil || out.Reason != "" {
			t.Fatalf("Merge = %+v, want Stale", out)
		}
		f.refused(out, "p1", moved)
	})
	t.Run("branch moved", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, manifestSrc)
		wt, tip := f.branch("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
		base := f.rev("main")
		f.commitOn(wt, "a commit after the review", map[string]string{"late.txt": "late\n"})
		j := job("p1", "first phase", tip)
		j.ReviewHead, j.ReviewBase = tip, base
		out := f.owner.Merge(f.ctx, j)
		if !out.Stale {
			t.Fatalf("Merge = %+v, want Stale", out)
		}
		f.refused(out, "p1", base)
	})
	t.Run("both hold", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, manifestSrc)
		_, tip := f.branch("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
		j := job("p1", "first phase", tip)
		j.ReviewHead, j.ReviewBase = tip, f.rev("main")
		f.mustMerge(j)
	})
}
