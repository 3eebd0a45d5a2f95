package worktree

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestAddRemoveWorktreeConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	base := t.TempDir()
	// 8 adds at once on 2 cores contend for the worktree lock as 16 did
	// (half the processes); CLAUDOPILOT_SOAK=1 runs 16.
	n := 8
	if os.Getenv("CLAUDOPILOT_SOAK") == "1" {
		n = 16
	}

	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		paths[i] = filepath.Join(base, fmt.Sprintf("wt%02d", i))
		wg.Go(func() {
			errs[i] = c.AddWorktree(ctx, paths[i], fmt.Sprintf("task/%02d", i), "main")
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("AddWorktree %d: %v", i, err)
		}
	}

	wts, err := c.Worktrees(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != n+1 {
		t.Fatalf("Worktrees = %d entries, want %d", len(wts), n+1)
	}
	if wts[0].Path != c.Dir || wts[0].Branch != "main" || wts[0].Detached {
		t.Errorf("main entry = %+v", wts[0])
	}
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	for i := range n {
		// WorktreeOf reads the worktree's HEAD (the branch); the branch's
		// tip comes from the client's long-lived cat-file: a rev-parse in
		// each worktree was a process each.
		p, ok, err := c.WorktreeOf(ctx, fmt.Sprintf("task/%02d", i))
		if err != nil || !ok || p != paths[i] {
			t.Errorf("WorktreeOf(task/%02d) = %q, %v, %v", i, p, ok, err)
		}
		if got, err := c.RevParse(ctx, fmt.Sprintf("task/%02d", i)); got != head || err != nil {
			t.Errorf("worktree %d HEAD = %s, %v; want %s", i, got, err, head)
		}
		if got := readFile(t, paths[i], "README.md"); got != "hello\n" {
			t.Errorf("worktree %d README = %q", i, got)
		}
	}

	// Something uncommitted in one worktree does not stop removal.
	writeFile(t, paths[3], "scratch.txt", "x")
	for i := range n {
		wg.Go(func() { errs[i] = c.RemoveWorktree(ctx, paths[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("RemoveWorktree %d: %v", i, err)
		}
		if _, err := os.Stat(paths[i]); !os.IsNotExist(err) {
			t.Errorf("worktree %d still on disk: %v", i, err)
		}
	}
	if wts, err := c.Worktrees(ctx); err != nil || len(wts) != 1 {
		t.Errorf("Worktrees after removal = %+v, %v", wts, err)
	}
	// The branches survive and can be deleted concurrently.
	for i := range n {
		wg.Go(func() { errs[i] = c.DeleteBranch(ctx, fmt.Sprintf("task/%02d", i)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("DeleteBranch %d: %v", i, err)
		}
	}
	if ok, _ := c.BranchExists(ctx, "task/00"); ok {
		t.Error("task/00 still exists")
	}
}

func TestAddWorktreeAttachAndStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	p := filepath.Join(t.TempDir(), "feat")

	if err := c.AddWorktree(ctx, p, "feat", "main"); err != nil {
		t.Fatal(err)
	}
	featHead := commitFiles(t, c, p, "work", map[string]string{"f.txt": "f\n"})
	// Idempotent when already attached there.
	if err := c.AddWorktree(ctx, p, "feat", "main"); err != nil {
		t.Errorf("re-AddWorktree same path: %v", err)
	}
	// Path exists but is another branch's checkout: error.
	if err := c.AddWorktree(ctx, p, "main", "main"); err == nil {
		t.Error("AddWorktree over another worktree: no error")
	}

	if err := c.RemoveWorktree(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Branch exists, path missing: attach the existing branch.
	if err := c.AddWorktree(ctx, p, "feat", "main"); err != nil {
		t.Fatalf("AddWorktree existing branch: %v", err)
	}
	if got := mustGit(t, c, p, "rev-parse", "HEAD"); got != featHead {
		t.Errorf("attached HEAD = %s, want %s", got, featHead)
	}
	if b := mustGit(t, c, p, "symbolic-ref", "--short", "HEAD"); b != "feat" {
		t.Errorf("attached branch = %q", b)
	}

	// Directory deleted behind git's back: the registration is prunable.
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	wts, err := c.Worktrees(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != 2 || !wts[1].Prunable || wts[1].Branch != "feat" {
		t.Fatalf("Worktrees = %+v, want a prunable feat entry", wts)
	}
	if _, ok, err := c.WorktreeOf(ctx, "feat"); err != nil || ok {
		t.Errorf("WorktreeOf(prunable) = %v, %v; want not found", ok, err)
	}
	// AddWorktree prunes the stale registration and re-attaches.
	if err := c.AddWorktree(ctx, p, "feat", ""); err != nil {
		t.Fatalf("AddWorktree over stale registration: %v", err)
	}
	if got := readFile(t, p, "f.txt"); got != "f\n" {
		t.Errorf("f.txt = %q", got)
	}

	// RemoveWorktree of a missing path prunes instead.
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveWorktree(ctx, p); err != nil {
		t.Errorf("RemoveWorktree(missing) = %v", err)
	}
	if wts, err := c.Worktrees(ctx); err != nil || len(wts) != 1 {
		t.Errorf("Worktrees after prune = %+v, %v", wts, err)
	}
	if err := c.Prune(ctx); err != nil {
		t.Error(err)
	}

	// Relative paths are relative to c.Dir; start "" means HEAD.
	if err := c.AddWorktree(ctx, "../rel-wt", "rel", ""); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join(filepath.Dir(c.Dir), "rel-wt")
	t.Cleanup(func() { os.RemoveAll(rel) })
	if got, ok, err := c.WorktreeOf(ctx, "refs/heads/rel"); err != nil || !ok || got != rel {
		t.Errorf("WorktreeOf(rel) = %q, %v, %v; want %q", got, ok, err, rel)
	}
	if err := c.AddWorktree(ctx, filepath.Join(t.TempDir(), "x"), "bad", "no-such-start"); err == nil {
		t.Error("AddWorktree from a bad start: no error")
	}
}

func TestWorktreesDetachedAndOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	p := filepath.Join(t.TempDir(), "det")
	mustGit(t, c, "", "worktree", "add", "-q", "--detach", p, "main")
	wts, err := c.Worktrees(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != 2 || !wts[1].Detached || wts[1].Branch != "" || wts[1].Path != p || !shaRE.MatchString(wts[1].Head) {
		t.Errorf("Worktrees = %+v", wts)
	}

	// A Client opened inside a linked worktree is rooted there and shares
	// the common dir (and so info/exclude).
	wc, err := Open(ctx, p, c.Env)
	if err != nil {
		t.Fatal(err)
	}
	if wc.Dir != p {
		t.Errorf("Open(linked).Dir = %q", wc.Dir)
	}
	cd1, _ := c.CommonDir(ctx)
	cd2, _ := wc.CommonDir(ctx)
	if cd1 != cd2 {
		t.Errorf("CommonDir main %q != linked %q", cd1, cd2)
	}
	if err := c.Exclude(ctx, "agent.log"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "agent.log", "x")
	writeFile(t, p, "out.txt", "x")
	if d, err := c.Dirty(ctx, p); err != nil || len(d) != 1 || d[0] != "out.txt" {
		t.Errorf("Dirty(linked) = %q, %v", d, err)
	}
}

// WorktreeOf reads the HEAD files `git worktree list` reads, with no git
// process (a list per landing before, issue 25 §1), and answers as the
// list does: the main checkout's branch, a linked worktree's, none for a
// branch checked out nowhere or in a worktree whose folder is gone.
func TestWorktreeOfReadsFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	commitFiles(t, c, "", "base", map[string]string{"a.txt": "a\n"})
	wt := filepath.Join(t.TempDir(), "task")
	if err := c.AddWorktree(ctx, wt, "task", "main"); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	if err := c.AddWorktree(ctx, gone, "gone", "main"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	mustGit(t, c, "", "branch", "idle")
	if _, err := c.CommonDir(ctx); err != nil { // read once, as a run does
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	for _, tc := range []struct {
		branch, dir string
		ok          bool
	}{{"main", c.Dir, true}, {"task", wt, true}, {"gone", "", false}, {"idle", "", false}} {
		dir, ok, err := traced.WorktreeOf(ctx, tc.branch)
		if err != nil || ok != tc.ok || (ok && !samePath(dir, tc.dir)) {
			t.Errorf("WorktreeOf(%s) = %q, %v, %v; want %q, %v", tc.branch, dir, ok, err, tc.dir, tc.ok)
		}
	}
	if b, _ := os.ReadFile(trace); strings.Contains(string(b), "built-in: git") {
		t.Errorf("git asked:\n%s", b)
	}
	// WorktreesNoHead reads the same files: git's list (Worktrees) is
	// the oracle, for a worktree on a branch, one whose folder is gone
	// (prunable), then the same locked (not prunable) and one detached
	// (its HEAD a commit id, as git writes it).
	common, _ := c.CommonDir(ctx)
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	steps := []func() error{
		func() error { return nil },
		func() error { return os.WriteFile(filepath.Join(common, "worktrees", "gone", "locked"), nil, 0o644) },
		func() error {
			return os.WriteFile(filepath.Join(common, "worktrees", "task", "HEAD"), []byte(head+"\n"), 0o644)
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		want, err := c.Worktrees(ctx)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(trace)
		got, err := traced.WorktreesNoHead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for k := range want {
			want[k].Head = ""
		}
		sortWorktrees(got)
		sortWorktrees(want)
		if !slices.Equal(got, want) {
			t.Errorf("step %d: WorktreesNoHead = %+v\ngit lists %+v", i, got, want)
		}
		if b, _ := os.ReadFile(trace); strings.Contains(string(b), "built-in: git") {
			t.Errorf("step %d: git asked:\n%s", i, b)
		}
	}
}

func sortWorktrees(wts []Worktree) {
	slices.SortFunc(wts, func(a, b Worktree) int { return strings.Compare(a.Path, b.Path) })
}

// TestAddWorktreeChecksOutOutsideTheLock: a worktree add holds the
// worktree lock only to register the worktree (git worktree add
// --no-checkout); its checkout runs with the lock free, so the next
// phase's add does not wait for it (issue 25 §2). The checkout is whole
// when the add returns: the files, a clean status, the index.
func TestAddWorktreeChecksOutOutsideTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	p := filepath.Join(t.TempDir(), "feat")
	calls := 0
	c.registered = func() {
		calls++
		if !c.locks().wt.TryLock() {
			t.Error("the worktree lock is held during the checkout")
			return
		}
		c.locks().wt.Unlock()
		if _, err := os.Stat(filepath.Join(p, "README.md")); err == nil {
			t.Error("checked out before the lock was let go")
		}
	}
	if err := c.AddWorktree(ctx, p, "feat", "main"); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("registered called %d times, want 1", calls)
	}
	if got := readFile(t, p, "README.md"); got != "hello\n" {
		t.Errorf("README.md in the new worktree = %q", got)
	}
	if st := mustGit(t, c, p, "status", "--porcelain"); st != "" {
		t.Errorf("status of the new worktree:\n%s", st)
	}
	// Already there: nothing is checked out again.
	if err := c.AddWorktree(ctx, p, "feat", "main"); err != nil || calls != 1 {
		t.Errorf("second add: %v, registered called %d times", err, calls)
	}
}

// A worktree on an existing branch is registered by writing the files
// git worktree add --no-checkout writes (registerFromFiles), without git:
// the oracle is a worktree git adds the same way beside it. Both admin
// folders hold the same files with the same contents (paths and branch
// names aside) once checked out; git lists the written one as its own,
// finds it clean, refuses its branch elsewhere and removes it.
func TestRegisterAsGitDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	head := mustGit(t, c, "", "rev-parse", "HEAD")
	update := "create refs/heads/auto/pone " + head + "\ncreate refs/heads/auto/ptwo " + head + "\n"
	if _, err := c.GitInput(ctx, "", []byte(update), "update-ref", "--stdin"); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	pa, pb := filepath.Join(base, "wts", "pone"), filepath.Join(base, "wts", "ptwo")
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	yes := true
	if err := traced.AddWorktreeKnown(ctx, pa, "auto/pone", "", &yes); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(trace); strings.Contains(string(b), "worktree add") || strings.Contains(string(b), "symbolic-ref") {
		t.Errorf("git made the worktree:\n%s", b)
	}
	mustGit(t, c, "", "worktree", "add", "--quiet", "--no-checkout", pb, "auto/ptwo")
	mustGit(t, c, pb, "reset", "--hard", "--no-recurse-submodules", "--quiet")
	common, _ := c.CommonDir(ctx)
	real, _ := filepath.EvalSymlinks(base)
	files := func(w string) map[string]string {
		m := map[string]string{}
		admin := filepath.Join(common, "worktrees", w)
		filepath.WalkDir(admin, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(admin, p)
				b, _ := os.ReadFile(p)
				if rel == "index" || rel == "logs/HEAD" {
					b = nil // git's own, written by the reset alike
				}
				m[rel] = strings.ReplaceAll(string(b), w, "W")
			}
			return err
		})
		b, _ := os.ReadFile(filepath.Join(base, "wts", w, ".git"))
		m["(.git)"] = strings.ReplaceAll(string(b), w, "W")
		return m
	}
	if a, b := files("pone"), files("ptwo"); !maps.Equal(a, b) {
		t.Errorf("written admin folder %q\ngit's %q", a, b)
	}
	wts, err := c.Worktrees(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(wts, func(w Worktree) bool { return w.Branch == "auto/pone" })
	if i < 0 || wts[i].Path != filepath.Join(real, "wts", "pone") || wts[i].Head != head || wts[i].Locked || wts[i].Prunable {
		t.Errorf("git lists %+v", wts)
	}
	if d, err := c.Dirty(ctx, pa); err != nil || len(d) != 0 {
		t.Errorf("the written worktree is not clean: %q, %v", d, err)
	}
	if _, err := c.GitIn(ctx, "", "worktree", "add", filepath.Join(base, "elsewhere"), "auto/pone"); err == nil {
		t.Error("git checked out auto/pone a second time")
	}
	if err := c.RemoveWorktree(ctx, pa); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(common, "worktrees", "pone")); !os.IsNotExist(err) {
		t.Errorf("the admin folder stayed: %v", err)
	}
}
