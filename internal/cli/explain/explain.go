// Package explain is `claudopilot explain`: why a phase is not running, by
// the scheduler's own rules.
package explain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/snapshot"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
	"github.com/claudopilot/claudopilot/work"
)

// Options are what explain's flags and arguments say.
type Options struct {
	App *cmdutil.App
	Dir string // --roadmap ("": looked up)
	ID  string // a phase, or an issue "#12"
}

// NewCmd is `claudopilot explain`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("explain", "say why a phase is not running", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "explain", "explain ID [--roadmap DIR]", `
Say why a phase is not running: which of its deps are not merged and their
states, a declared scope that overlaps a running phase's, a rate-limit
cooldown with the time left, a LOOP-CHECKPOINT above it, a paused run
(claudopilot pause), or no free slot (MAX_PARALLEL agents already running;
with LANES, which lane is full: its own, its fallback, or every lane).
For a running phase between two attempts, where its next one starts (the
lane it ran on) or which lane holds it. For a failed or blocked phase, the reason and the log to read. An issue of
the queue ('#12', quoted) is explained from the run journal. It changes
nothing.`,
		"  claudopilot explain phase-04")
	dirFlag := fs.String("roadmap", "", "the roadmap folder (default: ./roadmap, else ./.claudopilot/roadmap)")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, cmdutil.UsageErrorf("explain takes one phase ID")
	}
	return &Options{App: a, Dir: *dirFlag, ID: fs.Arg(0)}, nil
}

// Run explains one node of the snapshot, by its state.
func Run(ctx context.Context, o *Options) error {
	a, id := o.App, o.ID
	s, err := snapshot.Load(ctx, a, o.Dir)
	if err != nil {
		return err
	}
	n := s.Roadmap.Node(id)
	if n == nil && roadmap.IsIssueRef(id) {
		if explainAsked(a, s, id) {
			return nil
		}
		return explainOutside(a, s, id)
	}
	if n == nil {
		return fmt.Errorf("explain: no phase %q in %s", id, s.Rel(s.Roadmap.ManifestPath))
	}
	if explainAsked(a, s, id) {
		return nil
	}
	switch n.State {
	case manifest.Merged:
		fmt.Fprintf(a.S.Out, "%s is merged: nothing left to run.\n", id)
	case manifest.Running:
		explainRunning(a, s, id)
	case manifest.Failed, manifest.Blocked:
		explainParked(a, s, n)
	default:
		explainPending(a, s, n)
	}
	return nil
}

// explainAsked tells the question a node's agent asked, while it waits
// on the user's answer; false when none is open.
func explainAsked(a *cmdutil.App, s *snapshot.Snapshot, id string) bool {
	h, _ := s.Node(id)
	if h.Question == "" {
		return false
	}
	fmt.Fprintf(a.S.Out, "%s waits on you: its agent asked\n\n    %s\n\nAnswer with `claudopilot answer %s \"TEXT\"`: it goes on with the answer (no attempt is counted). Unanswered, it is parked with reason needs-input at %s. Nothing that depends on it starts before.\n",
		id, h.Question, id, h.AnswerBy.Local().Format("Jan 2 15:04"))
	return true
}

// explainRunning says what a [running] phase is doing: its agent, or its
// merge; with no run going on, that the next run resumes it.
func explainRunning(a *cmdutil.App, s *snapshot.Snapshot, id string) {
	w := a.S.Out
	h, _ := s.Node(id)
	log := s.Rel(s.Layout.LatestLog(id))
	if s.Live && h.Waiting != "" {
		fmt.Fprintf(w, "%s is done and its merge is %s.\n", id, h.Waiting)
	} else if s.Live && explainBetween(a, s, id) {
		// Between attempts: said by the lane rule.
	} else if s.Live {
		fmt.Fprintf(w, "%s is running (attempt %d); its newest log is %s.\n", id, h.Attempts, orDash(log))
		if m, ok := work.WorktreeLane(s.Layout.Worktree(id)); ok {
			fmt.Fprintf(w, "Its worktree %s runs %s attempt %d on lane %s.\n", s.Rel(s.Layout.Worktree(id)), m.Role, m.Attempt, m.Lane)
		}
	} else {
		fmt.Fprintf(w, "%s is marked [running] but no run is going on: the driver stopped during it. `claudopilot run` resumes it.\n", id)
	}
	if h.Conflict != "" {
		fmt.Fprintf(w, "Merge-tree dry runs found a %s: of the two, the phase earlier in the manifest lands first.\n", h.Conflict)
	}
}

