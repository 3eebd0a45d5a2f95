package land_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/land"
)

// A driver killed after moving the base ref but before (or while) bringing
// the checkout forward: the next start finishes the move, never touching
// the live manifest, and forgets the record.
func TestRecoverFinishesACheckoutMove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n", "a.txt": "a from p1\n"})
	live := manifestSrc + "\nA human's note.\n"
	f.write(f.top, manifestRel, live)
	rec, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "dir": f.top, "old": base, "new": tip, "skip": []string{manifestRel}})
	if err := os.MkdirAll(f.layout.StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(f.layout.StateDir(), "advance.json")
	if err := os.WriteFile(marker, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	f.gitIn(f.top, "update-ref", "refs/heads/main", tip, base) // then the driver died

	if err := land.Recover(f.ctx, f.git, f.layout, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := f.read(f.top, "feature/f.txt"); got != "feature\n" {
		t.Errorf("feature/f.txt = %q", got)
	}
	if !exists(filepath.Join(f.top, "roadmap/DONE_p1-first.md")) || exists(filepath.Join(f.top, "roadmap/p1-first.md")) {
		t.Error("the doc rename did not reach the checkout")
	}
	if got := f.read(f.top, manifestRel); got != live {
		t.Errorf("live manifest changed:\n%s", got)
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after recovery: %q", l)
		}
	}
	if exists(marker) {
		t.Error("the record of the move is still there")
	}
	// Nothing to do the second time.
	if err := land.Recover(f.ctx, f.git, f.layout, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// Killed before the ref moved: nothing changes but the record goes.
func TestRecoverBeforeTheRefMoved(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n"})
	rec, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "dir": f.top, "old": base, "new": tip})
	if err := os.MkdirAll(f.layout.StateDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(f.layout.StateDir(), "advance.json")
	if err := os.WriteFile(marker, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := land.Recover(f.ctx, f.git, f.layout, time.Minute); err != nil {
		t.Fatal(err)
	}
	if f.rev("main") != base || exists(filepath.Join(f.top, "feature/f.txt")) || exists(marker) {
		t.Error("recovery changed something, or kept its record")
	}
}

// An IDE holding the base checkout's index.lock while a merge lands. The
// merge used to move the ref, fail the checkout move half-way (deleted
// paths gone, new ones missing), drop the note and the record, and leave
// a checkout whose next commit reverted the merge. Now the lock is waited
// for; past the wait nothing moves and the merge says what it waits for.
func TestMergeWithTheBaseIndexLocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	f.owner.LockWait = time.Millisecond
	f.branchOut("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n", "a.txt": "a from p1\n"})
	f.gitIn(f.layout.Worktree("p1"), "rm", "-q", "b.txt")
	f.gitIn(f.layout.Worktree("p1"), "commit", "-q", "-m", "drop b")
	tip := f.rev("auto/p1")
	lock := filepath.Join(f.top, ".git", "index.lock")
	f.write(f.top, ".git/index.lock", "held by an editor\n")

	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if out.OK || out.Err != nil || !strings.Contains(out.Waiting, "index.lock") {
		t.Fatalf("outcome = %+v, want a wait naming index.lock", out)
	}
	f.refused(out, "p1", base)
	if !exists(filepath.Join(f.top, "b.txt")) {
		t.Error("b.txt deleted from the checkout of a base that did not move")
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	f.mustMerge(job("p1", "first phase", tip))
	if exists(filepath.Join(f.top, "b.txt")) || !exists(filepath.Join(f.top, "feature/f.txt")) {
		t.Error("the checkout did not follow the merge")
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after the merge: %q", l)
		}
	}
	if p, err := land.Pending(f.layout); p != nil || err != nil {
		t.Errorf("a move is still pending: %+v, %v", p, err)
	}
}

// An IDE running `git status` in a loop in the base checkout while phases
// land: every merge brings the checkout fully forward, and no commit in
// the base checkout could fall between the ref move and the checkout's.
// The loop runs 15 statuses from each merge gate on (the gate wakes it
// through a named pipe), so they fall on the ref and checkout moves that
// follow the gate; it ran without pause before, as many statuses as two
// landings took (57 at load 50), most of them while nothing moved.
func TestMergeBesideAGitStatusLoop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	wake := filepath.Join(t.TempDir(), "wake")
	if err := syscall.Mkfifo(wake, 0o600); err != nil {
		t.Fatal(err)
	}
	ide := exec.Command("sh", "-c", `while read -r x < "$1"; do
  [ "$x" = stop ] && exit 0
  i=0; while [ $i -lt 15 ]; do git status >/dev/null 2>&1; i=$((i + 1)); done
done; exit 1`, "sh", wake)
	ide.Dir, ide.Env = f.top, f.env
	if err := ide.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Opening the pipe waits for the loop's next read: its
		// statuses are over.
		if err := os.WriteFile(wake, []byte("stop\n"), 0o600); err != nil {
			t.Error(err)
		}
		if err := ide.Wait(); err != nil {
			t.Errorf("the status loop: %v", err)
		}
	}()
	for i, id := range []string{"p1", "p2"} {
		doc := map[string]string{"p1": "p1-first.md", "p2": "p2-second.md"}[id]
		wt, _ := f.branchOut(id, doc, map[string]string{fmt.Sprintf("api/f%d.go", i): "package api\n"})
		f.gitIn(wt, "rm", "-q", []string{"a.txt", "b.txt"}[i])
		f.gitIn(wt, "commit", "-q", "-m", "drop a file")
		j := job(id, "phase", f.rev(f.layout.Branch(id)))
		j.Gate = "echo go > '" + wake + "'"
		f.mustMerge(j)
		for _, l := range f.status() {
			if !strings.HasSuffix(l, manifestRel) {
				t.Errorf("git status after merging %s: %q", id, l)
			}
		}
	}
}

