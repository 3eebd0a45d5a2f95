package worktree

import (
	"context"
	"errors"
	"strings"
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

// MoveRef moves the ref and deletes the branches that still point at the
// given tips in one transaction; a branch that moved on makes it move the
// ref alone (the branch kept), and a ref that moved is ErrStale with
// nothing changed.
func TestMoveRef(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	old := mustGit(t, c, "", "rev-parse", "HEAD")
	tip := commitFiles(t, c, "", "tip", map[string]string{"a.txt": "a\n"})
	mustGit(t, c, "", "update-ref", "refs/heads/main", old)
	mustGit(t, c, "", "branch", "auto/a", tip)
	mustGit(t, c, "", "branch", "auto/b", tip)
	mustGit(t, c, "", "config", "branch.auto/a.description", "lane\n")
	mustGit(t, c, "", "config", "branch.auto/ab.description", "another\n")

	dropped, err := c.MoveRef(ctx, "refs/heads/main", tip, old, map[string]string{"refs/heads/auto/a": tip, "refs/heads/auto/b": old})
	if err != nil || dropped {
		t.Fatalf("MoveRef with a moved branch = %v, %v; want the ref moved alone", dropped, err)
	}
	if got := mustGit(t, c, "", "rev-parse", "refs/heads/main"); got != tip {
		t.Errorf("main = %s, want %s", got, tip)
	}
	if got := mustGit(t, c, "", "rev-parse", "refs/heads/auto/a"); got != tip {
		t.Errorf("auto/a = %s: deleted though the transaction failed", got)
	}

	mustGit(t, c, "", "update-ref", "refs/heads/main", old)
	if _, err := c.MoveRef(ctx, "refs/heads/main", tip, tip, map[string]string{"refs/heads/auto/a": tip}); !errors.Is(err, ErrStale) {
		t.Errorf("MoveRef from a stale value = %v, want ErrStale", err)
	}
	if got := mustGit(t, c, "", "rev-parse", "refs/heads/auto/a"); got != tip {
		t.Errorf("auto/a = %s: deleted by a stale move", got)
	}

	dropped, err = c.MoveRef(ctx, "refs/heads/main", tip, old, map[string]string{"refs/heads/auto/a": tip, "refs/heads/auto/b": tip})
	if err != nil || !dropped {
		t.Fatalf("MoveRef = %v, %v; want the branches dropped", dropped, err)
	}
	if out, _ := c.Git(ctx, "branch", "--list", "auto/*"); strings.TrimSpace(out) != "" {
		t.Errorf("branches left: %q", out)
	}
	if err := c.DropBranchConfig(ctx, "auto/a"); err != nil {
		t.Fatal(err)
	}
	if err := c.DropBranchConfig(ctx, "auto/b"); err != nil { // none: no git asked, no error
		t.Fatal(err)
	}
	if got := mustGit(t, c, "", "config", "--local", "--get-regexp", `^branch\.`); got != "branch.auto/ab.description another" {
		t.Errorf("branch config left: %q, want only auto/ab's", got)
	}
}
