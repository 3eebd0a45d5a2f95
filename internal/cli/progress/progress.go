package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/runview"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// progress renders scheduler events. It is the only writer of progress
// output and runs in one goroutine: a live table on a terminal, one line
// per event elsewhere, JSON lines with --json.
type View struct {
	s     *cmdutil.Streams
	json  bool
	enc   *json.Encoder
	fold  *runview.Fold // the one fold of the events (runview): the table renders it
	drawn []int         // visible widths of the last table's lines, to redraw in place
	Cwd   string        // log paths are shown relative to it
	start time.Time
	logOf func(id string, role state.Role, attempt int) string
}

func New(s *cmdutil.Streams, jsonOut bool, rm *roadmap.Roadmap, l state.Layout) *View {
	p := &View{s: s, json: jsonOut, fold: runview.New(), start: time.Now()}
	p.logOf = func(id string, role state.Role, attempt int) string { return l.LogPath(id, string(role), attempt) }
	if jsonOut {
		p.enc = json.NewEncoder(s.Out)
	}
	for _, n := range rm.Nodes {
		p.fold.Add(runview.Node{ID: n.ID, State: string(n.State)})
	}
	return p
}

func (p *View) Consume(events <-chan scheduler.Event) {
	var tick <-chan time.Time
	if p.s.ErrIsTTY && !p.json {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	var resized <-chan os.Signal
	if p.s.ErrIsTTY && !p.json {
		resized = p.s.Resize
	}
	for {
		select {
		case <-resized:
			p.draw()
		case e, ok := <-events:
			if !ok {
				if len(p.drawn) > 0 {
					p.draw()
				}
				return
			}
			again := p.retriedWait(e)
			p.apply(e)
			switch {
			case p.json:
				_ = p.enc.Encode(e)
			case p.s.ErrIsTTY:
				p.draw()
			case again:
				// A waiting merge tried again: its wait was told once.
			case e.Kind == scheduler.EvNode:
				// An issue offered (or retitled): the page's and --json's;
				// the lines tell it when it starts.
			default:
				fmt.Fprintln(p.s.Err, formatEvent(e, p.Cwd))
			}
		case <-tick:
			p.draw()
		}
	}
}

// retriedWait is true for the start of a merge that waits and is tried
// again: the view keeps saying what it waits for.
func (p *View) retriedWait(e scheduler.Event) bool {
	n := p.fold.Node(e.Phase)
	return e.Kind == scheduler.EvMerging && n != nil && strings.HasPrefix(n.Note, "waiting:")
}

// apply folds the event into the view's fold (not the run's state, which
// the scheduler owns).
func (p *View) apply(e scheduler.Event) { p.fold.Apply(e) }

func formatEvent(e scheduler.Event, cwd string) string {
	var b strings.Builder
	b.WriteString(e.Time.Format("15:04:05"))
	if e.Phase != "" {
		fmt.Fprintf(&b, " %-12s", e.Phase)
	}
	b.WriteString(" " + e.Kind)
	if e.Role != "" {
		fmt.Fprintf(&b, " %s", e.Role)
	}
	if e.Attempt > 0 {
		fmt.Fprintf(&b, " #%d", e.Attempt)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", e.Reason)
	}
	if !e.Until.IsZero() {
		fmt.Fprintf(&b, " until=%s", e.Until.Format("15:04:05"))
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.LogPath != "" && e.Reason != "" {
		fmt.Fprintf(&b, " (log %s)", cmdutil.RelTo(cwd, e.LogPath))
	}
	return b.String()
}

// draw redraws the live table in place on the terminal, at the width it
// has now.
func (p *View) draw() {
	width := p.width()
	var b strings.Builder
	if len(p.drawn) > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", rowsTaken(p.drawn, width))
	}
	lines := p.tableLines(width, time.Now())
	// A table taller than the terminal could not be moved up over: keep
	// what fits and say how much is left out.
	if p.s.Height != nil {
		if h := p.s.Height(); h > 3 && len(lines) > h-1 {
			more := len(lines) - (h - 2)
			lines = append(lines[:h-2], cut(fmt.Sprintf("  … %d more (claudopilot status lists them all)", more), max(width-1, 10)))
		}
	}
	p.drawn = p.drawn[:0]
	for _, l := range lines {
		b.WriteString(l + "\n")
		p.drawn = append(p.drawn, utf8.RuneCountInString(clean(l)))
	}
	io.WriteString(p.s.Err, b.String())
}

// colorOnly colours a state's text (which may carry padding) when on.
func ColorOnly(on bool, text string) string {
	code := map[string]string{"merged": "32", "running": "36", "failed": "31", "blocked": "33", "stopped": "33"}[strings.TrimSpace(text)]
	if !on || code == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func CountsText(c map[string]int) string {
	var parts []string
	for _, s := range manifest.States {
		if c[string(s)] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[string(s)], s))
		}
	}
	return strings.Join(parts, ", ")
}

