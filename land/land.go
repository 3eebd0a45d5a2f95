// Package land is the merge owner: it lands one done phase at a time on the
// base branch. It builds the exact merge commit (git merge-tree and
// commit-tree, base tip plus branch, with the phase marked [merged] in the
// manifest in that same commit), gates that exact commit, and moves the base
// with a compare-and-swap (git update-ref <ref> <new> <old>), then brings a
// checkout of the base forward as git merge would. Nothing red, and nothing
// untested, reaches the base.
//
// It is apart from package worktree (plain git operations that know nothing
// of phases) and from the scheduler (which only decides what merges when).
package land

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Owner implements scheduler.Merger.
type Owner struct {
	Git       *worktree.Client
	Layout    state.Layout
	Live      *roadmap.File // the manifest on disk that humans edit
	Env       []string      // for the gate
	LogCap    int64
	KillGrace time.Duration
	// LockfileCmd regenerates lockfiles when they are all a merge
	// conflicts on (LOCKFILE_CMD). Empty: a command per lockfile kind.
	LockfileCmd string
	// Derived, when set, says which conflicting paths are derived files
	// that LockfileCmd regenerates (DERIVED_CONFLICT_FILES, matched
	// against the path from the repository root). Nil: the lockfiles of
	// lockfileCmds, by file name.
	Derived *regexp.Regexp
	// Prepare is WORKTREE_PREPARE_CMD, run in the gate worktree before
	// every merge gate.
	Prepare string
	// LockWait bounds the wait for another process's index.lock in the
	// base checkout (0: 30 s); past it the merge reports the wait and is
	// tried again later.
	LockWait time.Duration
	// NoSecretScan turns off the scan for secrets (SECRET_SCAN=0).
	NoSecretScan bool
	// SecretAllow are SECRET_ALLOW's globs: a hit in a file one matches
	// is accepted (and warned about).
	SecretAllow []string
	// Redact is the driver's redaction funnel: the gate logs go through
	// it, and a landing must not carry its values.
	Redact *secret.Redactor
	// GateRetries reruns a red merge gate that many times before it
	// counts as red (GATE_RETRIES); a rerun that is green is a flake.
	GateRetries int

	// Protect is every file a landing must not change (package protect,
	// docs/landing.md): a branch that adds, changes or deletes one is
	// refused with reason protected, unless the phase's (owns: …) names
	// it. Nil: the check cannot run, and nothing lands.
	Protect *protect.Set

	// Sandbox runs the merge gate in the sandbox when its Gate is set
	// (SANDBOX_GATE); nil or off: as it is.
	Sandbox *sandbox.Config

	// Upstream is PUSH_BASE: the base kept level with a remote's and
	// pushed after each move (push.go). Nil: the base stays local.
	Upstream *Upstream

	ownerState
}

var _ scheduler.Predictor = (*Owner)(nil)

// ownerState is what an Owner learns during a run.
type ownerState struct {
	mu        sync.Mutex      // guards green and stopWatch
	green     map[string]bool // merge trees (and gates) that passed the gate
	stopWatch chan struct{}   // ends the watch of the last wait
	base      baseTrack       // the base value the driver last wrote
	cleaning  sync.WaitGroup  // cleanups of landed phases under way
	pred      predictCache    // conflict prediction's merge-tree answers
	drops     dropped         // landed worktrees removed, not yet pruned
	tries     int             // tests: the bound of attempts (0: attempts)
	debounce  time.Duration   // tests: watchClean's wait (0: watchDebounce)
	baseRead  func(string)    // tests: called between checkBase's read and its judgement
}

// attempts bounds how often one Merge rebuilds a merge because the base
// moved under it (a human committing on the base meanwhile) before it
// hands back to the scheduler, which waits and calls again.
const attempts = 5

// Merge lands one phase.
func (o *Owner) Merge(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	out := scheduler.MergeOutcome{ID: j.ID}
	o.stopWatching()
	known := o.noteBase(ctx)
	if err := o.finishPending(ctx); err != nil {
		// The checkout lags behind the base: a new move must not start
		// from it.
		out.Waiting = o.pendingNote(err)
		return out
	}
	if up, stop, moved := o.levelFirst(ctx); stop {
		up.ID = j.ID
		return up
	} else if moved {
		known = ""
	}
	n := attempts
	if o.tries > 0 {
		n = o.tries
	}
	for try := 0; try < n; try++ {
		res, again := o.try(ctx, j, known)
		if !again {
			return res
		}
		known = "" // the base moved: read it again
	}
	// Never fatal: the scheduler tries again after a pause, and the merge
	// lands once the base settles.
	out.Waiting = "the base keeps moving (" + o.Layout.Base + " moved during each of the last " + fmt.Sprint(n) + " tries); the merge lands when it settles"
	return out
}

// pendingNote says why a move of the base cannot start: the base checkout
// has not followed the last one yet (err).
func (o *Owner) pendingNote(err error) string {
	n := "the base checkout lags behind " + o.Layout.Base + " (a move is pending): " + err.Error()
	if errors.Is(err, worktree.ErrIndexLocked) {
		n += "; if no git runs there, remove the lock file"
	}
	return n
}

