package issues

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSyncFetchesOnlyWhatMoved: sync (bringIn, the review's live base,
// BaseTip) asks the remote once and fetches only a branch whose tip is
// not already its remote-tracking ref: nothing when nothing moved (no
// FETCH_HEAD written), the base once it moved, an issue's branch the
// clone has never fetched; a branch the remote lacks is absent from the
// tips, and a base the remote lacks is an error.
func TestSyncFetchesOnlyWhatMoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.queue("w", &syncBuf{}, nil)
	ctx := context.Background()
	fetchHead := filepath.Join(q.git.Dir, ".git", "FETCH_HEAD")
	tracking := func(b string) string {
		t.Helper()
		sha, err := q.git.RevParse(ctx, "refs/remotes/origin/"+b)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	tips, err := q.sync(ctx, "main", Branch(1))
	if err != nil || len(tips) != 1 || tips["main"] != e.originRef("refs/heads/main") {
		t.Fatalf("tips %v, %v: want main's alone", tips, err)
	}
	if _, err := os.Stat(fetchHead); err == nil {
		t.Fatal("fetched although nothing moved")
	}
	moved := e.originCommit("main", "base.txt", "moved\n", "the base moves")
	branch := e.originCommit(Branch(1), "work.txt", "work\n", "another machine's attempt")
	if tips, err = q.sync(ctx, "main", Branch(1)); err != nil || tips["main"] != moved || tips[Branch(1)] != branch {
		t.Fatalf("tips %v, %v: want main at %s, the branch at %s", tips, err, moved, branch)
	}
	if tracking("main") != moved || tracking(Branch(1)) != branch {
		t.Errorf("remote-tracking refs: main %s, the branch %s", tracking("main"), tracking(Branch(1)))
	}
	if err := q.syncBase(ctx); err != nil {
		t.Errorf("syncBase: %v", err)
	}
	q.cfg.Base = "trunk"
	if err := q.syncBase(ctx); err == nil {
		t.Error("a base the remote lacks gave no error")
	}
}
