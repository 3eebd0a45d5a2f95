package main

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/worktree"
)

// sandboxFrom builds the sandbox of a run from its settings; nil when
// SANDBOX is off. A SANDBOX=bwrap that cannot work here is an error now,
// before anything changes (exit 1; a malformed value is misuse, 64).
func sandboxFrom(ctx context.Context, a *app, git *worktree.Client, s settings) (*sandbox.Config, error) {
	mode, err := sandbox.ParseMode(s.str("SANDBOX"))
	if err != nil {
		return nil, usageErrorf("%v (from %s)", err, s.source["SANDBOX"])
	}
	net, err := s.bool("SANDBOX_NET")
	if err != nil {
		return nil, err
	}
	gate, err := s.bool("SANDBOX_GATE")
	if err != nil {
		return nil, err
	}
	rw, err := sandbox.HomeRW(a.env["HOME"], s.str("SANDBOX_RW"))
	if err != nil {
		return nil, usageErrorf("%v (from %s)", err, s.source["SANDBOX_RW"])
	}
	if mode == sandbox.Off {
		return nil, nil
	}
	for i, p := range rw {
		rw[i] = sandbox.Real(p)
	}
	// The base checkout holds the phases' worktrees (.claudopilot/
	// worktrees): hiding it hides them all; each agent gets its own back.
	c := &sandbox.Config{Net: net, Gate: gate, RW: rw, Hide: []string{sandbox.Real(git.Dir)},
		Keep: sandbox.ToolPaths(a.env["PATH"], s.str("AGENT_CMD"), s.str("SUPERVISOR_CMD"), s.str("REVIEW_CMD"),
			s.str("GATE_CMD"), s.str("WORKTREE_PREPARE_CMD"), s.str("LOCKFILE_CMD"))}
	if err := c.Probe(ctx); err != nil {
		return nil, fmt.Errorf("SANDBOX=bwrap (from %s) cannot work here: %w (install bubblewrap, or set SANDBOX=off)", s.source["SANDBOX"], err)
	}
	return c, nil
}

// checkSandbox reports the sandbox: FAIL when SANDBOX=bwrap cannot work
// here; when it is off, whether bubblewrap would work, recommending it
// either way (agents are then unconfined: docs/sandbox.md).
func (d *doctorState) checkSandbox(ctx context.Context) {
	if d.set.val == nil {
		return
	}
	mode, err := sandbox.ParseMode(d.set.str("SANDBOX"))
	if err != nil {
		d.add(doctorFail, fmt.Sprintf("sandbox: %v (from %s)", err, d.set.source["SANDBOX"]), "set SANDBOX to bwrap or off")
		return
	}
	probe := (&sandbox.Config{}).Probe(ctx)
	if mode == sandbox.Bwrap {
		if probe != nil {
			d.add(doctorFail, fmt.Sprintf("sandbox: SANDBOX=bwrap (from %s) cannot work here: %v", d.set.source["SANDBOX"], probe),
				"install bubblewrap (apt-get install bubblewrap) and allow user namespaces, or set SANDBOX=off")
			return
		}
		d.add(doctorOK, "sandbox: bwrap (agents can write only their worktree and branch)", "")
		return
	}
	if probe == nil {
		d.add(doctorOK, "sandbox: off; bubblewrap works here: SANDBOX=bwrap (--sandbox) keeps agents inside their worktree (docs/sandbox.md)", "")
		return
	}
	d.add(doctorOK, "sandbox: off, and bubblewrap does not work here; to keep agents inside their worktree, install it and set SANDBOX=bwrap (docs/sandbox.md)", "")
}
