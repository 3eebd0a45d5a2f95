package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// A `git merge` of the base into a phase worktree writes the files one by
// one (a smudge filter such as git-lfs's makes that take seconds), then
// the index, then the commit. A driver killed in between (its git dies
// with it) left the worktree with part of the merge applied, no
// MERGE_HEAD, and an index.lock: every later merge there failed ("Your
// local changes ... would be overwritten by merge"), and a leftover
// commit would have taken the half merge for the agent's work. So the
// agent's leftovers are committed first, the intent is recorded before
// git starts, and a later attempt that finds the record sets the worktree
// back to the branch tip and merges again.

// mergeIntent is the record of a merge of the driver's into a phase
// worktree: the branch tip it started from, the commit being merged in,
// and what was uncommitted before (the environment WORKTREE_PREPARE_CMD
// made, files with conflict markers), which a restore leaves alone.
type mergeIntent struct {
	Tip    string   `json:"tip"`
	Ref    string   `json:"ref"`
	Before []string `json:"before,omitempty"`
}

// MergingMark is the record the driver keeps while it merges into phase
// id's worktree; it outlives the merge only when git was cut off.
func MergingMark(l state.Layout, id string) string {
	return filepath.Join(l.StateDir(), "merging-"+state.SafeName(id))
}

// GuardedMerge merges ref into the branch checked out in the phase
// worktree wt (which OwnGitDir has checked), recorded in MergingMark
// while git runs. Conflicts are left in place, as git merge leaves them.
// The record stays only when git did not end on its own (killed with the
// driver, or cancelled by an interrupt).
func GuardedMerge(ctx context.Context, git *worktree.Client, l state.Layout, id, wt, ref string) error {
	tip, err := headCommit(ctx, git, wt)
	if err != nil {
		return fmt.Errorf("merge %s into %s: %w", ref, wt, err)
	}
	commit, err := git.RevParse(ctx, ref)
	if err != nil {
		return fmt.Errorf("merge %s into %s: %w", ref, wt, err)
	}
	dirty, err := git.Dirty(ctx, wt)
	if err != nil {
		return fmt.Errorf("merge %s into %s: %w", ref, wt, err)
	}
	mark := MergingMark(l, id)
	if err := writeIntent(mark, mergeIntent{Tip: tip, Ref: commit, Before: dirty}); err != nil {
		return fmt.Errorf("record the merge of %s into %s: %w", ref, wt, err)
	}
	err = git.MergeInto(ctx, wt, commit)
	var ge *worktree.GitError
	if err == nil || errors.As(err, &ge) && ge.ExitCode >= 0 && ctx.Err() == nil {
		// git ended on its own: merged, stopped at conflicts (it wrote
		// MERGE_HEAD last), or refused before writing anything.
		os.Remove(mark)
	}
	return err
}

// headCommit is the commit checked out in the phase worktree wt: its
// admin folder's HEAD names the branch (as the files backend writes it)
// and the resolver reads the branch's tip, where a `git rev-parse HEAD`
// in wt was one process a merge. Anything else (a detached HEAD, a
// reftable stub, a branch the resolver cannot read) asks git there.
func headCommit(ctx context.Context, git *worktree.Client, wt string) (string, error) {
	gd, err := OwnGitDir(ctx, git, wt)
	if err != nil {
		return "", err
	}
	if b, err := os.ReadFile(filepath.Join(gd, "HEAD")); err == nil {
		if branch, ok := strings.CutPrefix(string(b), "ref: refs/heads/"); ok && strings.HasSuffix(branch, "\n") && branch != ".invalid\n" {
			if tip, err := git.RevParse(ctx, "refs/heads/"+strings.TrimSuffix(branch, "\n")); err == nil {
				return tip, nil
			}
		}
	}
	return git.GitIn(ctx, wt, "rev-parse", "--verify", "-q", "HEAD^{commit}")
}

func writeIntent(path string, in mergeIntent) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o644)
}

