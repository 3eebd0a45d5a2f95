package work

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/scheduler"
)

// Remote runs an agent somewhere else than this machine
// (AGENT_RUNNER=kubernetes: package kube). Everything else of an attempt
// (worktree, prepare, the done check, the gate, the landing) stays here,
// and what the agent made comes back as a commit the driver checks as it
// checks a local agent's.
type Remote interface {
	RunAgent(ctx context.Context, a RemoteAttempt) RemoteResult
}

// RemoteAttempt is one agent run for a Remote.
type RemoteAttempt struct {
	ID, Role string
	Attempt  int
	Resume   bool // the driver died during this phase: adopt what it left
	// Base names the base and BaseSHA is the commit the branch starts
	// from; Branch is the phase branch and Start its tip.
	Base, BaseSHA, Branch, Start string
	// Merge is the commit a merge under way in the worktree brings in
	// (a supervisor sent to resolve the conflicts of a merge of the
	// base): the remote makes the same merge, conflicts left, before its
	// agent runs. "" none.
	Merge string
	// Docs are files the driver writes into the worktree and never
	// commits (an issue's doc: OutsideWork.DocRel), by path relative to
	// the worktree: the remote writes them too, and commits none.
	Docs map[string][]byte
	// Spec is what proc.Run would have run: the command, the contract
	// environment, the prompt, the log and its funnel, the timeouts.
	Spec proc.Spec
}

// RemoteResult is how it ended. Tip is the commit the agent's work ends
// at ("" none); Done, when set, is called once the driver has taken it
// (or refused it), to let the Remote clean up.
type RemoteResult struct {
	proc.Result
	Tip  string
	Done func(context.Context) error
}

// Reasons only a Remote gives (proc.Result.Reason).
const (
	RemoteOOM           = "oom"
	RemoteUnschedulable = "unschedulable"
)

// runAgent runs the agent: here, or through the Remote, whose commits are
// brought onto the branch (a fast-forward, checked) before anything
// reads it.
func (r *Runner) runAgent(ctx context.Context, j scheduler.Job, t target, wt string, s proc.Spec) proc.Result {
	if r.Remote == nil {
		return proc.Run(ctx, s)
	}
	a := RemoteAttempt{ID: j.ID, Role: string(j.Role), Attempt: j.Attempt, Resume: j.Resume, Base: t.base, Branch: t.branch, Spec: s}
	if j.Outside != nil {
		a.Docs = map[string][]byte{j.Outside.DocRel: j.Outside.Doc}
	}
	var err error
	if a.BaseSHA, err = r.Git.RevParse(ctx, t.from); err != nil {
		return proc.Result{ExitCode: -1, Reason: proc.ReasonStart, Err: err}
	}
	if a.Start, err = r.Git.RevParse(ctx, "refs/heads/"+t.branch); err != nil {
		return proc.Result{ExitCode: -1, Reason: proc.ReasonStart, Err: err}
	}
	if a.Merge, err = r.mergeUnderWay(ctx, wt); err != nil {
		return proc.Result{ExitCode: -1, Reason: proc.ReasonStart, Err: err}
	}
	rr := r.Remote.RunAgent(ctx, a)
	res := rr.Result
	if rr.Tip != "" && rr.Tip != a.Start {
		if err := r.takeRemote(ctx, wt, t.branch, a.Start, rr.Tip); err != nil {
			res.Reason, res.Err = RemoteRefused, err
			noteInLog(s.LogPath, "claudopilot: "+err.Error())
		}
	}
	if rr.Done != nil {
		if err := rr.Done(context.WithoutCancel(ctx)); err != nil {
			noteInLog(s.LogPath, "claudopilot: warning: "+err.Error())
		}
	}
	return res
}

// mergeUnderWay is the commit the merge under way in wt brings in ("" no
// merge is under way): the conflicts a supervisor resolves are in the
// worktree only, uncommitted, so the remote is told to make them again.
func (r *Runner) mergeUnderWay(ctx context.Context, wt string) (string, error) {
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return "", err
	}
	if !r.Git.MergeInProgressIn(ctx, wt, gd) {
		return "", nil
	}
	sha, err := r.Git.GitIn(ctx, wt, "rev-parse", "--verify", "MERGE_HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("the merge under way in %s: %w", wt, err)
	}
	return sha, nil
}

// RemoteRefused: the remote's result could not be taken onto the branch.
const RemoteRefused = "refused"

// takeRemote fast-forwards the phase branch and its worktree from start
// to tip. A tip that does not descend from start (the pod rewrote the
// branch's history) is refused: nothing of it lands.
func (r *Runner) takeRemote(ctx context.Context, wt, branch, start, tip string) error {
	ok, err := r.Git.IsAncestor(ctx, start, tip)
	if err != nil {
		return fmt.Errorf("the agent's result %s: %w", tip, err)
	}
	if !ok {
		return fmt.Errorf("the agent's result %s does not descend from the branch's tip %s", tip, start)
	}
	if err := r.checkHead(ctx, wt, branch); err != nil {
		return err
	}
	// The merge the remote was sent to resolve is its result's now (a
	// merge commit descending from start): the one left here, with its
	// conflicts, would stop the fast-forward.
	if merge, err := r.mergeUnderWay(ctx, wt); err != nil {
		return err
	} else if merge != "" {
		if err := r.Git.MergeAbort(ctx, wt); err != nil {
			return fmt.Errorf("abort the merge in %s before taking the agent's result: %w", wt, err)
		}
	}
	if err := r.Git.FastForward(ctx, wt, tip); err != nil {
		return fmt.Errorf("bring %s to the agent's result: %w", branch, err)
	}
	return nil
}