// markerNote starts the detail of a branch refused for conflict markers.
const markerNote = "conflict markers left in: "

// try makes one attempt; again is true when the base moved under it.
// known is the base's value read just before (noteBase), "" to read it.
func (o *Owner) try(ctx context.Context, j scheduler.MergeJob, known string) (out scheduler.MergeOutcome, again bool) {
	out.ID = j.ID
	base := known
	if base == "" {
		var err error
		if base, err = o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base); err != nil {
			out.Err = fmt.Errorf("base branch %s: %w", o.Layout.Base, err)
			return out, false
		}
	}
	// The branch tip now, which may be past the tip the phase's own gate
	// passed (a lockfile regeneration below, or a process the agent left
	// behind that still commits). Whatever is merged is this one commit,
	// read once, and the merge commit built on it is gated below.
	tip := j.Tip
	if cur, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Branch(j.ID)); err == nil {
		tip = cur
	} else if tip == "" {
		out.Err = err
		return out, false
	}
	// A merge that landed before a crash: the base's committed manifest
	// marks it [merged] (read through the resolver, no git process) and
	// the base holds the tip. Only the bookkeeping is left.
	if work.Landed(ctx, o.Git, o.Layout, j.ID) {
		if in, err := o.Git.IsAncestor(ctx, tip, base); err == nil && in {
			if err := o.markLive(j); err != nil {
				out.Err = err
				return out, false
			}
			o.cleanup(ctx, j.ID, tip, base, true)
			out.OK, out.Commit = true, base
			return out, false
		}
	}
	if j.ReviewBase != "" && (base != j.ReviewBase || tip != j.ReviewHead) {
		// The review holds for exactly the head and base it read: a
		// moved base or branch is a tree nobody reviewed.
		out.Stale = true
		out.Detail = fmt.Sprintf("reviewed head %.12s and base %.12s, now %.12s and %.12s", j.ReviewHead, j.ReviewBase, tip, base)
		return out, false
	}
	commit, tree, out, stop, again := o.build(ctx, j, base, tip)
	if stop {
		return out, again
	}
	// Test exactly what lands, on a clean checkout of it: the phase's own
	// gate ran in its worktree, beside ignored and untracked files, and on
	// a tip the branch may have moved past since. Only a tree that already
	// passed this gate here (the same merge tried again after a wait) is
	// not gated twice.
	g := o.GateCar(ctx, scheduler.CarGate{Commit: commit, Tree: tree, Jobs: []scheduler.MergeJob{j}})
	out.Flaky = g.Flaky
	if g.Err != nil {
		if g.Log != "" {
			out.LogPath = g.Log
		}
		out.Err = g.Err
		return out, false
	}
	if !g.OK {
		out.Reason, out.LogPath, out.Detail = state.ReasonGate, g.Log, g.Detail
		return out, false
	}
	res, again := o.publish(ctx, []scheduler.MergeJob{j}, []string{tip}, base, commit)
	res.Flaky = out.Flaky
	if res.OK && out.Detail != "" {
		res.Detail = joinNote(out.Detail, res.Detail) // the accepted secrets
	}
	return res, again
}

// build makes j's merge commit on base (the base tip, or the commit below
// it in a merge train) with tip, the branch tip read once. stop: out is
// final (a refusal, an error), or again says the branch moved (a lockfile
// regeneration) and the build is to be made again.
//
// The checks (check) read what the merge changes on base in the secret
// scan's log, after the merge is built (one git diff fewer per landing,
// issue 25 §1). Without the scan, and where the merge conflicts (their
// refusal comes before a conflict's, and before a lockfile regeneration
// runs a command on the branch), they read the branch's changes since its
// merge base in a diff of their own (checkBranch), before.
func (o *Owner) build(ctx context.Context, j scheduler.MergeJob, base, tip string) (commit, tree string, out scheduler.MergeOutcome, stop, again bool) {
	commit, tree, _, out, stop, again = o.buildAlso(ctx, j, base, tip, nil)
	return commit, tree, out, stop, again
}

