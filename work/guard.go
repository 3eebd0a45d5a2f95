package work

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// notePath is where the runner keeps a note about phase id's worktree:
// in the driver's state folder, which an agent (even a sandboxed one, whose
// worktree admin folder is writable) cannot rewrite to its liking.
//
//   - "environment": what was untracked once WORKTREE_PREPARE_CMD had run
//     (NUL-separated): the environment (a copied .env, a generated
//     config), never the agent's work;
//   - "attempt": the tracked paths missing from the checkout when the
//     current attempt's agent started. An attempt a killed driver left
//     keeps its note: the resumed attempt continues that work.
func (r *Runner) notePath(id, kind string) string {
	return noteIn(r.Layout, id, kind)
}

func noteIn(l state.Layout, id, kind string) string {
	return filepath.Join(l.StateDir(), kind+"-"+state.SafeName(id))
}

// forgetNotes drops the notes of a worktree that was made anew.
func (r *Runner) forgetNotes(id string) {
	os.Remove(r.notePath(id, "environment"))
	os.Remove(r.notePath(id, "attempt"))
	os.Remove(MergingMark(r.Layout, id)) // a record of the worktree set aside
}

// OwnGitDir returns the admin folder of the phase worktree wt, and fails
// unless git, run in wt, works on exactly that folder
// (worktree.Client.OwnGitDir). No git command that changes anything may
// run in a phase worktree before this check.
func OwnGitDir(ctx context.Context, git *worktree.Client, wt string) (string, error) {
	return git.OwnGitDir(ctx, wt)
}

// scannable is OwnGitDir for a worktree the driver is about to scan
// (git status, git add -A) after an agent, a gate or prepare ran in it: it
// also fails when a gitlink there holds a repository (Populated), whose
// own config git would run outside the sandbox.
func scannable(ctx context.Context, git *worktree.Client, wt string) (string, error) {
	gd, err := OwnGitDir(ctx, git, wt)
	if err != nil {
		return "", err
	}
	return gd, noNested(ctx, git, wt)
}

// noNested is scannable's second half, for a worktree OwnGitDir checked.
func noNested(ctx context.Context, git *worktree.Client, wt string) error {
	nested, err := git.Populated(ctx, wt)
	if err != nil {
		return err
	}
	if len(nested) > 0 {
		return fmt.Errorf("the worktree %s holds a repository at %s (a gitlink with a .git in its checkout): the driver's git status and git add would run git there, with that repository's config and filters; a submodule cannot be checked out in a phase's worktree", wt, strings.Join(first(nested, 5), ", "))
	}
	return nil
}

// usable reports why an existing phase worktree cannot be used as it is:
// git must list it, it must not be locked (a `git worktree add` that was
// killed leaves it locked as "initializing"), and its checkout must be
// populated (it has an index). "" means usable. A HEAD moved off the
// branch is not repaired here: that is an agent's doing, and checkHead
// fails the attempt for it.
//
// All three are read from the admin folder, as `git worktree list` reads
// them (one git process per reused worktree before): OwnGitDir checked
// that it is a folder of the repository's worktrees/ (git lists each),
// whose gitdir names wt's .git, which is there (so git would not call it
// prunable), with a commondir and a HEAD; git's "locked" is a locked file
// there.
func (r *Runner) usable(ctx context.Context, wt string) (string, error) {
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return err.Error(), nil
	}
	if _, err := os.Lstat(filepath.Join(gd, "locked")); err == nil {
		return "it is locked (a worktree add that did not finish)", nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(gd, "index")); err != nil {
		return "its checkout was never populated", nil
	}
	return "", nil
}

// setAside moves a worktree folder that cannot be used out of the way
// (never deleting it: it may hold something of the user's) and drops its
// registration, so a new worktree can be added at its place.
func (r *Runner) setAside(ctx context.Context, wt string) error {
	if err := r.Git.UnlockWorktree(ctx, wt); err != nil {
		return err
	}
	aside := fmt.Sprintf("%s.broken-%d", wt, r.now().UnixNano())
	if err := os.Rename(wt, aside); err != nil {
		return fmt.Errorf("move the unusable worktree %s aside: %w", wt, err)
	}
	return r.Git.Prune(ctx)
}

