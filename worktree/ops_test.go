package worktree

import (
	"context"
	"slices"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// The typed operations over a real conflict: merge, see it, resolve it
// with the other side, conclude; and the marker check sees what a
// concluded-but-unresolved merge would carry.
func TestOpsConflictFlow(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	// side's and main's commits in one fast-import, then main's checkout
	// follows (two checkouts and two commits were 6 processes).
	gittest.Import(t, c.Env, c.Dir,
		gittest.Commit{Ref: "side", From: "main^0", Message: "side", Files: map[string]string{"a.txt": "side\n"}},
		gittest.Commit{Ref: "main", From: "main^0", Message: "main", Files: map[string]string{"a.txt": "main\n"}})
	mustGit(t, c, "", "reset", "-q", "--hard")

	if c.MergeInProgress(ctx, "") {
		t.Fatal("a merge in progress before any")
	}
	if err := c.MergeInto(ctx, "", "side"); err == nil {
		t.Fatal("conflicting merge succeeded")
	}
	if !c.MergeInProgress(ctx, "") {
		t.Fatal("no merge in progress after a conflict")
	}
	if u, err := c.Unmerged(ctx, ""); err != nil || !slices.Equal(u, []string{"a.txt"}) {
		t.Fatalf("Unmerged = %v, %v", u, err)
	}
	if err := c.TakeTheirs(ctx, "", "a.txt"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stage(ctx, "", "a.txt"); err != nil {
		t.Fatal(err)
	}
	if !c.HasStaged(ctx, "") {
		t.Fatal("nothing staged after resolving")
	}
	if err := c.ConcludeMerge(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if c.MergeInProgress(ctx, "") || readFile(t, c.Dir, "a.txt") != "side\n" {
		t.Fatalf("merge not concluded with theirs: %q", readFile(t, c.Dir, "a.txt"))
	}
	ref, err := c.HeadRef(ctx, "")
	if err != nil || ref != "refs/heads/main" {
		t.Fatalf("HeadRef = %q, %v", ref, err)
	}

	// Markers staged, then committed: both checks see them.
	writeFile(t, c.Dir, "b.txt", "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
	if err := c.StageAll(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if st, err := c.StagedStatus(ctx, ""); err != nil || st["b.txt"] != 'A' {
		t.Fatalf("StagedStatus = %v, %v", st, err)
	}
	if m, err := c.MarkerCandidates(ctx, "", "", ""); err != nil || !slices.Equal(m, []string{"b.txt"}) {
		t.Fatalf("staged MarkerCandidates = %v, %v", m, err)
	}
	before := mustGit(t, c, "", "rev-parse", "HEAD")
	if err := c.CommitStaged(ctx, "", "markers"); err != nil {
		t.Fatal(err)
	}
	if m, err := c.MarkerCandidates(ctx, "", before, "HEAD"); err != nil || !slices.Equal(m, []string{"b.txt"}) {
		t.Fatalf("MarkerCandidates(before, HEAD) = %v, %v", m, err)
	}
	if mb, err := c.MergeBase(ctx, before, "HEAD"); err != nil || mb != before {
		t.Fatalf("MergeBase = %q, %v", mb, err)
	}
}
