package work

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// An attempt at an outside node (an issue of the queue: Job.Outside set)
// is a phase's attempt with other names: its own branch, a new branch cut
// from a ref the caller fetched (origin's base) rather than the local
// base, a doc written into the worktree rather than committed on the base,
// its own prompt templates, and a done rule of commits alone (no DONE_
// rename). The rest (sandbox, prepare, leftovers, rate limits, stuck and
// timeout, the gate, lanes, logs) is the phase's, unchanged.

// target is what one attempt works on and against.
type target struct {
	branch  string // the branch the agent commits on
	from    string // the ref a new branch starts from and a kept branch has merged in
	base    string // the base's name, for the contract and messages
	docRel  string // the doc, relative to the worktree root
	doneRel string // a phase's DONE_ doc; "" for an outside node
	tmpl    string // the prompt template's name
}

// target resolves a job's branch, base and doc.
func (r *Runner) target(j scheduler.Job) target {
	if o := j.Outside; o != nil {
		return target{
			branch: o.Branch, from: o.From, base: o.Base, docRel: o.DocRel,
			tmpl: o.Prompt + string(j.Role),
		}
	}
	return target{
		branch: r.Layout.Branch(j.ID), from: "refs/heads/" + r.Layout.Base, base: r.Layout.Base,
		docRel: r.Layout.DocRel(j.Doc), doneRel: r.Layout.DocRel(roadmap.DonePrefix + j.Doc),
		tmpl: string(j.Role),
	}
}

// checkOutside refuses an outside job the runner cannot carry out, before
// anything is made for it.
func checkOutside(j scheduler.Job, cmd string, env []string) error {
	o := j.Outside
	if o == nil {
		return nil
	}
	if env == nil {
		// A nil Env lets the prepare command and the gate inherit the
		// driver's environment, GitHub token included: an issue's
		// processes run only with an environment given (issues.AgentEnv).
		return fmt.Errorf("%s: the runner has no environment of its own; an issue's agent would inherit the driver's token", j.ID)
	}
	if o.Branch == "" || o.From == "" {
		return fmt.Errorf("%s: no branch or start ref given", j.ID)
	}
	if o.DocRel == "" || path.IsAbs(o.DocRel) || !filepath.IsLocal(filepath.FromSlash(o.DocRel)) {
		return fmt.Errorf("%s: the doc's path %q is not inside the worktree", j.ID, o.DocRel)
	}
	if cmd == ScriptAgent {
		// The script agent runs a phase doc's ```sh block and renames
		// the doc to DONE_: neither means anything for an issue.
		return fmt.Errorf("the built-in %q agent runs phase docs only; %s needs an agent command", ScriptAgent, j.ID)
	}
	return nil
}

// writeDoc writes an outside node's doc into its worktree before each
// agent run (the agent may have changed or deleted it). It goes through
// an os.Root, so a symlink the agent left cannot carry the write out of
// the worktree. commitLeftovers never commits it.
func writeDoc(wt string, o *scheduler.OutsideWork) error {
	root, err := os.OpenRoot(wt)
	if err != nil {
		return fmt.Errorf("write the doc: %w", err)
	}
	defer root.Close()
	rel := filepath.FromSlash(o.DocRel)
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return fmt.Errorf("write the doc %s: %w", o.DocRel, err)
	}
	if err := root.WriteFile(rel, o.Doc, 0o644); err != nil {
		return fmt.Errorf("write the doc %s: %w", o.DocRel, err)
	}
	return nil
}

// outsideDone is an outside node's done rule: at least one commit beyond
// Job.Since (a repair of red checks must go beyond the red head), else
// beyond the ref its branch started from.
func (r *Runner) outsideDone(ctx context.Context, j scheduler.Job, t target) (tip string, ok bool, why string) {
	tip, err := r.Git.RevParse(ctx, "refs/heads/"+t.branch)
	if err != nil {
		return "", false, err.Error()
	}
	since := j.Since
	if since == "" {
		since = t.from
	}
	if r.beyond(ctx, since, tip) {
		return tip, true, "" // since is among tip's first ancestors: no count
	}
	n, err := r.Git.CountCommits(ctx, since, tip)
	if err != nil {
		return tip, false, err.Error()
	}
	if n == 0 {
		return tip, false, fmt.Sprintf("the %s exited 0 without a commit beyond %s", j.Role, short(since))
	}
	return tip, true, ""
}

// short shortens a commit id for a message; a ref name stays as it is.
func short(rev string) string {
	if len(rev) == 40 && !strings.ContainsAny(rev, "/") {
		return rev[:12]
	}
	return rev
}

// outsideEnv is an outside node's part of the contract: the failing
// checks' names for a repair of red checks.
func outsideEnv(j scheduler.Job) []string {
	if j.Outside == nil || j.Role != state.Supervisor || len(j.Checks) == 0 {
		return nil
	}
	return []string{"CLAUDOPILOT_FAILING_CHECKS=" + strings.Join(j.Checks, "\n")}
}
