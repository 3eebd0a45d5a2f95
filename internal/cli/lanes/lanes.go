// Package lanes is `claudopilot lanes` and `claudopilot lane`: each lane's
// usage, want and concurrency (one pacer pass), and its switch.
package lanes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/notify"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// LaneOptions are what lane's arguments say.
type LaneOptions struct {
	App *cmdutil.App
	On  bool
	ID  string
}

// NewCmdLane is `claudopilot lane`; runF runs the parsed options (SetLane
// when nil).
func NewCmdLane(runF func(context.Context, *LaneOptions) error) cmdutil.Command {
	return cmdutil.NewCommand("lane", "switch a lane on or off", parseLane, SetLane, runF)
}

func parseLane(ctx context.Context, a *cmdutil.App, args []string) (*LaneOptions, error) {
	fs := cmdutil.NewFlags(a, "lane", "lane on|off ID", `
Switch a lane on or off. An off lane launches nothing new; its running
agents finish. The switch persists under .claudopilot/state and a running
driver takes it within a second (the pacer passes again at once).`, "  claudopilot lane off codex\n  claudopilot lane on codex")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 2 || (fs.Arg(0) != "on" && fs.Arg(0) != "off") {
		return nil, cmdutil.UsageErrorf("lane: want `lane on ID` or `lane off ID`")
	}
	return &LaneOptions{App: a, On: fs.Arg(0) == "on", ID: fs.Arg(1)}, nil
}

// SetLane switches a lane of LANES on or off.
func SetLane(ctx context.Context, o *LaneOptions) error {
	a, on, id := o.App, o.On, o.ID
	git, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	ls, _, err := lanesOf(a, git)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(ls.Lanes, func(l pacer.LaneConfig) bool { return l.ID == id }) {
		var ids []string
		for _, l := range ls.Lanes {
			ids = append(ids, l.ID)
		}
		if len(ids) == 0 {
			return cmdutil.UsageErrorf("lane: no LANES are set up (see docs/lanes.md)")
		}
		return cmdutil.UsageErrorf("lane: no lane %q in LANES (%s)", id, strings.Join(ids, " "))
	}
	if err := engine.SetLane(dir, id, on); err != nil {
		return err
	}
	fmt.Fprintf(a.S.Out, "lane %s %s%s\n", id, map[bool]string{true: "on", false: "off"}[on], cmdutil.DriverNote(ctx, git))
	return nil
}

// lanesOf resolves the lane setup of the repository as run does: the
// same settings model, every problem reported.
func lanesOf(a *cmdutil.App, git *worktree.Client) (engine.Lanes, *settings.Settings, error) {
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Env: a.Env, Top: git.Dir})
	if err != nil {
		return engine.Lanes{}, nil, err
	}
	return wire.Lanes(s, a.Env), s, nil
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

// Options are what lanes's flags say.
type Options struct {
	App  *cmdutil.App
	JSON bool
}

// NewCmd is `claudopilot lanes`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("lanes", "show each lane's usage, want and concurrency (one pacer pass)", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "lanes", "lanes [--json]", `
Show each lane: its mode, the usage its USAGE_CMD reads, what it wants, the
resource budget, and the concurrency it gets now. This is one pacer pass
with the same settings, usage commands, probe and saved state as run, and
its result is saved as the previous value, as a pass of the driver's is.`, "  claudopilot lanes\n  claudopilot lanes --json | jq '.lanes[].concurrency'")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	return &Options{App: a, JSON: *jsonOut}, nil
}

// Run makes one pacer pass, as the driver's timer does, and shows it.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	git, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	ls, s, err := lanesOf(a, git)
	if err != nil {
		return err
	}
	if len(ls.Lanes) == 0 {
		fmt.Fprintln(a.S.Out, "no LANES set: one lane of AGENT_CMD and MAX_PARALLEL (see docs/lanes.md)")
		return nil
	}
	sw, err := control.Load(dir)
	if err != nil {
		return err
	}
	prev, err := control.LoadLanes(dir)
	if err != nil {
		return err
	}
	plan, usage, err := ls.Pass(ctx, dir, sw, false)
	if err != nil {
		return err
	}
	notifyChanges(ctx, a, s, ls, prev, plan)
	var rows []laneRow
	for i, l := range ls.Lanes {
		r := laneRow{ID: l.ID, Mode: l.Mode, Off: sw.LanesOff[l.ID], Want: plan.Lanes[i].Want, Concurrency: plan.Lanes[i].Concurrency, Why: plan.Lanes[i].Why}
		if u, ok := usage[l.ID]; ok {
			r.Usage = &u
		}
		rows = append(rows, r)
	}
	if o.JSON {
		return json.NewEncoder(a.S.Out).Encode(map[string]any{"paused": sw.Paused, "budget": plan.Budget, "lanes": rows})
	}
	tw := tabwriter.NewWriter(a.S.Out, 0, 0, 2, ' ', 0)
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
	fmt.Fprintf(a.S.Out, "budget %d%s\n", plan.Budget, note)
	return nil
}

// notifyChanges runs NOTIFY_CMD once for the lanes whose concurrency this
// pass changed, as the driver's pass does (its result is saved as the
// previous value, so the driver would not see the change again): the
// lanes event, with each lane by its LABEL.
func notifyChanges(ctx context.Context, a *cmdutil.App, s *settings.Settings, ls engine.Lanes, prev map[string]int, plan pacer.Plan) {
	if s.Notify == "" {
		return
	}
	var changed []string
	for i, l := range ls.Lanes {
		if c := plan.Lanes[i].Concurrency; c != prev[l.ID] {
			changed = append(changed, fmt.Sprintf("%s %d→%d", l.Label, prev[l.ID], c))
		}
	}
	if len(changed) == 0 {
		return
	}
	n := &notify.Notifier{Cmd: s.Notify, Env: a.GitEnv(), Log: a.S.Err}
	n.Start(ctx)
	n.Send(scheduler.Event{Kind: scheduler.EvLanes, Time: time.Now(), Detail: "concurrency " + strings.Join(changed, ", ")})
	n.Close()
}
