package land

import (
	"context"
	"errors"
	"fmt"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// Upstream is PUSH_BASE (docs/landing.md, "Pushing the base"), as
// Claudopilot did with `git pull --ff-only` before and `git push origin
// <base>` after every merge: before a landing the base is brought level
// with the remote's (a fast-forward, or a gated merge of the remote's
// commits when the two diverged), and after each move of the base it is
// pushed, never forced. A push the remote rejects because someone else
// pushed meanwhile fetches, merges their commits through the gate, and
// pushes again, at most Tries times in a row; then the run halts.
type Upstream struct {
	Remote string // the remote's name (origin)
	// Net fetches and pushes, with the remote's credential over a pipe
	// (worktree.Client.WithCredential, the queue's path); nil: the
	// owner's Git, with git's own helpers.
	Net *worktree.Client
	// Gate is GATE_CMD: it gates a merge of the remote's commits into
	// the base, as any merge into the base is gated.
	Gate string
	// Tries bounds the pushes rejected in a row (0: 3).
	Tries int
}

// UpstreamID names the merge of the remote's commits in logs
// (.claudopilot/logs/%2Eupstream/, state.SafeName's): a leading dot, so
// no phase has it.
const UpstreamID = ".upstream"

// upstreamGate is the gate worktree of merges of the remote's commits,
// beside the gate slots' (which may be busy with cars meanwhile).
func upstreamGate(l state.Layout) string { return GateDir(l) + "-upstream" }

func (u *Upstream) tries() int {
	if u.Tries > 0 {
		return u.Tries
	}
	return 3
}

func (o *Owner) net() *worktree.Client {
	if o.Upstream.Net != nil {
		return o.Upstream.Net
	}
	return o.Git
}

// trackRef is the remote-tracking ref of the base.
func (o *Owner) trackRef() string {
	return "refs/remotes/" + o.Upstream.Remote + "/" + o.Layout.Base
}

// SyncUpstream brings the base level with the remote's and pushes what
// the remote lacks: at the start of a run, so a push a killed driver did
// not finish is made, and nothing landed stays unpushed. No Upstream:
// nothing.
func (o *Owner) SyncUpstream(ctx context.Context) error {
	if o.Upstream == nil {
		return nil
	}
	out, _ := o.level(ctx)
	if out.Err != nil {
		return out.Err
	}
	if out.Waiting != "" || len(out.Wait) > 0 {
		// The merge of the remote's commits waits (a file of the
		// user's, a lock): the first landing tries again.
		return nil
	}
	_, err := o.pushUp(ctx, nil)
	return err
}

// levelFirst levels the base before a landing and pushes a move it made
// (a move of the base is pushed). stop: out says why the landing cannot
// go on now (an error halts the run; a wait is tried again); moved: the
// base moved, to be read again.
func (o *Owner) levelFirst(ctx context.Context) (out scheduler.MergeOutcome, stop, moved bool) {
	if o.Upstream == nil {
		return out, false, false
	}
	out, moved = o.level(ctx)
	if out.Err != nil || out.Waiting != "" || len(out.Wait) > 0 {
		return out, true, false
	}
	if moved {
		if _, err := o.pushUp(ctx, nil); err != nil {
			out.Err = err
			return out, true, false
		}
	}
	return out, false, moved
}

// fetchUp fetches the remote's base into the remote-tracking ref and
// returns its value: "" when the remote has no such branch yet.
func (o *Owner) fetchUp(ctx context.Context) (string, error) {
	u := o.Upstream
	err := o.net().Fetch(ctx, u.Remote, "+refs/heads/"+o.Layout.Base+":"+o.trackRef())
	if err != nil {
		if has, herr := o.net().RemoteHasBranch(ctx, u.Remote, o.Layout.Base); herr == nil && !has {
			return "", nil
		}
		return "", fmt.Errorf("PUSH_BASE: fetch %s from %s: %w", o.Layout.Base, u.Remote, err)
	}
	return o.Git.RevParse(ctx, o.trackRef())
}

// level brings the base level with the remote's before a landing: a base
// behind it is fast-forwarded; one that diverged gets a merge commit of
// the remote's commits (first parent the base, so every first-parent
// commit stays one the gate passed), gated like any merge into the base,
// and the base moves to it. moved: the base moved. out.Err: the merge
// conflicts or is red, or git failed (the run halts: nothing red is
// pushed); out.Waiting / Wait: the move waits as a landing's does.
func (o *Owner) level(ctx context.Context) (out scheduler.MergeOutcome, moved bool) {
	out.ID = UpstreamID
	remote, err := o.fetchUp(ctx)
	if err != nil || remote == "" {
		out.Err = err
		return out, false
	}
	base, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base)
	if err != nil {
		out.Err = fmt.Errorf("base branch %s: %w", o.Layout.Base, err)
		return out, false
	}
	if remote == base {
		return out, false
	}
	// One merge-base says which is ahead (two merge-base --is-ancestor
	// before): a commit that is the other's ancestor is their only best
	// common ancestor. No common commit at all stops the landing.
	mb, err := o.Git.MergeBase(ctx, remote, base)
	if err != nil {
		out.Err = fmt.Errorf("PUSH_BASE: where %s/%s (%.12s) and %s (%.12s) diverged (unrelated histories have no such commit): %w", o.Upstream.Remote, o.Layout.Base, remote, o.Layout.Base, base, err)
		return out, false
	}
	if mb == remote {
		return out, false // the base is ahead (pushed after the landing)
	}
	to := remote
	if mb != base {
		if to, out = o.mergeUp(ctx, base, remote); to == "" {
			return out, false
		}
	}
	j := scheduler.MergeJob{ID: UpstreamID}
	res, again := o.moveBase(ctx, j, base, to, nil)
	if again {
		// The base moved under it: the landing reads it again and the
		// next landing levels it.
		return out, true
	}
	return res, res.OK
}

