package main

import (
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/engine"
)

// resolveReview reads the REVIEW_* settings. The gate is on when
// REVIEW_CMD is set.
func resolveReview(s settings) (engine.Review, error) {
	r := engine.Review{Cmd: strings.TrimSpace(s.str("REVIEW_CMD"))}
	r.Cfg.On = r.Cmd != ""
	for k, dst := range map[string]*int{"REVIEW_SKEPTICS": &r.Cfg.Skeptics, "REVIEW_SLOTS": &r.Cfg.Slots, "REVIEW_MAX_ROUNDS": &r.Cfg.MaxRounds} {
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
			r.Cfg.Lenses = append(r.Cfg.Lenses, l)
		}
	}
	if len(r.Cfg.Lenses) == 0 {
		return r, usageErrorf("REVIEW_LENSES names no lens (from %s)", s.source["REVIEW_LENSES"])
	}
	return r, nil
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