func (p *View) JSONSummary(sum scheduler.Summary) {
	_ = p.enc.Encode(struct {
		Kind string `json:"event"`
		scheduler.Summary
	}{"summary", sum})
}

// stoppedIf shows the phases an interrupt left [running] as "stopped": their
// agents were ended, and the next run resumes them.
func StoppedIf(sum scheduler.Summary, interrupted bool) scheduler.Summary {
	if !interrupted || sum.Counts["running"] == 0 {
		return sum
	}
	out := sum
	out.Counts = maps.Clone(sum.Counts)
	out.Counts["stopped"], out.Counts["running"] = sum.Counts["running"], 0
	out.Phases = slices.Clone(sum.Phases)
	for i := range out.Phases {
		if out.Phases[i].State == "running" {
			out.Phases[i].State = "stopped"
		}
	}
	return out
}

// printSummary prints the end-of-run account on stdout: one row per
// phase, its columns aligned, with this run's attempts and time (a resumed
// run says how many there were in all), and for a failed or parked phase
// the log to read, on a line of its own so rows fit 80 columns. Paths are
// relative to cwd.
func PrintSummary(w io.Writer, sum scheduler.Summary, cwd string) {
	fmt.Fprintf(w, "\n%d merged, %d blocked", sum.Counts["merged"], sum.Counts["blocked"])
	for _, s := range []string{"failed", "stopped", "running", "pending"} {
		if sum.Counts[s] > 0 {
			fmt.Fprintf(w, ", %d %s", sum.Counts[s], s)
		}
	}
	if sum.Waiting > 0 {
		fmt.Fprintf(w, ", %d waiting on you", sum.Waiting)
	}
	fmt.Fprintf(w, " in %s", sum.Wall.Round(100*time.Millisecond))
	if sum.Usage.Known() {
		fmt.Fprintf(w, ", cost %s", ledger.CostText(sum.Usage))
	}
	fmt.Fprintln(w)
	rows := make([][4]string, len(sum.Phases))
	var width [4]int
	for i, ph := range sum.Phases {
		att := fmt.Sprintf("attempts %d", ph.Attempts)
		if ph.AttemptsInAll > ph.Attempts {
			att += fmt.Sprintf(" (%d in all)", ph.AttemptsInAll)
		}
		rows[i] = [4]string{ph.ID, ph.State, att, ph.Spent.Round(100 * time.Millisecond).String()}
		for j, c := range rows[i] {
			width[j] = max(width[j], len(c))
		}
	}
	for i, ph := range sum.Phases {
		r := rows[i]
		line := fmt.Sprintf("  %-*s  %-*s  %-*s  %*s", width[0], r[0], width[1], r[1], width[2], r[2], width[3], r[3])
		if ph.Usage.Known() {
			line += "  " + ledger.CostText(ph.Usage)
		}
		if ph.Reason != "" {
			line += "  reason " + string(ph.Reason)
		}
		if ph.WaitsOn != "" {
			line += "  waits on " + ph.WaitsOn
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		if ph.LogPath != "" && ph.Reason != "" {
			fmt.Fprintf(w, "  %-*s  log %s\n", width[0], "", cmdutil.RelTo(cwd, ph.LogPath))
		}
	}
}