// recordEnvironment notes what is untracked in a freshly prepared
// worktree: leftover commits never take it.
func (r *Runner) recordEnvironment(ctx context.Context, id, wt string) error {
	if _, err := scannable(ctx, r.Git, wt); err != nil {
		return err
	}
	st, err := r.Git.Status(ctx, wt)
	if err != nil {
		return err
	}
	var env []string
	for _, c := range st {
		if c.X == '?' {
			env = append(env, c.Path)
		}
	}
	return writeList(r.notePath(id, "environment"), env)
}

// environment reads what recordEnvironment noted for phase id.
func (r *Runner) environment(id string) (map[string]bool, error) {
	return readList(r.notePath(id, "environment"))
}

// recordAttemptStart notes the tracked paths missing from the checkout
// before the agent starts, unless an interrupted attempt's note is there.
// fresh: the worktree was made for this attempt, and nothing of an
// agent's ran in it yet (recordEnvironment checked it after prepare).
func (r *Runner) recordAttemptStart(ctx context.Context, id, wt string, fresh bool) error {
	if _, err := OwnGitDir(ctx, r.Git, wt); err != nil {
		return err
	}
	file := r.notePath(id, "attempt")
	if _, err := os.Stat(file); err == nil {
		return nil
	}
	if fresh && r.Prepare == "" {
		// Just checked out by git, and nothing but the driver's own
		// merges ran in it since: nothing tracked is missing, and a git
		// status would only say so (one process per attempt, issue 25).
		return writeList(file, nil)
	}
	if !fresh {
		if err := noNested(ctx, r.Git, wt); err != nil {
			return err
		}
	}
	st, err := r.Git.Status(ctx, wt)
	if err != nil {
		return err
	}
	var missing []string
	for _, c := range st {
		if c.X == 'D' || c.Y == 'D' {
			missing = append(missing, c.Path)
		}
	}
	return writeList(file, missing)
}

func writeList(file string, paths []string) error {
	var b bytes.Buffer
	for _, p := range paths {
		b.WriteString(p)
		b.WriteByte(0)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	// Fsynced: a driver killed mid-attempt reads the note on resume
	// (recordAttemptStart keeps an interrupted attempt's).
	return atomicfile.Write(file, b.Bytes(), 0o644)
}

func readList(file string) (map[string]bool, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	} else if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for p := range strings.SplitSeq(string(b), "\x00") {
		if p != "" {
			set[p] = true
		}
	}
	return set, nil
}

// refusedError is a leftover commit the driver would not make: it failed
// closed, and the attempt fails with reason worktree.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// commitLeftovers commits whatever the agent left uncommitted, so it is
// never lost, in a commit that says so. It never commits: in a worktree
// that is not its own (OwnGitDir); the environment prepare made; a file
// with conflict markers (left uncommitted); or the deletion of a tracked
// file that was already missing when the agent started (the agent did not
// delete it: the checkout was broken), which refuses the whole commit.
func (r *Runner) commitLeftovers(ctx context.Context, j scheduler.Job, wt string) error {
	return r.commitLeft(ctx, j, wt, fmt.Sprintf("claudopilot: commit work left uncommitted by %s attempt %d of %s", j.Role, j.Attempt, j.ID))
}

