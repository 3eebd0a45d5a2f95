package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// stateDirOf finds the state folder of the repository holding dir.
func stateDirOf(ctx context.Context, a *app, dir string) (*worktree.Client, string, error) {
	git, err := worktree.Open(ctx, dir, gitEnv(a))
	if err != nil {
		return nil, "", err
	}
	// The driver's state lives in the main checkout, also when the
	// command runs in a phase's worktree (an agent pausing the run).
	wts, err := git.Worktrees(ctx)
	if err != nil {
		return nil, "", err
	}
	if len(wts) == 0 {
		return nil, "", fmt.Errorf("%s: git lists no worktree", git.Dir)
	}
	return git, state.Layout{Top: wts[0].Path}.StateDir(), nil
}

func cmdDrain(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "drain", "drain", `
Ask the running driver to finish what runs and stop: no new launches;
running agents finish, their work is checked and merged, then the run ends
with exit 0 and its summary. Phases not started stay as they are for the
next run. Without a running driver there is nothing to drain.`, "  claudopilot drain")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("drain takes no arguments")
	}
	git, dir, err := stateDirOf(ctx, a, a.cwd)
	if err != nil {
		return err
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return err
	}
	info, ok := state.LockHeld(filepath.Join(common, "claudopilot.lock"))
	if !ok {
		return errors.New("drain: no driver is running here")
	}
	if err := engine.SetDrain(dir); err != nil {
		return err
	}
	fmt.Fprintf(a.s.Out, "draining: the driver (pid %d) finishes what runs, then stops\n", info.PID)
	return nil
}

func cmdPause(ctx context.Context, a *app, args []string) error {
	return setPaused(ctx, a, args, true)
}

func cmdResume(ctx context.Context, a *app, args []string) error {
	return setPaused(ctx, a, args, false)
}

func setPaused(ctx context.Context, a *app, args []string, paused bool) error {
	name, what := "resume", "Let a paused run launch agents again."
	if paused {
		name, what = "pause", "Stop new launches: running agents finish and their work still merges;\nnothing new starts until `claudopilot resume`."
	}
	fs := newFlags(a, name, name, what+`

The switch is a file under .claudopilot/state, so it reaches a running
driver within a second and holds across restarts: a driver started while
paused waits.`, "  claudopilot "+name)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("%s takes no arguments", name)
	}
	git, dir, err := stateDirOf(ctx, a, a.cwd)
	if err != nil {
		return err
	}
	if err := engine.SetPaused(dir, paused); err != nil {
		return err
	}
	fmt.Fprintf(a.s.Out, "%s%s\n", map[bool]string{true: "paused", false: "resumed"}[paused], driverNote(ctx, git))
	return nil
}

// driverNote says whether a running driver will see a switch.
func driverNote(ctx context.Context, git *worktree.Client) string {
	common, err := git.CommonDir(ctx)
	if err != nil {
		return ""
	}
	if info, ok := state.LockHeld(filepath.Join(common, "claudopilot.lock")); ok {
		return fmt.Sprintf(" (the running driver, pid %d, takes it within a second)", info.PID)
	}
	return " (no driver is running: the next run starts this way)"
}

func cmdLane(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "lane", "lane on|off ID", `
Switch a lane on or off. An off lane launches nothing new; its running
agents finish. The switch persists under .claudopilot/state and a running
driver takes it within a second (the pacer passes again at once).`, "  claudopilot lane off codex\n  claudopilot lane on codex")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 || (fs.Arg(0) != "on" && fs.Arg(0) != "off") {
		return usageErrorf("lane: want `lane on ID` or `lane off ID`")
	}
	on, id := fs.Arg(0) == "on", fs.Arg(1)
	git, dir, err := stateDirOf(ctx, a, a.cwd)
	if err != nil {
		return err
	}
	ls, err := lanesOf(a, git)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ls.Lanes, func(l pacer.LaneConfig) bool { return l.ID == id }) {
		var ids []string
		for _, l := range ls.Lanes {
			ids = append(ids, l.ID)
		}
		if len(ids) == 0 {
			return usageErrorf("lane: no LANES are set up (see docs/lanes.md)")
		}
		return usageErrorf("lane: no lane %q in LANES (%s)", id, strings.Join(ids, " "))
	}
	if err := engine.SetLane(dir, id, on); err != nil {
		return err
	}
	fmt.Fprintf(a.s.Out, "lane %s %s%s\n", id, fs.Arg(0), driverNote(ctx, git))
	return nil
}

// lanesOf resolves the lane setup of the repository as run does: the
// same settings model, every problem reported.
func lanesOf(a *app, git *worktree.Client) (engine.Lanes, error) {
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Env: a.env, Top: git.Dir})
	if err != nil {
		return engine.Lanes{}, err
	}
	return wire.Lanes(s, a.env), nil
}

type laneRow struct {
	ID          string       `json:"id"`
	Mode        pacer.Mode   `json:"mode"`
	Off         bool         `json:"switched_off"`
	Usage       *pacer.Usage `json:"usage,omitempty"`
	Want        int          `json:"want"`
	Concurrency int          `json:"concurrency"`
	Why         string       `json:"why"`
}

func cmdLanes(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "lanes", "lanes [--json]", `
Show each lane: its mode, the usage its USAGE_CMD reads, what it wants, the
resource budget, and the concurrency it gets now. This is one pacer pass
with the same settings, usage commands, probe and saved state as run, and
its result is saved as the previous value, as a pass of the driver's is.`, "  claudopilot lanes\n  claudopilot lanes --json | jq '.lanes[].concurrency'")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	git, dir, err := stateDirOf(ctx, a, a.cwd)
	if err != nil {
		return err
	}
	ls, err := lanesOf(a, git)
	if err != nil {
		return err
	}
	if len(ls.Lanes) == 0 {
		fmt.Fprintln(a.s.Out, "no LANES set: one lane of AGENT_CMD and MAX_PARALLEL (see docs/lanes.md)")
		return nil
	}
	sw, err := control.Load(dir)
	if err != nil {
		return err
	}
	plan, usage, err := ls.Pass(ctx, dir, sw, false)
	if err != nil {
		return err
	}
	var rows []laneRow
	for i, l := range ls.Lanes {
		r := laneRow{ID: l.ID, Mode: l.Mode, Off: sw.LanesOff[l.ID], Want: plan.Lanes[i].Want, Concurrency: plan.Lanes[i].Concurrency, Why: plan.Lanes[i].Why}
		if u, ok := usage[l.ID]; ok {
			r.Usage = &u
		}
		rows = append(rows, r)
	}
	if *jsonOut {
		return json.NewEncoder(a.s.Out).Encode(map[string]any{"paused": sw.Paused, "budget": plan.Budget, "lanes": rows})
	}
	tw := tabwriter.NewWriter(a.s.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LANE\tMODE\tUSAGE\tWANT\tGETS\tWHY")
	for _, r := range rows {
		u := "-"
		if r.Usage != nil {
			u = "unreadable"
			if r.Usage.OK {
				u = fmt.Sprintf("%.0f%% (resets in %s)", r.Usage.PctUsed, time.Duration(r.Usage.SecsToReset)*time.Second)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.ID, r.Mode, u, r.Want, r.Concurrency, r.Why)
	}
	tw.Flush()
	note := ""
	if sw.Paused {
		note = " (paused: nothing changes until resume)"
	}
	fmt.Fprintf(a.s.Out, "budget %d%s\n", plan.Budget, note)
	return nil
}