// A move that could not finish stays recorded, shows as pending, and is
// finished by the next start once the lock is free; a lock a killed
// driver left is its own to clear.
func TestRecoverWaitsForTheIndexLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n"})
	rec, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "dir": f.top, "old": base, "new": tip, "skip": []string{manifestRel}})
	f.write(f.layout.StateDir(), "advance.json", string(rec))
	f.gitIn(f.top, "update-ref", "refs/heads/main", tip, base)
	f.write(f.top, ".git/index.lock", "held by an editor\n")

	if err := land.Recover(f.ctx, f.git, f.layout, time.Millisecond); err == nil || !strings.Contains(err.Error(), "index.lock") {
		t.Fatalf("Recover with the index locked = %v, want an error naming index.lock", err)
	}
	if p, err := land.Pending(f.layout); p == nil || err != nil || p.New != tip {
		t.Fatalf("Pending = %+v, %v; want the move to %s", p, err, tip)
	}
	os.Remove(filepath.Join(f.top, ".git", "index.lock"))
	// A driver killed while it held the lock left its own: cleared.
	l, err := f.git.LockIndex(f.ctx, f.top, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_ = l // never released: the driver died
	if err := land.Recover(f.ctx, f.git, f.layout, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if p, _ := land.Pending(f.layout); p != nil {
		t.Errorf("still pending after recovery: %+v", p)
	}
	if !exists(filepath.Join(f.top, "feature/f.txt")) {
		t.Error("the checkout did not follow")
	}
	for _, l := range f.status() {
		if !strings.HasSuffix(l, manifestRel) {
			t.Errorf("git status after recovery: %q", l)
		}
	}
}

// A driver killed while it held the base checkout's index lock, before it
// recorded any move: the next merge clears the lock (it carries the
// driver's mark) instead of waiting on it for ever.
func TestMergeClearsAKilledDriversIndexLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	f.owner.LockWait = time.Millisecond
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"feature/f.txt": "feature\n"})
	if _, err := f.git.LockIndex(f.ctx, f.top, time.Minute); err != nil { // never released: the driver died
		t.Fatal(err)
	}
	f.mustMerge(job("p1", "first phase", tip))
	if exists(filepath.Join(f.top, ".git", "index.lock")) {
		t.Error("index.lock left")
	}
}