// between are the journal's last events of a [running] phase whose
// attempt ended and whose next one the loop relaunches (a repair, a passing
// error's retry, a poke, a usage limit's wait), with what to call them.
var between = map[string]string{
	"fail":      "it failed; a repair or another attempt follows",
	"transient": "a passing error; it is retried after a backoff",
	"poke":      "poked; it is resumed",
	"cooldown":  "a usage limit; it goes on once its lane may run it",
}

// explainBetween says, for a live run's [running] phase between two
// attempts, where its next one starts, by the loop's lane rule from its
// home lane (the one its last attempt ran on); false when an agent runs,
// its merge is under way, or the journal shows nothing to relaunch.
func explainBetween(a *cmdutil.App, s *snapshot.Snapshot, id string) bool {
	ph := s.Hist[id]
	if ph == nil || ph.Waiting != "" {
		return false
	}
	what, ok := between[ph.Last]
	if _, on := ph.RunningOn(); on || !ok {
		return false
	}
	n, w := s.Roadmap.Node(id), a.S.Out
	fmt.Fprintf(w, "%s is [running] between attempts: its last attempt ended (%s).\n", id, what)
	if s.Paused {
		fmt.Fprintln(w, "The run is paused: its next attempt starts after `claudopilot resume`.")
		return true
	}
	last, ran := ph.LastLane()
	loads := scheduler.FileLaneLoads(snapshot.RunRules(a, s), s.Hist, s.Side, s.Cool, s.Now)
	i, held := scheduler.PickLane(loads, scheduler.HomeLane(n.Lane, last, ran))
	switch {
	case i < 0:
		fmt.Fprintf(w, "Its next attempt waits: %s.\n", noSlot(held))
	case loads[i].ID == "":
		fmt.Fprintln(w, "Its next attempt starts at the next scheduling step.")
	default:
		fmt.Fprintf(w, "Its next attempt starts on lane %s at the next scheduling step.\n", loads[i].ID)
	}
	return true
}