// buildAlso is build, and with also set it writes also's commit beside
// the merge (a merge train's first-parent commit, worktree.Also): second.
func (o *Owner) buildAlso(ctx context.Context, j scheduler.MergeJob, base, tip string, also *worktree.Also) (commit, tree, second string, out scheduler.MergeOutcome, stop, again bool) {
	out.ID = j.ID
	mrel := o.Layout.ManifestRel()
	committed, has, err := o.Git.ReadFile(ctx, base, mrel)
	if err != nil || !has {
		out.Err = fmt.Errorf("%s is not committed on %s", mrel, o.Layout.Base)
		return "", "", "", out, true, false
	}
	early := o.NoSecretScan // the checks before the merge (above)
	if early {
		if out, stop := o.checkBranch(ctx, j, base, tip, committed); stop {
			return "", "", "", out, true, false
		}
	}
	tree, conflicts, err := o.Git.MergeTree(ctx, base, tip)
	if err != nil {
		out.Err = err
		return "", "", "", out, true, false
	}
	// The manifest is the driver's: whatever the branch did to it is
	// replaced below, so a conflict there is no conflict.
	conflicts = without(conflicts, []string{o.Layout.ManifestRel()})
	if len(conflicts) > 0 && !early {
		if out, stop := o.checkBranch(ctx, j, base, tip, committed); stop {
			return "", "", "", out, true, false
		}
		early = true
	}
	if len(conflicts) > 0 && o.onlyLockfiles(conflicts) {
		if err := o.regenLockfiles(ctx, j, conflicts); err == nil {
			return "", "", "", out, true, true
		} else {
			out.Detail = err.Error() + "; "
		}
	}
	if len(conflicts) > 0 {
		out.Reason = state.ReasonConflict
		out.Detail += "conflicts with " + o.Layout.Base + ": " + strings.Join(conflicts, ", ")
		return "", "", "", out, true, false
	}
	// The manifest in the commit is the base's, with this phase marked
	// merged: whatever the worker did to the manifest on its branch is
	// dropped.
	flipped, err := flip(committed, j)
	if err != nil {
		// The phase was added to the live file and never committed:
		// commit the live manifest with the flip instead.
		live, rerr := os.ReadFile(o.Live.Path)
		if rerr != nil {
			out.Err = rerr
			return "", "", "", out, true, false
		}
		if flipped, err = flip(live, j); err != nil {
			out.Err = fmt.Errorf("mark %s merged: %w", j.ID, err)
			return "", "", "", out, true, false
		}
	}
	// The flip and the merge commit are written together (one pack).
	tree, commit, second, err = o.Git.ReplaceFileCommitAlso(ctx, tree, mrel, flipped, []string{base, tip}, o.mergeMessage(ctx, j), also)
	if err != nil {
		out.Err = err
		return "", "", "", out, true, false
	}
	rep, out, stop := o.scan(ctx, j, base, commit, committed, !early)
	if stop {
		return "", "", "", out, true, false
	}
	if len(rep.Found) > 0 {
		out.Reason, out.Detail = state.ReasonSecret, secret.Describe(rep.Found)
		return "", "", "", out, true, false
	}
	// Hits an allow comment or SECRET_ALLOW accepted land, told as a
	// warning with the merge: an agent can write an allow comment too.
	out.Detail = secret.DescribeAllowed(rep.Allowed)
	return commit, tree, second, out, false, false
}

// scan scans commit, j's merge on base, for secrets (o.secrets), and with
// checks set runs the checks (check) on what commit changes on base, read
// in the scan's log. stop: out is the refusal or the error (a scan or a
// check that cannot run stops the landing); the secrets found are rep's,
// for the caller to refuse after the checks.
func (o *Owner) scan(ctx context.Context, j scheduler.MergeJob, base, commit string, manifestSrc []byte, checks bool) (rep secret.Report, out scheduler.MergeOutcome, stop bool) {
	out.ID = j.ID
	var changes *worktree.ChangeReader
	if checks {
		changes = &worktree.ChangeReader{}
	}
	rep, err := o.secrets(ctx, base, commit, changes)
	if err != nil {
		out.Err, out.Reason = err, state.ReasonSecret
		if checks {
			out.Err = fmt.Errorf("the secret scan, the protected-file check, the conflict-marker check and the scope check of %s could not run: %w", j.ID, err)
		}
		return rep, out, true
	}
	if !checks {
		return rep, out, false
	}
	ch, err := changes.Changes()
	if err != nil {
		out.Err = fmt.Errorf("the protected-file check, the conflict-marker check and the scope check of %s could not run: %w", j.ID, err)
		return rep, out, true
	}
	out, stop = o.check(ctx, j, ch, commit, manifestSrc)
	return rep, out, stop
}

// checkBranch is check on what j's branch (tip, to land on base) changed
// since its merge base with base, read in one diff (no merge base, no
// checks: the landing stops).
func (o *Owner) checkBranch(ctx context.Context, j scheduler.MergeJob, base, tip string, manifestSrc []byte) (out scheduler.MergeOutcome, stop bool) {
	ch, err := o.Git.BranchChanges(ctx, base, tip)
	if err != nil {
		out.ID = j.ID
		out.Err = fmt.Errorf("the protected-file check, the conflict-marker check and the scope check of %s could not run: %w", j.ID, err)
		return out, true
	}
	return o.check(ctx, j, ch, tip, manifestSrc)
}

