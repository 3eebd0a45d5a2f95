package land

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Litter is something runs left of a landed phase that nothing uses any
// more: a note of the driver's about its worktree (work.PhaseNotes), left
// by a driver killed mid-attempt, or its worktree folder that git no
// longer lists, left by a kill during the folder's removal.
type Litter struct {
	ID     string
	Path   string
	Folder bool
}

// Describe says what the litter is, for `clean`.
func (l Litter) Describe() string {
	if l.Folder {
		return fmt.Sprintf("%s is merged; git no longer lists this worktree (its removal was cut off)", l.ID)
	}
	return fmt.Sprintf("%s is merged; a note about its worktree", l.ID)
}

// FindLitter lists the litter of the landed phases ids. A worktree folder
// git still lists is no litter (clean and the merge owner remove it as a
// worktree), nor is a folder moved aside as .broken-<n>.
func FindLitter(ctx context.Context, git *worktree.Client, l state.Layout, ids []string) ([]Litter, error) {
	return FindLitterIn(l, ids, func() ([]worktree.Worktree, error) { return git.Worktrees(ctx) })
}

// FindLitterIn is FindLitter with the worktrees git lists read by list,
// only when a folder needs them (a caller's listing of the moment,
// LeftoversIn).
func FindLitterIn(l state.Layout, ids []string, list func() ([]worktree.Worktree, error)) ([]Litter, error) {
	var out, folders []Litter
	for _, id := range ids {
		for _, p := range work.PhaseNotes(l, id) {
			if _, err := os.Lstat(p); err == nil {
				out = append(out, Litter{ID: id, Path: p})
			}
		}
		if wt := l.Worktree(id); exists(wt) {
			folders = append(folders, Litter{ID: id, Path: wt, Folder: true})
		}
	}
	if len(folders) == 0 {
		return out, nil
	}
	wts, err := list()
	if err != nil {
		return nil, err
	}
	for _, f := range folders {
		if !slices.ContainsFunc(wts, func(w worktree.Worktree) bool { return !w.Prunable && samePath(w.Path, f.Path) }) {
			out = append(out, f)
		}
	}
	return out, nil
}

// RemoveLitter removes what FindLitter found, and then the registrations
// of removed folders that git still held.
func RemoveLitter(ctx context.Context, git *worktree.Client, ls []Litter) error {
	var errs []error
	folders := false
	for _, x := range ls {
		var err error
		if x.Folder {
			folders = true
			err = os.RemoveAll(x.Path)
		} else if err = os.Remove(x.Path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if folders {
		errs = append(errs, git.Prune(ctx))
	}
	return errors.Join(errs...)
}

// sweepLitter removes the litter of the landed phases ids, and the record
// of a foreign base move that an earlier run left (this run has watched
// the base since it started: its own finds are its own record).
func (o *Owner) sweepLitter(ctx context.Context, ids []string) error {
	ls, err := FindLitter(ctx, o.Git, o.Layout, ids)
	if err == nil {
		err = RemoveLitter(ctx, o.Git, ls)
	}
	o.base.mu.Lock()
	since := o.base.since
	o.base.mu.Unlock()
	if m, merr := LastBaseMove(o.Layout); since.IsZero() || merr != nil || m == nil || !m.At.Before(since) {
		return err
	}
	return errors.Join(err, ForgetBaseMove(o.Layout))
}

// ForgetBaseMove removes the record of the last foreign base move
// (.claudopilot/state/base-moved.json), if any.
func ForgetBaseMove(l state.Layout) error {
	if err := os.Remove(baseMovedPath(l)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// BaseMovedPath is the record of the last foreign move of the base.
func BaseMovedPath(l state.Layout) string { return baseMovedPath(l) }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