// explainParked names the reason of a [failed] or [blocked] phase, the
// phase to retry (the one whose own failure parked it) and its log.
func explainParked(a *cmdutil.App, s *snapshot.Snapshot, n *roadmap.Node) {
	w, id := a.S.Out, n.ID
	h, _ := s.Node(id)
	log := s.Rel(s.Layout.LatestLog(id))
	fmt.Fprintf(w, "%s is [%s]", id, n.State)
	// The phase to retry is the one whose own failure parked this
	// one; retrying it brings its parked dependents back too.
	culprit := state.Culprit(s.Hist, id)
	with := ""
	if culprit != id {
		log, with = s.Rel(s.Layout.LatestLog(culprit)), fmt.Sprintf(" (%s comes back with it)", id)
		ch, _ := s.Node(culprit)
		fmt.Fprintf(w, ": it waits on %s, which is [%s]", h.WaitsOn, s.StateOf(h.WaitsOn))
		if culprit != h.WaitsOn {
			fmt.Fprintf(w, " and waits on %s, which is [%s]", culprit, s.StateOf(culprit))
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
	if m, ok := work.WorktreeLane(s.Layout.Worktree(id)); ok {
		fmt.Fprintf(w, "Its worktree %s last ran %s attempt %d on lane %s.\n", s.Rel(s.Layout.Worktree(id)), m.Role, m.Attempt, m.Lane)
	}
	retry := fmt.Sprintf("`claudopilot retry %s`%s", culprit, with)
	if s.Roadmap.Node(culprit) == nil && roadmap.IsIssueRef(culprit) {
		retry = snapshot.RetryIssueText(a, s.Layout.Top, culprit) + with
	}
	if log != "" {
		fmt.Fprintf(w, "Read %s, then %s.\n", log, retry)
	} else {
		fmt.Fprintf(w, "Fix the cause, then %s.\n", retry)
	}
}

// explainPending lists every reason a [pending] phase is held back, as the
// scheduler's own rules (scheduler.Holds) decide it, over the same View
// status's eligible list comes from; then the pause switch and the slots.
func explainPending(a *cmdutil.App, s *snapshot.Snapshot, n *roadmap.Node) {
	w, id := a.S.Out, n.ID
	rules := snapshot.RunRules(a, s)
	var why []string
	for _, h := range scheduler.Holds(s.View(rules), n) {
		switch h.Kind {
		case scheduler.HoldDep:
			d := h.Node
			y := fmt.Sprintf("its dep %s is [%s]", d.ID, d.State)
			if d.State == manifest.Blocked || d.State == manifest.Failed {
				y += fmt.Sprintf(" (fix it, then `claudopilot retry %s`)", state.Culprit(s.Hist, d.ID))
			}
			why = append(why, y)
		case scheduler.HoldExternal:
			y := fmt.Sprintf("its dep %s is an issue: it must be done (closed as completed, or its pull request merged), which only a run with --issues (or queue) reads from GitHub", h.ID)
			if o, ok := status.OutsideNode(s.Hist, h.ID, s.Live); ok {
				y += fmt.Sprintf("; the journal has it [%s] (`claudopilot explain '%s'`)", o.State, h.ID)
			}
			why = append(why, y)
		case scheduler.HoldScope:
			o := h.Node
			why = append(why, fmt.Sprintf("its scope (owns: %s) overlaps running %s's (owns: %s)", strings.Join(n.Owns, ", "), o.ID, strings.Join(o.Owns, ", ")))
		case scheduler.HoldCooldown:
			why = append(why, fmt.Sprintf("a usage limit on its account holds new agents until %s (%s left)", h.Until.Local().Format("15:04:05"), h.Until.Sub(s.Now).Round(time.Second)))
		case scheduler.HoldCheckpoint:
			why = append(why, fmt.Sprintf("it is below the LOOP-CHECKPOINT at line %d (remove the marker, or run with KEEP_GOING or IGNORE_LOOP_CHECKPOINTS)", h.Line))
		}
	}
	if len(why) == 0 && s.Paused {
		// The loop's own switch: no launch while it is on.
		why = append(why, "the run is paused: nothing new starts until `claudopilot resume` (running agents finish)")
	}
	if len(why) == 0 && s.Live {
		// The loop's lane rule over the lanes as the run journaled them
		// and what the journal has running on each, from the phase's
		// home as the loop has it: the lane it last ran on in this run.
		last, ran := s.Hist[id].LastLane()
		home := scheduler.HomeLane(n.Lane, last, ran)
		if i, held := scheduler.PickLane(scheduler.FileLaneLoads(rules, s.Hist, s.Side, s.Cool, s.Now), home); i < 0 {
			why = append(why, noSlot(held))
		} else {
			why = append(why, "it is eligible and will start at the next scheduling step")
		}
	}
	if len(why) == 0 {
		fmt.Fprintf(w, "%s is [pending] and eligible: no run is going on. `claudopilot run` starts it.\n", id)
		return
	}
	fmt.Fprintf(w, "%s is [pending] and not running because:\n", id)
	for _, y := range why {
		fmt.Fprintf(w, "  - %s\n", y)
	}
}

// explainOutside explains a node from outside the manifest (an issue,
// "#12") from the journal: the driver keeps no manifest line for it.
func explainOutside(a *cmdutil.App, s *snapshot.Snapshot, id string) error {
	w := a.S.Out
	n, ok := status.OutsideNode(s.Hist, id, s.Live)
	if !ok {
		fmt.Fprintf(w, "%s is an issue, not a phase of %s, and the journal has no record of it: no run has worked on it. A run with --issues (or queue) takes it once it carries the label %q and its deps are done.\n",
			id, s.Rel(s.Roadmap.ManifestPath), snapshot.IssueLabels(a, s.Layout.Top).Ready)
		return nil
	}
	log := s.Rel(s.Layout.LatestLog(id))
	if log == "" {
		log = s.Rel(n.Log)
	}
	switch n.State {
	case manifest.Merged:
		fmt.Fprintf(w, "%s is an issue the driver landed (its pull request merged): nothing left to run.\n", id)
	case manifest.Running:
		switch {
		case s.Live && n.Waiting != "":
			fmt.Fprintf(w, "%s is an issue whose work is done; its landing is %s.\n", id, n.Waiting)
		case s.Live:
			fmt.Fprintf(w, "%s is an issue being worked on (attempt %d); its newest log is %s.\n", id, n.Attempts, orDash(log))
		default:
			fmt.Fprintf(w, "%s is an issue the driver was working on (attempt %d) when it stopped: the next run with --issues (or queue) resumes it.\n", id, n.Attempts)
		}
	case manifest.Failed, manifest.Blocked:
		fmt.Fprintf(w, "%s is an issue, parked [%s] after %s", id, n.State, cmdutil.Plural(n.Attempts, "attempt"))
		if n.WaitsOn != "" {
			fmt.Fprintf(w, ": it waits on %s, which is [%s]", n.WaitsOn, s.StateOf(n.WaitsOn))
		}
		if n.Reason != "" {
			fmt.Fprintf(w, ": reason %s%s", n.Reason, detailSuffix(n.Detail))
		}
		fmt.Fprintln(w, ".")
		if log != "" {
			fmt.Fprintf(w, "Read %s, then %s.\n", log, snapshot.RetryIssueText(a, s.Layout.Top, id))
		} else {
			fmt.Fprintf(w, "Fix the cause, then %s.\n", snapshot.RetryIssueText(a, s.Layout.Top, id))
		}
	case status.Away:
		fmt.Fprintf(w, "%s is an issue that left the driver's hands after %s: %s. Its state is on GitHub now; a run with --issues (or queue) takes it again once it carries the label %q.\n", id, cmdutil.Plural(n.Attempts, "attempt"), orDash(n.Detail), snapshot.IssueLabels(a, s.Layout.Top).Ready)
	default:
		fmt.Fprintf(w, "%s is an issue sent back to the queue: a run with --issues (or queue) takes it again once it carries the label %q.\n", id, snapshot.IssueLabels(a, s.Layout.Top).Ready)
	}
	return nil
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

// noSlot says which lane's cap (or cooldown) holds a phase: without LANES
// the one lane of MAX_PARALLEL slots; with them its own lane (and that
// lane's fallback), or every lane for a phase bound to none.
func noSlot(held []scheduler.LaneLoad) string {
	if len(held) == 1 && held[0].ID == "" {
		return fmt.Sprintf("no free slot: %d of MAX_PARALLEL=%d agents are running", held[0].Running, held[0].Slots)
	}
	var each []string
	for _, l := range held {
		switch {
		case l.Cooling:
			each = append(each, fmt.Sprintf("lane %s cools down after a usage limit", l.ID))
		case l.Slots == 0:
			each = append(each, fmt.Sprintf("lane %s has no slot now (switched off, or paced to 0: `claudopilot lanes`)", l.ID))
		default:
			each = append(each, fmt.Sprintf("lane %s is full (%d of its %d slots taken)", l.ID, l.Running, l.Slots))
		}
	}
	return "no free slot on the lanes it may run on: " + strings.Join(each, "; ")
}