// commitLeft is commitLeftovers with the commit's message.
func (r *Runner) commitLeft(ctx context.Context, j scheduler.Job, wt, msg string) error {
	if _, err := os.Stat(wt); err != nil {
		return &refusedError{fmt.Sprintf("the worktree %s is gone", wt)}
	}
	gd, err := scannable(ctx, r.Git, wt)
	if err != nil {
		return &refusedError{err.Error()}
	}
	if err := r.clearStaleLocks(ctx, wt, gd, r.target(j).branch); err != nil {
		return &refusedError{err.Error()}
	}
	// A merge of the base that still has conflicts must not be concluded:
	// committing it would put the markers on the branch, and from there on
	// the base. Abort it; the next supervisor merges again.
	if r.Git.MergeInProgressIn(ctx, wt, gd) {
		if paths, err := r.unmerged(ctx, wt); err == nil && len(paths) > 0 {
			if err := r.Git.MergeAbort(ctx, wt); err != nil {
				return fmt.Errorf("abort the unfinished merge in %s: %w", wt, err)
			}
			return nil
		}
	}
	env, err := r.environment(j.ID)
	if err != nil {
		return err
	}
	missing, err := readList(r.notePath(j.ID, "attempt"))
	if err != nil {
		return err
	}
	if left, err := r.anythingLeft(ctx, j, wt, env); err != nil {
		return err
	} else if !left {
		return nil
	}
	if err := r.Git.StageAll(ctx, wt); err != nil {
		return fmt.Errorf("stage the leftovers in %s: %w", wt, err)
	}
	staged, err := r.stagedChanges(ctx, wt)
	if err != nil {
		r.unstage(ctx, wt, nil)
		return &refusedError{err.Error()}
	}
	keepOut, err := r.keptOut(ctx, j, wt, staged, env, missing)
	if err != nil {
		return err
	}
	marked, err := r.stagedMarkers(ctx, wt)
	if err != nil {
		r.unstage(ctx, wt, nil)
		return &refusedError{err.Error()}
	}
	keepOut = append(keepOut, marked...)
	if len(keepOut) > 0 {
		if err := r.unstage(ctx, wt, keepOut); err != nil {
			return &refusedError{err.Error()}
		}
	}
	if len(marked) > 0 {
		noteInLog(r.Layout.LogPath(j.ID, string(j.Role), j.Attempt), "claudopilot: left uncommitted, conflict markers: "+strings.Join(marked, ", "))
	}
	// With nothing unstaged since, the list above says whether anything
	// is staged; after an unstage git is asked.
	if len(keepOut) == 0 && len(staged) == 0 || len(keepOut) > 0 && !r.Git.HasStaged(ctx, wt) {
		return nil
	}
	if err := r.Git.CommitStaged(ctx, wt, msg); err != nil {
		return fmt.Errorf("commit the leftovers in %s: %w", wt, err)
	}
	return nil
}

// keptOut are the staged paths a leftover commit leaves out: the
// environment prepare made and an outside node's doc. It refuses the
// commit (everything unstaged) when it would delete a tracked file that was
// already missing when the agent started: the checkout is broken.
func (r *Runner) keptOut(ctx context.Context, j scheduler.Job, wt string, staged map[string]byte, env, missing map[string]bool) ([]string, error) {
	var deleted, keepOut []string
	for p, st := range staged {
		switch {
		case env[p], j.Outside != nil && p == path.Clean(j.Outside.DocRel):
			// An outside node's doc is the driver's copy of the issue,
			// written in before each run: never the agent's work, and
			// never on the branch (.claudopilot/ being excluded or not).
			keepOut = append(keepOut, p)
		case st == 'D' && missing[p]:
			deleted = append(deleted, p)
		}
	}
	if len(deleted) > 0 {
		slices.Sort(deleted)
		r.unstage(ctx, wt, nil)
		return nil, &refusedError{fmt.Sprintf("the leftover commit would delete %d tracked files that were already missing when the agent started (%s): the checkout is broken; nothing was committed", len(deleted), strings.Join(first(deleted, 5), ", "))}
	}
	return keepOut, nil
}

// anythingLeft is false when the agent left nothing a leftover commit
// could take: git status lists nothing but what never lands (the
// environment prepare made, an outside node's doc, untracked). Then the
// add -A, the staged list and the marker check that follow would stage
// nothing: one process instead of three (issue 25 §1). Anything else
// goes through them.
func (r *Runner) anythingLeft(ctx context.Context, j scheduler.Job, wt string, env map[string]bool) (bool, error) {
	st, err := r.Git.Status(ctx, wt)
	if err != nil {
		return false, fmt.Errorf("list the leftovers in %s: %w", wt, err)
	}
	for _, c := range st {
		never := env[c.Path] || j.Outside != nil && c.Path == path.Clean(j.Outside.DocRel)
		if c.X != '?' || !never {
			return true, nil
		}
	}
	return false, nil
}