// check refuses j's branch for ch, what it changes (the paths, and the
// files it adds marker lines to, as they are at rev): when it changes a
// protected file, holds conflict markers, or changes files outside its
// declared scope; manifestSrc is the base's manifest. stop: out is the
// refusal or the error. Every check fails closed: a check that cannot
// run stops the landing.
func (o *Owner) check(ctx context.Context, j scheduler.MergeJob, ch worktree.Changes, rev string, manifestSrc []byte) (out scheduler.MergeOutcome, stop bool) {
	out.ID = j.ID
	changed := ch.Paths
	if hits, err := o.protected(j, changed, manifestSrc); err != nil {
		out.Err = fmt.Errorf("the protected-file check of %s could not run: %w", j.ID, err)
		return out, true
	} else if len(hits) > 0 {
		out.Reason, out.Detail = state.ReasonProtected, protect.Describe(hits)
		return out, true
	}
	if paths, err := o.markers(ctx, ch.Markers, rev); err != nil {
		out.Err = fmt.Errorf("the conflict-marker check of %s could not run: %w", j.ID, err)
		return out, true
	} else if len(paths) > 0 {
		out.Reason = state.ReasonConflict
		out.Detail = markerNote + strings.Join(paths, ", ")
		return out, true
	}
	if paths := o.outOfScope(j, changed); len(paths) > 0 {
		out.Reason = state.ReasonScope
		out.Detail = "changes outside (owns: " + strings.Join(j.Owns, ", ") + "): " + strings.Join(paths, ", ")
		return out, true
	}
	return out, false
}

// publish moves the base from base to commit, the merge commit of the
// last of js (a merge train lands several at once), brings the base
// checkout along, marks every one merged in the live file and cleans up
// after them in the background. again: the base moved meanwhile.
func (o *Owner) publish(ctx context.Context, js []scheduler.MergeJob, tips []string, base, commit string) (out scheduler.MergeOutcome, again bool) {
	j := js[len(js)-1]
	// The branches merged go in the base's own move, each only if it
	// still points at the tip merged (one ref transaction, not a branch
	// -D each afterwards); the cleanup then removes their worktrees.
	drop := make(map[string]string, len(js))
	for i, j := range js {
		drop["refs/heads/"+o.Layout.Branch(j.ID)] = tips[i]
	}
	if out, again = o.moveBase(ctx, j, base, commit, drop); !out.OK {
		return out, again
	}
	// One write for the whole train (no fsync: a restart puts back a
	// lost one, scheduler's repairLive); one by one only when a phase
	// was edited out of the live file meanwhile.
	if err := o.Live.Update(func(src []byte) ([]byte, error) {
		for _, j := range js {
			var err error
			if src, err = flip(src, j); err != nil {
				return nil, err
			}
		}
		return src, nil
	}); err != nil {
		for _, j := range js {
			if err := o.Live.Update(func(src []byte) ([]byte, error) { return flip(src, j) }); err != nil {
				// The merge has landed; only the live file could not
				// say so (the phase was edited out of it meanwhile).
				out.Detail = joinNote(out.Detail, "the live manifest was not updated: "+err.Error())
			}
		}
	}
	// Off the critical path: the worktree's removal (it writes as many
	// files as the checkout holds) and the branch's deletion do not hold
	// up the report, nor the next merge.
	// commit holds every tip: each is a parent of its link's merge
	// commit, and the chain leads up to commit.
	for i, j := range js {
		o.cleanupLater(ctx, j.ID, tips[i], commit)
	}
	if o.Upstream != nil {
		note, err := o.pushUp(ctx, js)
		if err != nil {
			// Landed here, not pushed: the run halts, and the next
			// one pushes it first (SyncUpstream).
			return scheduler.MergeOutcome{ID: j.ID, Err: fmt.Errorf("landed on %s at %.12s, not pushed: %w", o.Layout.Base, commit, err)}, false
		}
		out.Detail = joinNote(out.Detail, note)
	}
	out.OK, out.Commit = true, commit
	return out, false
}

// moveBase moves the base from base to commit in one compare-and-swap
// and brings the base checkout along (j names the move in what it
// reports): out.OK once it moved; again when the base moved meanwhile.
// The branches of drop (ref: the tip merged) are deleted in the same ref
// transaction where they still point at that tip (worktree.MoveRef).
func (o *Owner) moveBase(ctx context.Context, j scheduler.MergeJob, base, commit string, drop map[string]string) (out scheduler.MergeOutcome, again bool) {
	out.ID = j.ID
	baseRef := "refs/heads/" + o.Layout.Base
	mrel := o.Layout.ManifestRel()
	dir, checkedOut, err := o.Git.WorktreeOf(ctx, o.Layout.Base)
	if err != nil {
		out.Err = err
		return out, false
	}
	var keep []string
	if checkedOut && samePath(dir, o.Layout.Top) {
		keep = []string{mrel}
	}
	if checkedOut {
		// The base checkout's index stays locked from the check of local
		// changes until the checkout has followed the ref: a `git commit`
		// there in between would record the merge reversed, and a
		// concurrent `git status` (an IDE's) would make the move fail
		// half-way.
		// A lock of ours is a killed driver's: merges are serial, each
		// releases its lock before it returns, and the driver lock keeps
		// any other driver out.
		if _, err := o.Git.ClearOwnIndexLock(ctx, dir); err != nil {
			out.Err = err
			return out, false
		}
		lock, err := o.Git.LockIndex(ctx, dir, o.lockWait())
		if errors.Is(err, worktree.ErrIndexLocked) {
			out.Waiting = lockedNote(err)
			return out, false
		}
		if err != nil {
			out.Err = err
			return out, false
		}
		res, again, moved := o.land(ctx, j, lock, dir, base, commit, keep, drop)
		if rerr := lock.Release(); rerr != nil && res.OK {
			res.Detail = joinNote(res.Detail, "the base checkout's index was not written yet (finished before the next merge, or by the next run): "+rerr.Error())
		} else if moved {
			// The move is complete, index and files: forget it.
			(&advance{}).done(o.Layout)
		}
		return res, again
	}
	o.base.writing(commit)
	_, err = o.Git.MoveRef(ctx, baseRef, commit, base, drop)
	o.base.wrote(commit, err == nil)
	if err != nil {
		if errors.Is(err, worktree.ErrStale) {
			return out, true
		}
		out.Err = err
		return out, false
	}
	out.OK = true
	return out, false
}

