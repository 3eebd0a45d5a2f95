package land_test

import (
	"testing"
)

// A review holds for exactly the head and base it read: when the base or
// the branch moved after it, nothing lands and the merge says stale; when
// both still hold, the merge lands as usual. The three cases in turn on
// ONE repository (a fixture each was ~5 processes more), each stale case
// with only one of the two moved since its review.
func TestMergeReviewedHeadAndBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wt, tip := f.branchOut("p1", "p1-first.md", map[string]string{"branch.txt": "b\n"})
	// The base moved after the review; the branch did not.
	reviewedBase := f.rev("main")
	moved := f.commitOn(f.top, "human after the review", map[string]string{"base.txt": "b\n"})
	j := job("p1", "first phase", tip)
	j.ReviewHead, j.ReviewBase = tip, reviewedBase
	out := f.owner.Merge(f.ctx, j)
	if !out.Stale || out.Err != nil || out.Reason != "" {
		t.Fatalf("base moved: Merge = %+v, want Stale", out)
	}
	f.refused(out, "p1", moved)
	// The branch moved after a review of the base as it is now.
	late := f.commitOn(wt, "a commit after the review", map[string]string{"late.txt": "late\n"})
	j.ReviewHead, j.ReviewBase = tip, moved
	out = f.owner.Merge(f.ctx, j)
	if !out.Stale {
		t.Fatalf("branch moved: Merge = %+v, want Stale", out)
	}
	f.refused(out, "p1", moved)
	// Both hold.
	j = job("p1", "first phase", late)
	j.ReviewHead, j.ReviewBase = late, moved
	f.mustMerge(j)
}
