package land

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
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

func advancePath(l scheduler.Layout) string { return filepath.Join(l.StateDir(), "advance.json") }

func (a *advance) save(l scheduler.Layout) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.StateDir(), 0o755); err != nil {
		return err
	}
	return roadmap.WriteAtomic(advancePath(l), b)
}

func (a *advance) done(l scheduler.Layout) {
	if a != nil {
		os.Remove(advancePath(l))
	}
}

// Recover finishes a move of the base checkout that a killed driver left
// half done: the base ref already names the merge commit but the files and
// index were not, or not all, brought forward. Without it the checkout
// would show the merge's changes reversed, and a phase doc could be
// missing from the roadmap. Run it under the driver lock, before the
// roadmap is read.
func Recover(ctx context.Context, git *worktree.Client, l scheduler.Layout) error {
	b, err := os.ReadFile(advancePath(l))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var a advance
	if err := json.Unmarshal(b, &a); err != nil {
		// Torn before the ref moved: nothing was changed.
		a.done(l)
		return nil
	}
	cur, err := git.RevParse(ctx, a.Ref)
	if err != nil {
		return fmt.Errorf("recover the checkout move: %w", err)
	}
	if cur == a.New {
		// Every step of the move is idempotent: doing it again finishes
		// what was cut off.
		if err := git.AdvanceCheckout(ctx, a.Dir, a.Old, a.New, a.Skip); err != nil {
			return fmt.Errorf("finish moving %s forward after a crash: %w", a.Dir, err)
		}
	}
	// cur == a.Old: killed before the ref moved, nothing to finish. Any
	// other value: the base moved on since; leave it to git status.
	a.done(l)
	return nil
}