// land moves the base ref and the base checkout in dir, whose index lock
// the caller holds, from base to commit. The move is recorded first
// (advance.json) and the record stays until the checkout has followed: a
// move that does not complete is finished before the next merge, or at
// the next start.
//
// moved is true once the checkout has followed (Release then installs the
// index).
func (o *Owner) land(ctx context.Context, j scheduler.MergeJob, lock *worktree.IndexLock, dir, base, commit string, keep []string, drop map[string]string) (out scheduler.MergeOutcome, again, moved bool) {
	out.ID = j.ID
	// The difference of the two commits is read once, for this check and
	// for the move below.
	blocking, diff, err := o.Git.WouldOverwriteDiff(ctx, dir, base, commit)
	if err != nil {
		out.Err = err
		return out, false, false
	}
	if blocking = without(blocking, keep); len(blocking) > 0 {
		out.Wait = blocking
		out.Changed = o.watchClean(ctx, dir, o.gitDirOf(ctx, dir), blocking)
		return out, false, false
	}
	baseRef := "refs/heads/" + o.Layout.Base
	adv := &advance{Ref: baseRef, Dir: dir, Old: base, New: commit, Skip: keep}
	if err := adv.save(o.Layout); err != nil {
		out.Err = err
		return out, false, false
	}
	// From here on nothing is cancelled: a ref moved without its checkout
	// is the state this whole function exists to avoid.
	ctx = context.WithoutCancel(ctx)
	o.base.writing(commit)
	_, err = o.Git.MoveRef(ctx, baseRef, commit, base, drop)
	o.base.wrote(commit, err == nil)
	if err != nil {
		adv.done(o.Layout)
		if errors.Is(err, worktree.ErrStale) {
			return out, true, false
		}
		out.Err = err
		return out, false, false
	}
	out.OK = true
	// The live manifest is never written by git: a human may be saving it
	// right now. Its index entry moves; its bytes get the one-token flip,
	// through the re-reading writer.
	if err := lock.AdvanceDiff(ctx, base, commit, keep, diff); err != nil {
		// The base has moved and is correct; only the checkout lags,
		// and advance.json says so until the move is finished.
		out.Detail = "the base checkout was not brought forward yet (finished before the next merge, or by the next run): " + err.Error()
		return out, false, false
	}
	return out, false, true
}

// lockWait bounds how long a merge waits for another process's lock on
// the base checkout's index before it reports the wait and tries later.
func (o *Owner) lockWait() time.Duration {
	if o.LockWait > 0 {
		return o.LockWait
	}
	return 30 * time.Second
}

