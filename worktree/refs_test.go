package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

func TestBranchTips(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	// The three branches in one update-ref (3 processes as git branch).
	if _, err := c.run(ctx, "", []byte("create refs/heads/auto/a HEAD\ncreate refs/heads/auto/b/c HEAD\ncreate refs/heads/other HEAD\n"), nil, "update-ref", "--stdin"); err != nil {
		t.Fatal(err)
	}
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
	// The tip on auto/a by fast-import, auto/b by update-ref, the two
	// descriptions appended to the config as git config writes them (a
	// commit, an update-ref, two branches and two git config were 8
	// processes).
	tip := gittest.Import(t, c.Env, c.Dir, gittest.Commit{Ref: "auto/a", From: "main^0", Message: "tip", Files: map[string]string{"a.txt": "a\n"}})[0]
	mustGit(t, c, "", "update-ref", "refs/heads/auto/b", tip)
	cf, err := os.OpenFile(filepath.Join(c.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = cf.WriteString("[branch \"auto/a\"]\n\tdescription = lane\\n\n[branch \"auto/ab\"]\n\tdescription = another\\n\n")
		err = errors.Join(err, cf.Close())
	}
	if err != nil {
		t.Fatal(err)
	}

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