// mergeUp builds and gates the merge of the remote's commits (remote)
// into base; "" and why when it cannot land.
func (o *Owner) mergeUp(ctx context.Context, base, remote string) (string, scheduler.MergeOutcome) {
	out := scheduler.MergeOutcome{ID: UpstreamID}
	u := o.Upstream
	tree, conflicts, err := o.Git.MergeTree(ctx, base, remote)
	if err != nil {
		out.Err = fmt.Errorf("PUSH_BASE: merge %s's new commits into %s: %w", u.Remote, o.Layout.Base, err)
		return "", out
	}
	if len(conflicts) > 0 {
		out.Err = fmt.Errorf("PUSH_BASE: %s/%s (%.12s) and %s (%.12s) diverged and conflict on %v: merge them by hand and push", u.Remote, o.Layout.Base, remote, o.Layout.Base, base, conflicts)
		return "", out
	}
	msg := fmt.Sprintf("Merge %s/%s into %s\n\nThe commits pushed to %s meanwhile, merged and gated by claudopilot (PUSH_BASE).\n", u.Remote, o.Layout.Base, o.Layout.Base, u.Remote)
	commit, err := o.Git.CommitTree(ctx, tree, []string{base, remote}, msg)
	if err != nil {
		out.Err = err
		return "", out
	}
	j := scheduler.MergeJob{ID: UpstreamID, Gate: u.Gate}
	g := o.gateCar(ctx, scheduler.CarGate{Commit: commit, Tree: tree, Jobs: []scheduler.MergeJob{j}}, upstreamGate(o.Layout))
	switch {
	case g.Err != nil:
		out.Err = fmt.Errorf("PUSH_BASE: gate the merge of %s/%s: %w", u.Remote, o.Layout.Base, g.Err)
		return "", out
	case !g.OK:
		out.Err = fmt.Errorf("PUSH_BASE: the merge of %s/%s (%.12s) into %s is red on the gate (see %s): nothing was pushed; fix %s and run again", u.Remote, o.Layout.Base, remote, o.Layout.Base, g.Log, o.Layout.Base)
		return "", out
	}
	return commit, out
}