func lockedNote(err error) string {
	return "the base checkout's " + strings.TrimPrefix(err.Error(), worktree.ErrIndexLocked.Error()+": ") +
		" is held by another git (an editor's?): the merge waits for it; if no git runs there, remove the file"
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// markLive marks the phase merged in the live file.
func (o *Owner) markLive(j scheduler.MergeJob) error {
	return o.Live.Update(func(src []byte) ([]byte, error) { return flip(src, j) })
}

// flip marks the phase merged, and the manifest complete when this merge
// lands the last phase.
func flip(src []byte, j scheduler.MergeJob) ([]byte, error) {
	b, err := manifest.Apply(src, j.ID, manifest.Merged)
	if err != nil {
		return nil, err
	}
	if !j.Complete {
		return b, nil
	}
	m, err := manifest.Parse(b)
	if err != nil {
		return nil, err
	}
	for _, p := range m.Phases {
		if p.State != manifest.Merged {
			return b, nil
		}
	}
	return m.SetStatus("complete")
}

// GateDir is the worktree merge gates run in: one for every merge (they
// are serial), reused so that only the files that differ are written.
func GateDir(l state.Layout) string { return filepath.Join(l.Dir(), "gate") }

// gateIn runs the phase's gate on the exact merge commit, in the gate
// worktree dir cleaned to hold exactly that commit's tree, after
// WORKTREE_PREPARE_CMD; it returns the gate's log (or prepare's, when
// prepare fails). The merge owner's dir is GateDir; MERGE_BATCH_GATE=each
// gates a train's prefixes side by side, each in a worktree of its own.
func (o *Owner) gateIn(ctx context.Context, j scheduler.MergeJob, commit, dir string) (bool, string, error) {
	if o.Prepare == "" && work.NoGateCommand(j.Gate) {
		// Nothing runs in the gate worktree (GATE_CMD's default, true):
		// no checkout of it, two git processes a landing (and the run's
		// first landing's worktree add). The log says the gate is green.
		if j.Gating != nil {
			j.Gating()
		}
		return work.RunGate(ctx, o.Layout, j.ID, j.Gate, dir, o.Env, o.Redact, o.LogCap, o.KillGrace)
	}
	if err := o.Git.CleanCheckout(ctx, dir, commit); err != nil {
		return false, "", fmt.Errorf("gate the merge of %s: %w", j.ID, err)
	}
	if o.Prepare != "" {
		log := o.Layout.LogPath(j.ID, "merge-prepare", proc.NextLog(o.Layout.LogDir(j.ID), "merge-prepare"))
		jail, err := o.Sandbox.EnterGate(ctx, o.Git, dir, o.Layout.LogDir(j.ID))
		if err != nil {
			return false, log, fmt.Errorf("gate the merge of %s: %w", j.ID, err)
		}
		res := proc.Run(ctx, proc.Spec{Command: o.Prepare, Dir: dir, Env: o.Env, LogPath: log, LogCap: o.LogCap, Redact: o.Redact, KillGrace: o.KillGrace, Wrap: jail.Wrap()})
		if _, err := jail.Leave(context.WithoutCancel(ctx), o.Git); err != nil {
			return false, log, fmt.Errorf("gate the merge of %s: %w", j.ID, err)
		}
		if ctx.Err() != nil {
			return false, log, ctx.Err()
		}
		if res.Reason == "start" || res.ExitCode != 0 {
			// The merge cannot be tested, so it does not land; the
			// prepare log says why.
			return false, log, nil
		}
	}
	if j.Gating != nil {
		j.Gating()
	}
	return work.RunGateIn(ctx, o.Sandbox, o.Git, o.Layout, j.ID, j.Gate, dir, o.Env, o.Redact, o.LogCap, o.KillGrace)
}

// passed reports whether tree already passed gate in the gate worktree
// during this run.
func (o *Owner) passed(tree, gate string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.green[tree+"\x00"+gate]
}

func (o *Owner) pass(tree, gate string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.green == nil {
		o.green = map[string]bool{}
	}
	o.green[tree+"\x00"+gate] = true
}

// outOfScope lists the files the branch changed (changed) outside the
// phase's declared scope, its phase doc and the manifest aside.
func (o *Owner) outOfScope(j scheduler.MergeJob, changed []string) []string {
	if len(j.Owns) == 0 {
		return nil
	}
	var bad []string
	for _, p := range changed {
		if p == o.Layout.ManifestRel() || isDocOf(p, o.Layout.RoadmapRel, j.ID) {
			continue
		}
		if !InScope(p, j.Owns) {
			bad = append(bad, p)
		}
	}
	return bad
}

// isDocOf reports whether repository path p is phase id's doc (or its DONE_
// copy) in the roadmap folder dir ("." at the top level).
func isDocOf(p, dir, id string) bool {
	if path.Dir(p) != path.Clean(dir) {
		return false
	}
	name := strings.TrimPrefix(path.Base(p), roadmap.DonePrefix)
	return name == id+".md" || strings.HasPrefix(name, id+"-") && strings.HasSuffix(name, ".md")
}

// InScope reports whether path lies within the declared scope: a folder
// ("api/") covers everything below it, a file covers itself.
func InScope(path string, owns []string) bool {
	for _, o := range owns {
		o = strings.TrimPrefix(o, "./")
		if path == strings.TrimSuffix(o, "/") || strings.HasPrefix(path, strings.TrimSuffix(o, "/")+"/") {
			return true
		}
	}
	return false
}

// cleanup removes a landed phase's worktree and branch. The branch goes
// only when the base contains its tip: contained says the caller knows it
// does (the merge it just built, or found, holds tip), else git is asked.
func (o *Owner) cleanup(ctx context.Context, id, tip, base string, contained bool) error {
	ctx = context.WithoutCancel(ctx)
	// The folder goes whatever it holds (a killed add's too); its
	// registration with the next prune (dropWorktree).
	werr := o.dropWorktree(ctx, id)
	// The driver's notes about the worktree, and a folder git no longer
	// lists (a removal cut off by a kill), go with it.
	if ls, err := FindLitter(ctx, o.Git, o.Layout, []string{id}); err == nil {
		if err := RemoveLitter(ctx, o.Git, ls); err == nil && slices.ContainsFunc(ls, func(l Litter) bool { return l.Folder }) {
			werr = nil
		}
	}
	if !contained {
		ok, err := o.Git.IsAncestor(ctx, tip, base)
		if err != nil {
			return err
		}
		if !ok {
			return nil // not landed: the branch is kept
		}
	}
	branch := o.Layout.Branch(id)
	cur, err := o.Git.RevParse(ctx, "refs/heads/"+branch)
	if errors.Is(err, worktree.ErrNoRev) {
		// Deleted with the base's move (moveBase): what branch -D also
		// drops, its config section, goes now.
		return errors.Join(o.Git.DropBranchConfig(ctx, branch), werr)
	}
	if err != nil || cur != tip {
		return nil // moved on since: kept
	}
	// branch -D refuses a branch a registration still names, its folder
	// gone or not: the removed worktree's goes first.
	if err := o.pruneDropped(ctx); err != nil {
		return errors.Join(err, werr)
	}
	if err := o.Git.DeleteBranch(ctx, branch); err != nil {
		return errors.Join(err, werr)
	}
	return nil
}

// cleanupLater runs cleanup in the background for a phase whose tip the
// caller knows base holds (it landed it); Wait waits for it.
func (o *Owner) cleanupLater(ctx context.Context, id, tip, base string) {
	o.cleaning.Add(1)
	go func() {
		defer o.cleaning.Done()
		_ = o.cleanup(ctx, id, tip, base, true) // the end-of-run sweep tries again
	}()
}

// Wait waits for the removals of landed phases' worktrees and branches
// that run in the background, and drops the registrations of the
// worktrees removed (dropWorktree). The engine calls it before the run
// ends.
func (o *Owner) Wait() {
	o.cleaning.Wait()
	// No caller's context here: the prune is one short git process, and
	// a failed one leaves only registrations the next run's start prunes.
	_ = o.pruneDropped(context.Background())
}

// CleanupLanded removes the worktree and branch of each landed phase in
// ids that still has them, when the base contains the branch's tip (as
// cleanup does). It runs synchronously, after Wait, at the end of a run.
func (o *Owner) CleanupLanded(ctx context.Context, ids []string) error {
	serr := o.sweepLitter(ctx, ids)
	if len(ids) == 0 {
		return serr
	}
	// One listing of the phase branches, not a look-up per landed phase:
	// most are gone already (their cleanup ran after their merge).
	left, err := o.Git.BranchTips(ctx, manifest.BranchPrefix)
	if err != nil {
		return err
	}
	tips := make(map[string]string, len(left))
	for _, b := range left {
		tips[b.Name] = b.Tip
	}
	var base string
	var errs []error
	for _, id := range ids {
		tip, ok := tips[o.Layout.Branch(id)]
		if !ok {
			// Gone already, with the base's move; its worktree too,
			// unless the driver died before the cleanup removed it.
			if exists(o.Layout.Worktree(id)) {
				if err := o.cleanup(ctx, id, "", "", true); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", id, err))
				}
			}
			continue
		}
		if base == "" {
			if base, err = o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base); err != nil {
				return err
			}
		}
		if err := o.cleanup(ctx, id, tip, base, false); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(append(errs, serr, o.pruneDropped(ctx))...)
}

