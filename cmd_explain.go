package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
)

func cmdExplain(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "explain", "explain ID [--roadmap DIR]", `
Say why a phase is not running: which of its deps are not merged and their
states, a declared scope that overlaps a running phase's, a rate-limit
cooldown with the time left, a LOOP-CHECKPOINT above it, or no free slot
(MAX_PARALLEL agents already running). For a failed or blocked phase, the
reason and the log to read. It changes nothing.`,
		"  claudopilot explain phase-04")
	dirFlag := fs.String("roadmap", "", "the roadmap folder (default: ./roadmap, else ./.claudopilot/roadmap)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("explain takes one phase ID")
	}
	s, err := loadSnapshot(ctx, a, *dirFlag)
	if err != nil {
		return err
	}
	id := fs.Arg(0)
	n := s.rm.Node(id)
	if n == nil {
		return fmt.Errorf("explain: no phase %q in %s", id, s.rel(s.rm.ManifestPath))
	}
	w := a.s.Out
	h := s.hist[id]
	if h == nil {
		h = &scheduler.PhaseHistory{}
	}
	log := s.rel(s.latestLog(id))
	switch n.State {
	case manifest.Merged:
		fmt.Fprintf(w, "%s is merged: nothing left to run.\n", id)
		return nil
	case manifest.Running:
		if s.live && h.Waiting != "" {
			fmt.Fprintf(w, "%s is done and its merge is %s.\n", id, h.Waiting)
		} else if s.live {
			fmt.Fprintf(w, "%s is running (attempt %d); its newest log is %s.\n", id, h.WorkerRuns+h.SuperRuns, orDash(log))
		} else {
			fmt.Fprintf(w, "%s is marked [running] but no run is going on: the driver stopped during it. `claudopilot run` resumes it.\n", id)
		}
		return nil
	case manifest.Failed, manifest.Blocked:
		fmt.Fprintf(w, "%s is [%s]", id, n.State)
		// The phase to retry is the one whose own failure parked this
		// one; retrying it brings its parked dependents back too.
		culprit := scheduler.Culprit(s.hist, id)
		with := ""
		if culprit != id {
			log, with = s.rel(s.latestLog(culprit)), fmt.Sprintf(" (%s comes back with it)", id)
			ch := s.hist[culprit]
			if ch == nil {
				ch = &scheduler.PhaseHistory{}
			}
			fmt.Fprintf(w, ": it waits on %s, which is [%s]", h.WaitsOn, stateOf(s.rm, h.WaitsOn))
			if culprit != h.WaitsOn {
				fmt.Fprintf(w, " and waits on %s, which is [%s]", culprit, stateOf(s.rm, culprit))
			}
			if ch.Reason != "" {
				fmt.Fprintf(w, ": reason %s%s", ch.Reason, detailSuffix(ch.Detail))
			}
			fmt.Fprintln(w, ".")
		} else if h.Reason != "" {
			fmt.Fprintf(w, ": reason %s%s.\n", h.Reason, detailSuffix(h.Detail))
		} else {
			fmt.Fprintln(w, ".")
		}
		if log != "" {
			fmt.Fprintf(w, "Read %s, then `claudopilot retry %s`%s.\n", log, culprit, with)
		} else {
			fmt.Fprintf(w, "Fix the cause, then `claudopilot retry %s`%s.\n", culprit, with)
		}
		return nil
	}
	// Pending: every reason it is held back, not only the first.
	var why []string
	for _, d := range s.rm.Deps(n) {
		if d.State != manifest.Merged {
			y := fmt.Sprintf("its dep %s is [%s]", d.ID, d.State)
			if d.State == manifest.Blocked || d.State == manifest.Failed {
				y += fmt.Sprintf(" (fix it, then `claudopilot retry %s`)", scheduler.Culprit(s.hist, d.ID))
			}
			why = append(why, y)
		}
	}
	running := 0
	for _, o := range s.rm.Nodes {
		if o.State != manifest.Running {
			continue
		}
		running++
		if len(n.Owns) > 0 && len(o.Owns) > 0 && roadmap.Overlap(n.Owns, o.Owns) {
			why = append(why, fmt.Sprintf("its scope (owns: %s) overlaps running %s's (owns: %s)", strings.Join(n.Owns, ", "), o.ID, strings.Join(o.Owns, ", ")))
		}
	}
	if until := s.cool[scheduler.Worker]; until.After(s.now) {
		why = append(why, fmt.Sprintf("a rate-limit cooldown holds new agents until %s (%s left)", until.Local().Format("15:04:05"), until.Sub(s.now).Round(time.Second)))
	}
	if cps := s.rm.Manifest.Checkpoints; len(cps) > 0 && n.Line > cps[0].Line {
		why = append(why, fmt.Sprintf("it is below the LOOP-CHECKPOINT at line %d (remove the marker, or run with KEEP_GOING or IGNORE_LOOP_CHECKPOINTS)", cps[0].Line))
	}
	if len(why) == 0 && s.live {
		max := maxParallel(a, s)
		if running >= max {
			why = append(why, fmt.Sprintf("no free slot: %d of MAX_PARALLEL=%d agents are running", running, max))
		} else {
			why = append(why, "it is eligible and will start at the next scheduling step")
		}
	}
	if len(why) == 0 {
		fmt.Fprintf(w, "%s is [pending] and eligible: no run is going on. `claudopilot run` starts it.\n", id)
		return nil
	}
	fmt.Fprintf(w, "%s is [pending] and not running because:\n", id)
	for _, y := range why {
		fmt.Fprintf(w, "  - %s\n", y)
	}
	return nil
}

// maxParallel resolves MAX_PARALLEL as a run would, without flags.
func maxParallel(a *app, s *snapshot) int {
	ks := runKnobs()
	file, _, _ := readConfig(s.layout.Top, ks)
	set := resolveWith(nilFlags{}, ks, a.env, file, nil)
	n, err := set.int("MAX_PARALLEL")
	if err != nil || n < 1 {
		return 3
	}
	return n
}

func stateOf(rm *roadmap.Roadmap, id string) manifest.State {
	if n := rm.Node(id); n != nil {
		return n.State
	}
	return "unknown"
}

func detailSuffix(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