// pushUp pushes the base to the remote after a move (js: the phases that
// landed in it, whose remote auto/<id> branches go). A push rejected
// because someone else pushed levels the base (their commits merged
// through the gate) and pushes again, at most Tries times. What is pushed
// is scanned as the queue's pushes are: a secret stops it.
func (o *Owner) pushUp(ctx context.Context, js []scheduler.MergeJob) (note string, err error) {
	u := o.Upstream
	for try := 0; ; try++ {
		base, err := o.Git.RevParse(ctx, "refs/heads/"+o.Layout.Base)
		if err != nil {
			return "", err
		}
		if o.remoteHad(ctx, base) {
			// The base is the remote's as last fetched or pushed (a
			// fast-forward to it, a start with nothing new): a push
			// would publish nothing, and cost a push and its scan
			// (two git processes and eight with the push's children).
			break
		}
		if err := o.scanPush(ctx, base); err != nil {
			return "", err
		}
		err = o.net().PushCommit(ctx, u.Remote, base, o.Layout.Base)
		if err == nil {
			break
		}
		if !errors.Is(err, worktree.ErrPushRejected) {
			return "", fmt.Errorf("PUSH_BASE: push %s to %s: %w", o.Layout.Base, u.Remote, err)
		}
		if try+1 >= u.tries() {
			return "", fmt.Errorf("PUSH_BASE: %s rejected %d pushes of %s in a row (someone else keeps pushing): %s is not pushed; push it by hand, or run again", u.Remote, u.tries(), o.Layout.Base, o.Layout.Base)
		}
		if out, _ := o.level(ctx); out.Err != nil {
			return "", out.Err
		} else if out.Waiting != "" || len(out.Wait) > 0 {
			return "", fmt.Errorf("PUSH_BASE: %s rejected the push and the merge of its commits waits: %s", u.Remote, scheduler.WaitDetail(out.Wait, out.Waiting))
		}
	}
	return o.dropBranches(ctx, js), nil
}

// remoteHad reports whether the remote-tracking ref of the base holds
// base: the remote had it when it was last fetched or pushed.
func (o *Owner) remoteHad(ctx context.Context, base string) bool {
	cur, err := o.Git.RevParse(ctx, o.trackRef())
	return err == nil && cur == base
}

// scanPush looks at what the push of base would publish beyond the
// remote's: every commit's added lines and message, for the driver's own
// secrets and the secret shapes (package secret), as the queue's pushes
// are. A scan that cannot run stops the push.
func (o *Owner) scanPush(ctx context.Context, base string) error {
	from := o.trackRef()
	if _, err := o.Git.RevParse(ctx, from); err != nil {
		// The remote has no such branch: a first push would publish the
		// whole history, which is the user's to decide.
		return fmt.Errorf("PUSH_BASE: %s has no branch %s: push it once by hand (git push %s %s)", o.Upstream.Remote, o.Layout.Base, o.Upstream.Remote, o.Layout.Base)
	}
	// SECRET_ALLOW holds here as for the landing that brought the hit;
	// none accepts one of the driver's own secrets.
	s := secret.Scanner{Allow: o.SecretAllow, Known: o.Redact}
	rep, err := s.Landing(ctx, o.Git, from, base)
	if err != nil {
		return fmt.Errorf("PUSH_BASE: the secret scan of the push could not run, nothing was pushed: %w", err)
	}
	if len(rep.Found) > 0 {
		return fmt.Errorf("PUSH_BASE: nothing was pushed: %s", secret.Describe(rep.Found))
	}
	return nil
}

// dropBranches deletes the remote's auto/<id> branches of the phases
// that landed (Claudopilot pushed them), those it has; a failure is a
// note (the base is pushed: nothing is lost).
func (o *Owner) dropBranches(ctx context.Context, js []scheduler.MergeJob) string {
	var names []string
	for _, j := range js {
		names = append(names, o.Layout.Branch(j.ID))
	}
	has, err := o.net().RemoteBranches(ctx, o.Upstream.Remote, names)
	if err == nil {
		err = o.net().DeleteRemoteBranches(ctx, o.Upstream.Remote, has)
	}
	if err != nil {
		return fmt.Sprintf("PUSH_BASE: the landed branches were not deleted on %s: %v", o.Upstream.Remote, err)
	}
	return ""
}