func without(paths, drop []string) []string {
	var out []string
	for _, p := range paths {
		keep := true
		for _, d := range drop {
			if p == d {
				keep = false
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}

func samePath(a, b string) bool {
	ea, err1 := filepath.EvalSymlinks(a)
	eb, err2 := filepath.EvalSymlinks(b)
	if err1 == nil && err2 == nil {
		return ea == eb
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// CleanupMerged removes what a run left of merged phases: worktrees whose
// registration is stale, and worktrees and branches of phases the base
// already contains. A branch whose tip the base does not contain is never
// deleted.
func (o *Owner) CleanupMerged(ctx context.Context, rm *roadmap.Roadmap) {
	_ = o.Git.Prune(ctx)
	var ids []string
	for _, n := range rm.Nodes {
		if n.State == manifest.Merged {
			ids = append(ids, n.ID)
		}
	}
	_ = o.CleanupLanded(ctx, ids) // what is left is swept at the end
}

// lockfileCmds regenerate each kind of lockfile from its manifest.
var lockfileCmds = map[string]string{
	"go.sum":              "go mod tidy",
	"package-lock.json":   "npm install --package-lock-only --ignore-scripts",
	"npm-shrinkwrap.json": "npm install --package-lock-only --ignore-scripts",
	"bun.lock":            "bun install --lockfile-only --ignore-scripts",
	"bun.lockb":           "bun install --lockfile-only --ignore-scripts",
	"pnpm-lock.yaml":      "pnpm install --lockfile-only --ignore-scripts",
	"yarn.lock":           "yarn install --mode update-lockfile",
	"Cargo.lock":          "cargo generate-lockfile",
}

func (o *Owner) onlyLockfiles(paths []string) bool {
	for _, p := range paths {
		if o.Derived != nil {
			if !o.Derived.MatchString(p) {
				return false
			}
			continue
		}
		if _, ok := lockfileCmds[filepath.Base(p)]; !ok {
			return false
		}
	}
	return len(paths) > 0
}

// regenLockfiles resolves a conflict on lockfiles alone, as Claudopilot
// did: merge the base into the branch, take the base's lockfile, regenerate
// it in its folder, and commit the merge. The merge commit is gated later
// like any other.
func (o *Owner) regenLockfiles(ctx context.Context, j scheduler.MergeJob, paths []string) error {
	wt := o.Layout.Worktree(j.ID)
	if _, err := os.Stat(wt); err != nil {
		return fmt.Errorf("lockfile conflict: the worktree %s is gone", wt)
	}
	abort := func() { _ = o.Git.MergeAbort(context.WithoutCancel(ctx), wt) }
	if _, err := work.OwnGitDir(ctx, o.Git, wt); err != nil {
		return fmt.Errorf("lockfile conflict: %w", err)
	}
	// Recorded while git runs: a merge cut off by the driver's death is
	// set back and made again by the phase's next attempt.
	if err := work.GuardedMerge(ctx, o.Git, o.Layout, j.ID, wt, "refs/heads/"+o.Layout.Base); err == nil {
		return nil // merged cleanly after all
	}
	for _, p := range paths {
		if err := o.Git.TakeTheirs(ctx, wt, p); err != nil {
			abort()
			return fmt.Errorf("lockfile conflict on %s: %w", p, err)
		}
		cmd := o.LockfileCmd
		if cmd == "" {
			cmd = lockfileCmds[filepath.Base(p)]
		}
		if cmd == "" {
			abort()
			return fmt.Errorf("no command regenerates %s (it matches DERIVED_CONFLICT_FILES): set LOCKFILE_CMD", p)
		}
		dir := filepath.Join(wt, filepath.Dir(filepath.FromSlash(p)))
		log := o.Layout.LogPath(j.ID, "lockfile", proc.NextLog(o.Layout.LogDir(j.ID), "lockfile"))
		// npm and friends run the branch's own scripts: in the sandbox
		// with SANDBOX_GATE, like a gate.
		jail, err := o.Sandbox.EnterGate(ctx, o.Git, wt, o.Layout.LogDir(j.ID))
		if err != nil {
			abort()
			return fmt.Errorf("lockfile conflict on %s: %w", p, err)
		}
		res := proc.Run(ctx, proc.Spec{Command: cmd, Dir: dir, Env: o.Env, LogPath: log, LogCap: o.LogCap, Redact: o.Redact, KillGrace: o.KillGrace, Wrap: jail.Wrap()})
		if _, err := jail.Leave(context.WithoutCancel(ctx), o.Git); err != nil {
			abort()
			return fmt.Errorf("lockfile conflict on %s: %w", p, err)
		}
		if res.ExitCode != 0 {
			abort()
			return fmt.Errorf("regenerating %s with %q failed (see %s)", p, cmd, log)
		}
		if err := o.Git.Stage(ctx, wt, p); err != nil {
			abort()
			return err
		}
	}
	// The manifest may conflict too (the worker touched it, a human edited
	// it on the base): the landed commit replaces it anyway, so take the
	// base's.
	mrel := o.Layout.ManifestRel()
	if u, _ := o.Git.Unmerged(ctx, wt, mrel); len(u) > 0 {
		if err := o.Git.TakeTheirs(ctx, wt, mrel); err != nil {
			abort()
			return err
		}
		if err := o.Git.Stage(ctx, wt, mrel); err != nil {
			abort()
			return err
		}
	}
	if err := o.Git.ConcludeMerge(ctx, wt); err != nil {
		abort()
		return fmt.Errorf("conclude the lockfile merge: %w", err)
	}
	return nil
}

// markers lists the files among cands, those in which the landing adds
// lines git sees as conflict markers, that hold conflict markers at tip
// (the branch's tip or the merge commit): a concluded merge that was
// never resolved must not land.
func (o *Owner) markers(ctx context.Context, cands []string, tip string) ([]string, error) {
	var paths []string
	for _, p := range cands {
		// A line of seven '=' alone is also a markdown heading's
		// underline: only a file with both a <<<<<<< and a >>>>>>>
		// line holds a real leftover conflict.
		b, ok, err := o.Git.ReadFile(ctx, tip, p)
		if err != nil {
			return nil, err
		}
		if ok && hasMarkers(b) {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func hasMarkers(b []byte) bool {
	var lt, gt bool
	for _, line := range strings.Split(string(b), "\n") {
		lt = lt || strings.HasPrefix(line, "<<<<<<< ") || line == "<<<<<<<"
		gt = gt || strings.HasPrefix(line, ">>>>>>> ") || line == ">>>>>>>"
	}
	return lt && gt
}

// mergeMessage is a phase's merge commit message. With LANES it ends with
// a Claudopilot-Lanes trailer naming the lane of each launch, from the
// branch's description (work.LaneLine), so `git log` on the base tells
// which lane did the work after the branch is deleted.
func (o *Owner) mergeMessage(ctx context.Context, j scheduler.MergeJob) string {
	msg := fmt.Sprintf("Merge %s: %s", j.ID, roadmap.CleanTitle(j.Title))
	// An unreadable description loses only the trailer: it is a record,
	// never a reason to hold a merge.
	desc, _ := o.Git.BranchDescription(ctx, o.Layout.Branch(j.ID))
	if lanes := work.LanesTrailer(desc); lanes != "" {
		msg += "\n\nClaudopilot-Lanes: " + lanes
	}
	return msg
}