// endAttempt drops the attempt's start note once its leftovers are dealt
// with.
func (r *Runner) endAttempt(id string) {
	os.Remove(r.notePath(id, "attempt"))
}

// AttemptInFlight: an attempt of phase id started and did not end (its
// note is there: the driver was killed during it). A remote runner keeps
// what such an attempt left running, for the resumed one to adopt.
func AttemptInFlight(l state.Layout, id string) bool {
	_, err := os.Stat(noteIn(l, id, "attempt"))
	return err == nil
}

// stagedChanges maps each staged path to its status letter (A, M, D, T).
func (r *Runner) stagedChanges(ctx context.Context, wt string) (map[string]byte, error) {
	m, err := r.Git.StagedStatus(ctx, wt)
	if err != nil {
		return nil, fmt.Errorf("list the staged leftovers in %s: %w", wt, err)
	}
	return m, nil
}

// stagedMarkers lists staged files that hold conflict markers (a <<<<<<<
// and a >>>>>>> line: a line of '=' alone is also a markdown underline).
func (r *Runner) stagedMarkers(ctx context.Context, wt string) ([]string, error) {
	cands, err := r.Git.MarkerCandidates(ctx, wt, "", "")
	if err != nil {
		return nil, fmt.Errorf("check the leftovers in %s for conflict markers: %w", wt, err)
	}
	var paths []string
	for _, p := range cands {
		b, err := r.Git.StagedBlob(ctx, wt, p)
		if err != nil {
			return nil, fmt.Errorf("read the staged %s: %w", p, err)
		}
		if hasMarkers(b) {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func hasMarkers(b string) bool {
	var lt, gt bool
	for line := range strings.SplitSeq(b, "\n") {
		lt = lt || strings.HasPrefix(line, "<<<<<<< ") || line == "<<<<<<<"
		gt = gt || strings.HasPrefix(line, ">>>>>>> ") || line == ">>>>>>>"
	}
	return lt && gt
}

// unstage resets the index entries of paths (all of them when paths is
// nil) to HEAD, leaving the files in the checkout as they are.
func (r *Runner) unstage(ctx context.Context, wt string, paths []string) error {
	if err := r.Git.Unstage(ctx, wt, paths); err != nil {
		return fmt.Errorf("unstage in %s: %w", wt, err)
	}
	return nil
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// clearStaleLocks removes the lock files git keeps for a phase's worktree:
// its index.lock and HEAD.lock (in gd, the worktree's own admin folder,
// which OwnGitDir checked), and the lock of its branch ref. A lock is
// stale only when no process works in the worktree: a git there (a killed
// driver's orphan, an agent's daemon) may still be writing, and then
// nothing is removed and the attempt fails closed.
func (r *Runner) clearStaleLocks(ctx context.Context, wt, gd, branch string) error {
	locks := []string{filepath.Join(gd, "index.lock"), filepath.Join(gd, "HEAD.lock")}
	if common, err := r.Git.CommonDir(ctx); err == nil {
		locks = append(locks, filepath.Join(common, "refs", "heads", filepath.FromSlash(branch)+".lock"))
	}
	var found []string
	for _, l := range locks {
		if _, err := os.Stat(l); err == nil {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		return nil
	}
	pids, err := proc.WorkingIn(wt)
	if errors.Is(err, proc.ErrNoProcs) {
		// Without /proc (macOS) nothing can be listed: the caller's
		// word that no process of the phase runs is all there is.
		pids, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("find processes in %s before clearing %s: %w", wt, strings.Join(found, ", "), err)
	}
	if len(pids) > 0 {
		return fmt.Errorf("%s held while process %d still works in %s", strings.Join(found, ", "), pids[0], wt)
	}
	for _, l := range found {
		if err := os.Remove(l); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