// readIntent reads a merge record; nil when there is none. A record torn
// by a crash was never followed by git (it is renamed into place before
// git starts): it is dropped.
func readIntent(path string) (*mergeIntent, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var in mergeIntent
	if err := json.Unmarshal(b, &in); err != nil || in.Tip == "" || in.Ref == "" {
		os.Remove(path)
		return nil, nil
	}
	return &in, nil
}

// mergeRef merges ref into the branch checked out in wt: what the agent
// left uncommitted is committed first, so that whatever a merge cut off
// leaves is the driver's own. Conflicts are left in place and their paths
// returned; a merge already in progress is left alone.
func (r *Runner) mergeRef(ctx context.Context, j scheduler.Job, wt, ref string) ([]string, error) {
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return nil, err
	}
	// The admin folder just checked says whether a merge is under way
	// (no MERGE_HEAD file there: none, no git asked; a rev-parse a merge
	// of the base before).
	if r.Git.MergeInProgressIn(ctx, wt, gd) {
		return r.unmerged(ctx, wt)
	}
	msg := fmt.Sprintf("claudopilot: commit work left uncommitted in %s's worktree before merging %s into it", j.ID, ref)
	if err := r.commitLeft(ctx, j, wt, msg); err != nil {
		return nil, fmt.Errorf("before merging %s into the branch: %w", ref, err)
	}
	err = GuardedMerge(ctx, r.Git, r.Layout, j.ID, wt, ref)
	if err == nil {
		return nil, nil
	}
	paths, uerr := r.unmerged(ctx, wt)
	if uerr != nil || len(paths) == 0 {
		return nil, fmt.Errorf("merge %s into the branch: %w", ref, err)
	}
	return paths, nil
}

// redoCutMerge finishes what a merge of the driver's into the phase's
// worktree left when it was cut off (MergingMark remains): the worktree
// goes back to the branch tip the merge started from, and the same
// commit is merged again; conflicts it meets are left for the checks that
// follow. A merge that got as far as its commit or its conflicts is done:
// only the record goes. note says what was done, for the attempt's log.
func (r *Runner) redoCutMerge(ctx context.Context, j scheduler.Job, wt string) (note string, err error) {
	mark := MergingMark(r.Layout, j.ID)
	in, err := readIntent(mark)
	if in == nil || err != nil {
		return "", err
	}
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return "", err
	}
	head, err := r.Git.RevParse(ctx, "refs/heads/"+r.target(j).branch)
	if err != nil {
		return "", err
	}
	if head != in.Tip || r.Git.MergeInProgressIn(ctx, wt, gd) {
		return "", os.Remove(mark)
	}
	if err := r.restoreTip(ctx, wt, in); err != nil {
		return "", fmt.Errorf("set %s back to %.12s after a merge that was cut off: %w", wt, in.Tip, err)
	}
	if err := os.Remove(mark); err != nil {
		return "", err
	}
	if _, err := r.mergeRef(ctx, j, wt, in.Ref); err != nil {
		return "", err
	}
	return fmt.Sprintf("the driver's merge of %.12s into %s was cut off half-way (the driver was stopped); the worktree was set back to %.12s and the merge made again", in.Ref, r.target(j).branch, in.Tip), nil
}

// restoreTip undoes what a cut-off merge wrote in wt: the index goes back
// to the branch tip, tracked files the merge changed are checked out from
// it, and files it created are removed. What was uncommitted before the
// merge (in.Before) stays as it is: git merge never touches those.
func (r *Runner) restoreTip(ctx context.Context, wt string, in *mergeIntent) error {
	if err := r.Git.Unstage(ctx, wt, nil); err != nil {
		return err
	}
	st, err := r.Git.Status(ctx, wt)
	if err != nil {
		return err
	}
	var tracked []string
	for _, c := range st {
		if slices.Contains(in.Before, c.Path) {
			continue
		}
		if c.X == '?' {
			if err := os.Remove(filepath.Join(wt, filepath.FromSlash(c.Path))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		tracked = append(tracked, c.Path)
	}
	return r.Git.RestorePaths(ctx, wt, tracked)
}
