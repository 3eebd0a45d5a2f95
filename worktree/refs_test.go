package worktree

import (
	"context"
	"testing"
)

func TestBranchTips(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	mustGit(t, c, "", "branch", "auto/a")
	mustGit(t, c, "", "branch", "auto/b/c")
	mustGit(t, c, "", "branch", "other")
	tips, err := c.BranchTips(ctx, "auto/")
	if err != nil {
		t.Fatal(err)
	}
	if len(tips) != 2 || tips[0] != (BranchTip{"auto/a", head}) || tips[1] != (BranchTip{"auto/b/c", head}) {
		t.Errorf("BranchTips = %+v", tips)
	}
	if tips, err := c.BranchTips(ctx, "none/"); err != nil || len(tips) != 0 {
		t.Errorf("BranchTips(none/) = %+v, %v", tips, err)
	}
}
