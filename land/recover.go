package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// advance records a move of the base checkout in progress: written before
// the base ref moves, removed once the checkout has followed it.
type advance struct {
	Ref  string   `json:"ref"`
	Dir  string   `json:"dir"`
	Old  string   `json:"old"`
	New  string   `json:"new"`
	Skip []string `json:"skip,omitempty"`
}

func advancePath(l state.Layout) string { return filepath.Join(l.StateDir(), "advance.json") }

func (a *advance) save(l state.Layout) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.StateDir(), 0o755); err != nil {
		return err
	}
	return roadmap.WriteAtomic(advancePath(l), b)
}

func (a *advance) done(l state.Layout) {
	if a != nil {
		os.Remove(advancePath(l))
	}
}

// PendingMove is a move of the base checkout that was recorded and not
// finished: the base ref moved to New, the checkout in Dir may still be at
// Old. `status` and `doctor` show it; the next merge or run finishes it.
type PendingMove struct {
	Dir, Old, New string
}

// Pending reads the record of a pending move; nil when there is none.
func Pending(l state.Layout) (*PendingMove, error) {
	a, err := readAdvance(l)
	if a == nil || err != nil {
		return nil, err
	}
	return &PendingMove{Dir: a.Dir, Old: a.Old, New: a.New}, nil
}

func readAdvance(l state.Layout) (*advance, error) {
	a, err := readState[advance](advancePath(l))
	if errors.Is(err, errTorn) {
		// Torn before the ref moved: nothing was changed.
		os.Remove(advancePath(l))
		return nil, nil
	}
	return a, err
}

// Recover finishes a move of the base checkout that a killed driver (or a
// failed step) left half done: the base ref already names the merge commit
// but the files and index were not, or not all, brought forward. Without
// it the checkout would show the merge's changes reversed (and the user's
// next commit would revert them), and a phase doc could be missing from
// the roadmap. Run it under the driver lock, before the roadmap is read.
// A lock another process holds on the checkout's index is waited for, up
// to wait.
func Recover(ctx context.Context, git *worktree.Client, l state.Layout, wait time.Duration) error {
	a, err := readAdvance(l)
	if a == nil || err != nil {
		return err
	}
	// Under the driver lock no other driver runs: an index.lock of ours
	// was left by a driver killed while it held it.
	if _, err := git.ClearOwnIndexLock(ctx, a.Dir); err != nil {
		return fmt.Errorf("recover the checkout move: %w", err)
	}
	return finishMove(ctx, git, l, a, wait)
}

// finishMove completes a recorded move and forgets it. Every step of the
// move is idempotent: doing it again finishes what was cut off.
func finishMove(ctx context.Context, git *worktree.Client, l state.Layout, a *advance, wait time.Duration) error {
	cur, err := git.RevParse(ctx, a.Ref)
	if err != nil {
		return fmt.Errorf("recover the checkout move: %w", err)
	}
	if cur == a.New {
		lock, err := git.LockIndex(ctx, a.Dir, wait)
		if err != nil {
			return fmt.Errorf("finish moving %s forward: %w", a.Dir, err)
		}
		err = lock.Advance(context.WithoutCancel(ctx), a.Old, a.New, a.Skip)
		if rerr := lock.Release(); err == nil {
			err = rerr
		}
		if err != nil {
			return fmt.Errorf("finish moving %s forward: %w", a.Dir, err)
		}
	}
	// cur == a.Old: the ref never moved, nothing to finish. Any other
	// value: the base moved on since; leave it to git status.
	a.done(l)
	return nil
}

// finishPending completes a move a earlier merge could not, before the
// next merge looks at the checkout.
func (o *Owner) finishPending(ctx context.Context) error {
	a, err := readAdvance(o.Layout)
	if a == nil || err != nil {
		return err
	}
	return finishMove(ctx, o.Git, o.Layout, a, o.lockWait())
}

// errTorn is a state file that does not parse (cut short by a crash).
var errTorn = errors.New("state file does not parse")

// readState reads a JSON state file: nil when it does not exist, errTorn
// (wrapped) when it does not parse, for the caller to decide what a torn
// file means.
func readState[T any](path string) (*T, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", errTorn, err)
	}
	return &v, nil
}
