package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/worktree"
)

// Sync moves the real branch only from the tip it handed out: when the
// branch moved meanwhile (by someone else), the attempt's tip is refused,
// not written over it.
func TestSyncRefusesABranchThatMovedMeanwhile(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	common := filepath.Join(r.top, ".git")
	start := r.rev(t, "refs/heads/auto/p1")
	refs, err := PrepareRefs(common, filepath.Join(r.top, ".claudopilot", "sandbox", "p1"), "auto/p1", start)
	if err != nil {
		t.Fatal(err)
	}
	// The agent's commit, on its private ref.
	tip := strings.TrimSpace(r.gitOut(t, r.p1, "commit-tree", "-p", start, "-m", "agent", start+"^{tree}"))
	if err := os.WriteFile(filepath.Join(refs.Dir, "refs", "p1"), []byte(tip+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Someone else moves the real branch meanwhile.
	other := strings.TrimSpace(r.gitOut(t, r.top, "commit-tree", "-p", start, "-m", "other", start+"^{tree}"))
	r.gitOut(t, r.top, "update-ref", "refs/heads/auto/p1", other)
	if _, err := refs.Sync(ctx, r.git); !errors.Is(err, worktree.ErrStale) {
		t.Fatalf("Sync over a moved branch: %v, want ErrStale", err)
	}
	if now := r.rev(t, "refs/heads/auto/p1"); now != other {
		t.Errorf("auto/p1 is %s, want the other writer's %s kept", now, other)
	}
}

// A private ref holding garbage or a symlink is not an object id: the real
// branch stays, and Sync says so.
func TestSyncIgnoresGarbage(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	start := r.rev(t, "refs/heads/auto/p1")
	for name, plant := range map[string]func(p string) error{
		"garbage": func(p string) error { return os.WriteFile(p, []byte("ref: refs/heads/main\n"), 0o644) },
		"symlink": func(p string) error {
			os.Remove(p)
			return os.Symlink(filepath.Join(r.top, ".git", "refs", "heads", "main"), p)
		},
		"deleted": os.Remove,
	} {
		refs, err := PrepareRefs(filepath.Join(r.top, ".git"), filepath.Join(r.top, ".claudopilot", "sandbox", "p1"), "auto/p1", start)
		if err != nil {
			t.Fatal(err)
		}
		if err := plant(filepath.Join(refs.Dir, "refs", "p1")); err != nil {
			t.Fatal(err)
		}
		strays, err := refs.Sync(ctx, r.git)
		if err != nil || len(strays) != 1 || !strings.Contains(strays[0], "refs/heads/auto/p1") {
			t.Errorf("%s: strays %q, err %v", name, strays, err)
		}
		if now := r.rev(t, "refs/heads/auto/p1"); now != start {
			t.Errorf("%s: auto/p1 moved to %s", name, now)
		}
		if _, err := os.Stat(refs.Dir); !os.IsNotExist(err) {
			t.Errorf("%s: the private folder is still there", name)
		}
	}
}

// A driver killed while a sandboxed agent ran leaves the agent's tip in
// the private folder only: Recover carries a fast-forward back, and drops
// a tip that does not descend from the branch.
func TestRecover(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	dir := filepath.Join(r.top, ".claudopilot", "sandbox", "p1")
	start := r.rev(t, "refs/heads/auto/p1")
	if note, err := Recover(ctx, r.git, dir, "auto/p1"); note != "" || err != nil {
		t.Fatalf("nothing left: %q, %v", note, err)
	}
	refs, err := PrepareRefs(filepath.Join(r.top, ".git"), dir, "auto/p1", start)
	if err != nil {
		t.Fatal(err)
	}
	tip := strings.TrimSpace(r.gitOut(t, r.p1, "commit-tree", "-p", start, "-m", "agent", start+"^{tree}"))
	os.WriteFile(filepath.Join(refs.Dir, "refs", "p1"), []byte(tip+"\n"), 0o644)
	note, err := Recover(ctx, r.git, dir, "auto/p1")
	if err != nil || !strings.Contains(note, "moved auto/p1 to "+tip) {
		t.Fatalf("Recover: %q, %v", note, err)
	}
	if now := r.rev(t, "refs/heads/auto/p1"); now != tip {
		t.Errorf("auto/p1 is %s, want %s", now, tip)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("the private folder is still there")
	}
	// A tip off to the side (the base's root, say) is dropped.
	if _, err := PrepareRefs(filepath.Join(r.top, ".git"), dir, "auto/p1", start); err != nil {
		t.Fatal(err)
	}
	note, err = Recover(ctx, r.git, dir, "auto/p1")
	if err != nil || !strings.Contains(note, "does not descend") {
		t.Fatalf("Recover of a non-descendant: %q, %v", note, err)
	}
	if now := r.rev(t, "refs/heads/auto/p1"); now != tip {
		t.Errorf("auto/p1 moved to %s", now)
	}
}

// Only a linked worktree of the repository gets a sandbox: the main
// checkout (whose git dir is the whole common directory) is refused.
func TestEnterRefusesTheMainCheckout(t *testing.T) {
	needGit(t)
	r := newRepo(t)
	c := &Config{Hide: []string{r.top}}
	if _, err := c.Enter(context.Background(), r.git, r.top, "main", filepath.Join(t.TempDir(), "refs"), ""); err == nil {
		t.Fatal("Enter on the main checkout: no error")
	}
}

// A killed attempt's commits are in its private object store only:
// Recover brings them in before it moves the branch to them.
func TestRecoverBringsTheObjectsBack(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	r := newRepo(t)
	dir := filepath.Join(r.top, ".claudopilot", "sandbox", "p1")
	start := r.rev(t, "refs/heads/auto/p1")
	refs, err := PrepareRefs(filepath.Join(r.top, ".git"), dir, "auto/p1", start)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := PrepareObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "commit-tree", "-p", start, "-m", "agent", start+"^{tree}")
	cmd.Dir, cmd.Env = r.p1, append(r.env, "GIT_OBJECT_DIRECTORY="+objs.Dir, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(r.top, ".git", "objects"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	tip := strings.TrimSpace(string(out))
	if _, err := r.git.RevParse(ctx, tip); err == nil {
		t.Fatal("the commit is in the repository's store already")
	}
	os.WriteFile(filepath.Join(refs.Dir, "refs", "p1"), []byte(tip+"\n"), 0o644)
	note, err := Recover(ctx, r.git, dir, "auto/p1")
	if err != nil || !strings.Contains(note, "moved auto/p1 to "+tip) {
		t.Fatalf("Recover: %q, %v", note, err)
	}
}
