package issues

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSyncFetchesOnlyWhatMoved: sync (bringIn) asks GitHub for the tips and
// fetches only a branch whose tip is not already its remote-tracking ref:
// nothing when nothing moved (no FETCH_HEAD written), the base once it
// moved, an issue's branch the clone has never fetched; a branch GitHub
// lacks is absent from the tips. liveBase (the review's live base,
// BaseTip) is sync of the base, and a base GitHub lacks is an error.
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
	if tip, err := q.liveBase(ctx); err != nil || tip != e.originRef("refs/heads/main") {
		t.Fatalf("liveBase: %s, %v: want origin's main", tip, err)
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
	if err := os.Remove(fetchHead); err != nil {
		t.Fatal(err)
	}
	if tip, err := q.liveBase(ctx); err != nil || tip != moved {
		t.Errorf("liveBase: %s, %v: want %s", tip, err, moved)
	}
	if _, err := os.Stat(fetchHead); err == nil {
		t.Error("liveBase fetched a base the clone has at its tip")
	}
	again := e.originCommit("main", "base.txt", "again\n", "the base moves again")
	if tip, err := q.liveBase(ctx); err != nil || tip != again || tracking("main") != again {
		t.Errorf("liveBase: %s, %v: want the base fetched at %s", tip, err, again)
	}
	asked := countRequests(e.fake.Requests(), "GET", "/git/ref/heads/main")
	if asked != 5 {
		t.Errorf("GitHub asked %d times for main's tip, want 5 (once per sync and liveBase)", asked)
	}
	q.cfg.Base = "trunk"
	if _, err := q.liveBase(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("a base GitHub lacks: %v, want ErrNotFound", err)
	}
}
