package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
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
		h = &state.PhaseHistory{}
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
			if m, ok := work.WorktreeLane(s.layout.Worktree(id)); ok {
				fmt.Fprintf(w, "Its worktree %s runs %s attempt %d on lane %s.\n", s.rel(s.layout.Worktree(id)), m.Role, m.Attempt, m.Lane)
			}
		} else {
			fmt.Fprintf(w, "%s is marked [running] but no run is going on: the driver stopped during it. `claudopilot run` resumes it.\n", id)
		}
		if s.live && h.Conflict != "" {
			fmt.Fprintf(w, "Merge-tree dry runs found a %s: of the two, the phase earlier in the manifest lands first.\n", h.Conflict)
		}
		return nil
	case manifest.Failed, manifest.Blocked:
		fmt.Fprintf(w, "%s is [%s]", id, n.State)
		// The phase to retry is the one whose own failure parked this
		// one; retrying it brings its parked dependents back too.
		culprit := state.Culprit(s.hist, id)
		with := ""
		if culprit != id {
			log, with = s.rel(s.latestLog(culprit)), fmt.Sprintf(" (%s comes back with it)", id)
			ch := s.hist[culprit]
			if ch == nil {
				ch = &state.PhaseHistory{}
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
		if m, ok := work.WorktreeLane(s.layout.Worktree(id)); ok {
			fmt.Fprintf(w, "Its worktree %s last ran %s attempt %d on lane %s.\n", s.rel(s.layout.Worktree(id)), m.Role, m.Attempt, m.Lane)
		}
		if log != "" {
			fmt.Fprintf(w, "Read %s, then `claudopilot retry %s`%s.\n", log, culprit, with)
		} else {
			fmt.Fprintf(w, "Fix the cause, then `claudopilot retry %s`%s.\n", culprit, with)
		}
		return nil
	}
	// Pending: every reason it is held back, not only the first, as the
	// scheduler's own rules (scheduler.Holds) decide it.
	rs := runSettingsOf(a, s)
	view := scheduler.View{
		Roadmap: s.rm, State: roadmap.FileState,
		Held:      func(o *roadmap.Node) bool { return o.State == manifest.Running },
		KeepGoing: rs.keepGoing, IgnoreCheckpoints: rs.ignoreCheckpoints,
		Cooldown: func(cmd string) time.Time { return s.cool.For(cmd, scheduler.Worker) },
		Cmds:     func(o *roadmap.Node) []string { return scheduler.LaneCmds(rs.lanes, o, scheduler.Worker) },
		Now:      s.now,
	}
	var why []string
	for _, h := range scheduler.Holds(view, n) {
		switch h.Kind {
		case scheduler.HoldDep:
			d := h.Node
			y := fmt.Sprintf("its dep %s is [%s]", d.ID, d.State)
			if d.State == manifest.Blocked || d.State == manifest.Failed {
				y += fmt.Sprintf(" (fix it, then `claudopilot retry %s`)", state.Culprit(s.hist, d.ID))
			}
			why = append(why, y)
		case scheduler.HoldExternal:
			why = append(why, fmt.Sprintf("its dep %s is an issue: it must be done (closed as completed, or its pull request merged), which only a run with --issues (or queue) reads from GitHub", h.ID))
		case scheduler.HoldScope:
			o := h.Node
			why = append(why, fmt.Sprintf("its scope (owns: %s) overlaps running %s's (owns: %s)", strings.Join(n.Owns, ", "), o.ID, strings.Join(o.Owns, ", ")))
		case scheduler.HoldCooldown:
			why = append(why, fmt.Sprintf("a rate-limit cooldown holds new agents until %s (%s left)", h.Until.Local().Format("15:04:05"), h.Until.Sub(s.now).Round(time.Second)))
		case scheduler.HoldCheckpoint:
			why = append(why, fmt.Sprintf("it is below the LOOP-CHECKPOINT at line %d (remove the marker, or run with KEEP_GOING or IGNORE_LOOP_CHECKPOINTS)", h.Line))
		}
	}
	running := s.rm.Counts()[manifest.Running]
	if len(why) == 0 && s.live {
		if max := rs.maxParallel; running >= max {
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

// explainSettings are the run settings explain's answer depends on.
type explainSettings struct {
	maxParallel                  int
	keepGoing, ignoreCheckpoints bool
	lanes                        []scheduler.Lane
}

// runSettingsOf reads them from the newest run's journal record, which
// holds its flags too; before any run, it resolves them as a run would
// (environment, claudopilot.config, defaults).
func runSettingsOf(a *app, s *snapshot) explainSettings {
	if r := s.rules; r != nil && len(r.Lanes) > 0 {
		es := explainSettings{maxParallel: max(r.Slots, 1), keepGoing: r.KeepGoing, ignoreCheckpoints: r.IgnoreCheckpoints}
		for _, l := range r.Lanes {
			es.lanes = append(es.lanes, scheduler.Lane{ID: l.ID, Cmd: l.Cmd, SupervisorCmd: l.SupervisorCmd, Fallback: l.Fallback, Slots: l.Slots})
		}
		return es
	}
	ks := runKnobs()
	file, _, _ := readConfig(s.layout.Top, ks)
	set := resolveWith(nilFlags{}, ks, a.env, file, nil)
	es := explainSettings{maxParallel: 3}
	if n, err := set.int("MAX_PARALLEL"); err == nil && n >= 1 {
		es.maxParallel = n
	}
	es.keepGoing, _ = set.bool("KEEP_GOING")
	es.ignoreCheckpoints, _ = set.bool("IGNORE_LOOP_CHECKPOINTS")
	agent, super := set.str("AGENT_CMD"), set.str("SUPERVISOR_CMD")
	if super == "" {
		super = agent
	}
	es.lanes = []scheduler.Lane{{Cmd: agent, SupervisorCmd: super}}
	if ls, err := resolveLanes(a, file, agent, set.str("SUPERVISOR_CMD")); err == nil && len(ls.Lanes) > 0 {
		es.lanes = nil
		for _, l := range ls.Lanes {
			es.lanes = append(es.lanes, scheduler.Lane{ID: l.ID, Cmd: l.Cmd, SupervisorCmd: l.SupervisorCmd, Fallback: l.Fallback})
		}
	}
	return es
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
