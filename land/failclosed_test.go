package land_test

import (
	"github.com/claudopilot/claudopilot/land"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A check that cannot run stops the landing: here the branch names a blob
// the object store lacks, so the diff the checks read (`git diff-tree
// -p`) fails. The conflict-marker
// check used to read that as "no markers" and the merge went on to land a
// commit whose file cannot be read.
func TestMergeStopsWhenTheMarkerCheckCannotRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	// Committed by `git commit`, as an agent does: the blob is a loose
	// object, as f.branch's import writes it too; it is removed below.
	wt, _ := f.branchOut("p1", "p1-first.md", nil)
	tip := f.commitOn(wt, "lost", map[string]string{"lost.txt": "a blob that goes missing\n"})
	blob := f.gitIn(f.top, "rev-parse", tip+":lost.txt")
	if err := os.Remove(filepath.Join(f.top, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	out := f.owner.Merge(f.ctx, job("p1", "first phase", tip))
	if out.OK || out.Err == nil || !strings.Contains(out.Err.Error(), "conflict-marker check") {
		t.Fatalf("outcome = %+v, want an error naming the conflict-marker check", out)
	}
	if got := f.rev("main"); got != base {
		t.Errorf("main moved to %s", got)
	}
}

// The scope, protected-file and marker checks fail closed on a git error:
// an answer of "nothing out of scope", "nothing protected" or "no markers"
// needs the diff read.
func TestChecksFailClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	_, tip := f.branch("p2", "p2-second.md", map[string]string{"web/x.js": "x\n"})
	j := job("p2", "second phase", tip)
	j.Owns = []string{"api/"}
	base := f.rev("main")
	changed, err := land.Changes(f.owner, f.ctx, j, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	if bad := land.OutOfScope(f.owner, j, changed); len(bad) != 1 {
		t.Fatalf("OutOfScope on a readable branch = %v; want [web/x.js]", bad)
	}
	missing := "0000000000000000000000000000000000000001"
	if changed, err := land.Changes(f.owner, f.ctx, j, base, missing); err == nil {
		t.Errorf("the changes of an unreadable tip = %v, nil; want an error", changed)
	}
	if bad, err := land.Markers(f.owner, f.ctx, []string{"web/x.js"}, missing); err == nil {
		t.Errorf("Markers with an unreadable tip = %v, nil; want an error", bad)
	}
}

// A tip the store lacks has no merge base with the base, and that is no
// answer: the landing stops with an error (since the checks read the
// merge's diff, issue 25 §1, the merge's build is what cannot run; the
// checks' own diff of such a tip is an error too, TestChecksFailClosed).
func TestMergeStopsWithoutAMergeBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	base := f.rev("main")
	out := f.owner.Merge(f.ctx, job("p1", "first phase", "0000000000000000000000000000000000000001"))
	if out.OK || out.Err == nil {
		t.Fatalf("outcome = %+v, want an error", out)
	}
	if got := f.rev("main"); got != base {
		t.Errorf("main moved to %s", got)
	}
}
