package main

import (
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// reviewSetup is the resolved review gate (docs/review.md).
type reviewSetup struct {
	cmd string
	cfg scheduler.ReviewConfig
}

// resolveReview reads the REVIEW_* settings. The gate is on when
// REVIEW_CMD is set.
func resolveReview(s settings) (reviewSetup, error) {
	r := reviewSetup{cmd: strings.TrimSpace(s.str("REVIEW_CMD"))}
	r.cfg.On = r.cmd != ""
	for k, dst := range map[string]*int{"REVIEW_SKEPTICS": &r.cfg.Skeptics, "REVIEW_SLOTS": &r.cfg.Slots, "REVIEW_MAX_ROUNDS": &r.cfg.MaxRounds} {
		n, err := s.int(k)
		if err != nil {
			return r, err
		}
		if n < 1 {
			return r, usageErrorf("%s must be at least 1 (from %s)", k, s.source[k])
		}
		*dst = n
	}
	for _, l := range strings.Split(s.str("REVIEW_LENSES"), ",") {
		if l = strings.TrimSpace(l); l != "" {
			r.cfg.Lenses = append(r.cfg.Lenses, l)
		}
	}
	if len(r.cfg.Lenses) == 0 {
		return r, usageErrorf("REVIEW_LENSES names no lens (from %s)", s.source["REVIEW_LENSES"])
	}
	return r, nil
}

// reviewer builds the review gate's runner; it shares the worker's
// prompts, timeouts and log cap.
func (r reviewSetup) reviewer(git *worktree.Client, l scheduler.Layout, env []string, w *work.Runner) *work.Reviewer {
	return &work.Reviewer{
		Git: git, Layout: l, Cmd: r.cmd, Env: env, Prompts: w.Prompts,
		StuckTimeout: w.StuckTimeout, Timeout: w.AgentTimeout, LogCap: w.LogCap, KillGrace: w.KillGrace,
		Sandbox: w.Sandbox,
	}
}

// checkReviewCommand fails the run at its start when REVIEW_CMD names a
// program that is not there: every review would otherwise end with no
// verdict, round after round.
func checkReviewCommand(a *app, s settings, cmd, top string) error {
	prog, ok := commandWord(cmd)
	if !ok || shellBuiltin(prog) {
		return nil
	}
	if _, found := lookPathIn(prog, a.getenv("PATH"), top); !found {
		return fmt.Errorf("reviewer: %s (from %s): %s not found; fix: install it, or set REVIEW_CMD (--review) to a command on PATH, or unset it to run without the review gate", clipCmd(cmd), s.source["REVIEW_CMD"], prog)
	}
	return nil
}
