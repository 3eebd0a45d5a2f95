// Package status is `claudopilot status`: where a roadmap stands.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	snapstatus "github.com/claudopilot/claudopilot/status"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/progress"
	"github.com/claudopilot/claudopilot/internal/cli/snapshot"
	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/promote/record"
	"github.com/claudopilot/claudopilot/state"
)

// Options are what status's flags and arguments say.
type Options struct {
	App  *cmdutil.App
	Dir  string // the roadmap folder as given ("": looked up)
	JSON bool
}

// NewCmd is `claudopilot status`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("status", "show each phase's state, attempts, reason and log, and what runs now", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "status", "status [ROADMAP_DIR] [--json]", `
Show where a roadmap stands, from the manifest and the run journal
(.claudopilot/state/journal.jsonl): each phase's state, attempts, the reason
a failed or blocked phase gave, time spent and its newest log; what is
running now; what can start next (the scheduler's own rule); and, while a
run goes on, the driver's pid. Issues of the queue ("#12") the journal
names are listed after the phases. It changes nothing and is safe to run
during a run. See docs/status.md.`,
		"  claudopilot status\n  claudopilot status --json | jq '.phases[] | select(.state==\"blocked\")'")
	jsonOut := fs.Bool("json", false, "print JSON for scripts")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 1 {
		return nil, cmdutil.UsageErrorf("status takes at most one ROADMAP_DIR")
	}
	return &Options{App: a, Dir: fs.Arg(0), JSON: *jsonOut}, nil
}

// Run reads the snapshot (status.Snapshot) and prints its report, by the
// rules of the last run or those the settings give (snapshot.RunRules).
func Run(ctx context.Context, o *Options) error {
	a := o.App
	s, err := snapshot.Load(ctx, a, o.Dir)
	if err != nil {
		return err
	}
	st := s.Report(snapshot.RunRules(a, s))
	for i := range st.Phases {
		st.Phases[i].Log = s.Rel(st.Phases[i].Log)
	}
	if o.JSON {
		enc := json.NewEncoder(a.S.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	w := a.S.Out
	fmt.Fprintf(w, "%s: %s\n", s.Rel(s.Roadmap.ManifestPath), progress.CountsText(st.Counts))
	switch {
	case s.Live:
		fmt.Fprintf(w, "A run is going on: driver pid %d on %s, since %s.\n", s.Lock.PID, s.Lock.Host, s.Lock.Time.Local().Format("15:04:05"))
	case s.LockSet:
		fmt.Fprintf(w, "No run is going on (a stale lock of pid %d is left: `claudopilot clean` removes it).\n", s.Lock.PID)
	default:
		fmt.Fprintln(w, "No run is going on.")
	}
	fmt.Fprintln(w)
	writeTable(w, a.S.Color, st)
	fmt.Fprintln(w)
	writeFooter(w, s, st)
	return nil
}

// writeTable writes one row per phase and outside node.
func writeTable(w io.Writer, color bool, st snapstatus.Report) {
	// Columns: id, state, attempts, time, why, log; each as wide as its
	// widest cell, so every column starts at the same place on each row.
	cells := make([][]string, len(st.Phases))
	for i, p := range st.Phases {
		att, why := "", ""
		if p.Attempts > 0 {
			att = fmt.Sprintf("attempts %d", p.Attempts)
		}
		cost := ""
		if p.Usage != nil {
			cost = ledger.CostText(*p.Usage)
		}
		if p.Reason != "" {
			why = "reason " + p.Reason
		}
		if p.Reason == string(state.ReasonProtected) {
			why += ": " + p.Detail // which files, and what reads them
		}
		if p.WaitsOn != "" {
			why = strings.TrimSpace(why + "  waits on " + p.WaitsOn)
		}
		if p.Away != "" {
			why = p.Away
		}
		lane := ""
		if p.Lane != nil {
			lane = "lane " + p.Lane.Lane
		}
		cells[i] = []string{p.ID, p.State, att, lane, p.Spent, cost, why, p.Log}
	}
	width := make([]int, 8)
	for _, c := range cells {
		for j, v := range c {
			width[j] = max(width[j], utf8.RuneCountInString(v))
		}
	}
	for i, p := range st.Phases {
		var b strings.Builder
		for j, v := range cells[i] {
			if width[j] == 0 {
				continue
			}
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(v))
			if j == 1 {
				v = progress.ColorOnly(color, v)
			}
			if j == 4 || j == 5 {
				b.WriteString("  " + pad + v) // times and costs line up on the right
			} else {
				b.WriteString("  " + v + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if p.Waiting != "" {
			fmt.Fprintf(w, "  %-*s %s\n", width[0], "", p.Waiting)
		}
		if p.Conflict != "" {
			fmt.Fprintf(w, "  %-*s %s\n", width[0], "", p.Conflict)
		}
		if p.Question != "" {
			fmt.Fprintf(w, "  %-*s asks: %s\n", width[0], "", p.Question)
			if by, err := time.Parse(time.RFC3339, p.AnswerBy); err == nil {
				// With the date: the default deadline is a day on.
				fmt.Fprintf(w, "  %-*s parks unanswered at %s\n", width[0], "", by.Local().Format("Jan 2 15:04"))
			}
		}
	}
}

// writeFooter writes what runs, what is next, and the run's switches,
// cost and cooldown.
func writeFooter(w io.Writer, s *snapshot.Snapshot, st snapstatus.Report) {
	fmt.Fprintf(w, "Running now: %s\n", listOrNone(st.Running))
	if len(st.Stopped) > 0 {
		fmt.Fprintf(w, "Stopped mid-way (the next run resumes them): %s\n", strings.Join(st.Stopped, ", "))
	}
	fmt.Fprintf(w, "Eligible next: %s\n", listOrNone(st.Eligible))
	if len(st.Asking) > 0 {
		fmt.Fprintf(w, "Waiting on you: %d (answer with `claudopilot answer ID \"TEXT\"`): %s\n", len(st.Asking), strings.Join(st.Asking, ", "))
	}
	if mv := st.PendingMove; mv != nil {
		fmt.Fprintf(w, "Base checkout: %s has not followed the base to %s yet (a move after a merge is pending); the next run, or the next merge of this one, finishes it. Do not commit there until then.\n", s.Rel(mv.Dir), cmdutil.Short(mv.To))
	}
	if mv := st.BaseMoved; mv != nil {
		fmt.Fprintf(w, "Base moved outside the driver at %s: %s\n", mv.At.Local().Format("15:04:05"), mv)
	}
	if st.Usage != nil {
		fmt.Fprintf(w, "Cost so far: %s%s\n", ledger.CostText(*st.Usage), byRoleText(st.ByRole))
	}
	if st.Paused {
		fmt.Fprintln(w, "Paused: no new launches until `claudopilot resume` (running agents finish).")
	}
	if len(st.Lanes) > 0 {
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(st.Lanes)) {
			part := fmt.Sprintf("%s %d", id, st.Lanes[id])
			if slices.Contains(st.LanesOff, id) {
				part += " (off)"
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(w, "Lanes (concurrency from the last pacer pass): %s\n", strings.Join(parts, ", "))
	}
	writePromote(w, st.Promote)
	if st.Cooldown != "" {
		until := s.Cool.Latest(state.Worker)
		fmt.Fprintf(w, "Rate-limit cooldown: no new agent before %s (%s left)\n", until.Local().Format("15:04:05"), until.Sub(s.Now).Round(time.Second))
	}
}

// writePromote writes each promote step's newest outcome; a red one says
// it is tried again at the next interval, never repaired by agents.
func writePromote(w io.Writer, steps []record.Result) {
	for _, r := range steps {
		pr := ""
		if r.PR > 0 {
			pr = fmt.Sprintf(" (pull request #%d)", r.PR)
		}
		at := r.At.Local().Format("Jan 2 15:04")
		if r.Kind == record.Red {
			fmt.Fprintf(w, "Promote %s→%s: RED since %s%s: %s; tried again after PROMOTE_EVERY_HOURS (agents do not repair it)\n", r.From, r.To, at, pr, r.Why)
			continue
		}
		fmt.Fprintf(w, "Promote %s→%s: %s %s%s\n", r.From, r.To, r.Kind, at, pr)
	}
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// byRoleText renders " (worker $1.20, supervisor $0.30)" in role order.
func byRoleText(m map[state.Role]ledger.Usage) string {
	var parts []string
	for _, r := range []state.Role{state.Worker, state.Supervisor, state.ReviewerRole} {
		if u, ok := m[r]; ok {
			parts = append(parts, string(r)+" "+ledger.CostText(u))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
