package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// snapshot is what status, explain and logs read: the manifest, the run
// journal and the lock. Reading it changes nothing, so it works while a run
// goes on.
type snapshot struct {
	rm      *roadmap.Roadmap
	layout  state.Layout
	hist    map[string]*state.PhaseHistory
	cool    state.Cooldowns
	rules   *state.Rules // the newest run's, from the journal
	live    bool         // a driver holds the lock
	lock    state.LockInfo
	lockSet bool
	now     time.Time
	cwd     string // paths are shown relative to where the user stands
}

func loadSnapshot(ctx context.Context, a *app, arg string) (*snapshot, error) {
	dir, err := findRoadmapDir(ctx, a, arg)
	if err != nil {
		return nil, err
	}
	rm, err := roadmap.Load(dir, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		return nil, err
	}
	s := &snapshot{rm: rm, now: time.Now(), cwd: a.cwd}
	git, err := worktree.Open(ctx, dir, gitEnv(a))
	if err != nil {
		return nil, err
	}
	s.layout = state.Layout{Top: git.Dir}
	if rel, err := engine.MakeLayout(git, dir, ""); err == nil {
		s.layout = rel
	}
	recs, err := state.ReadJournal(s.layout.JournalPath())
	if err != nil {
		return nil, fmt.Errorf("read the journal: %w", err)
	}
	s.hist, s.cool = state.History(recs)
	s.rules = state.LastRules(recs)
	if common, err := git.CommonDir(ctx); err == nil {
		path := filepath.Join(common, "claudopilot.lock")
		s.lock, s.lockSet = state.ReadLock(path)
		_, s.live = state.LockHeld(path)
	}
	return s, nil
}

// latestLog is the newest log of a phase, or "".
func (s *snapshot) latestLog(id string) string {
	logs := s.logs(id, "")
	if len(logs) == 0 {
		return ""
	}
	return logs[len(logs)-1].path
}

type logFile struct {
	path    string
	role    string
	attempt int
	mod     time.Time
}

// logs lists a phase's logs, oldest first; role "" means every role.
func (s *snapshot) logs(id, role string) []logFile {
	ents, _ := os.ReadDir(s.layout.LogDir(id))
	var out []logFile
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".log") || strings.Contains(name, ".failure.") {
			continue
		}
		base := strings.TrimSuffix(name, ".log")
		i := strings.LastIndexByte(base, '-')
		if i < 0 {
			continue
		}
		var n int
		if _, err := fmt.Sscan(base[i+1:], &n); err != nil {
			continue
		}
		if role != "" && base[:i] != role {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, logFile{path: filepath.Join(s.layout.LogDir(id), name), role: base[:i], attempt: n, mod: info.ModTime()})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].mod.Equal(out[j].mod) {
			return out[i].mod.Before(out[j].mod)
		}
		return out[i].attempt < out[j].attempt
	})
	return out
}

type statusPhase struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	Reason   string `json:"reason,omitempty"`
	WaitsOn  string `json:"waits_on,omitempty"`
	Spent    string `json:"spent,omitempty"`
	Log      string `json:"log,omitempty"`
	// Waiting says what the phase's merge waits for and what to do
	// (uncommitted files in the base checkout, a base that keeps moving).
	Waiting      string   `json:"waiting,omitempty"`
	WaitingFiles []string `json:"waiting_files,omitempty"`
	// Conflict is a merge conflict predicted for the running phase
	// (docs/landing.md, conflict prediction).
	Conflict string `json:"predicted_conflict,omitempty"`
	// Usage is what the phase's agents reported spending (unknown
	// figures are left out, never 0).
	Usage  *ledger.Usage                   `json:"usage,omitempty"`
	ByRole map[scheduler.Role]ledger.Usage `json:"usage_by_role,omitempty"`
	// Lane is what the phase's worktree says of the attempt running in
	// it now, or of the last one (LANES only; docs/lanes.md).
	Lane *work.LaneMark `json:"lane,omitempty"`
}

type statusJSON struct {
	Manifest string         `json:"manifest"`
	Live     bool           `json:"live"`
	PID      int            `json:"pid,omitempty"`
	Counts   map[string]int `json:"counts"`
	Phases   []statusPhase  `json:"phases"`
	Running  []string       `json:"running"`
	Eligible []string       `json:"eligible"`
	Cooldown string         `json:"cooldown_until,omitempty"`
	// PendingMove is set while the base checkout has not followed a
	// merge yet (its move is recorded in .claudopilot/state/advance.json).
	PendingMove *pendingMoveJSON `json:"pending_checkout_move,omitempty"`
	// BaseMoved is the last move of the base that the driver did not
	// make (.claudopilot/state/base-moved.json).
	BaseMoved *land.BaseMove `json:"base_moved_outside,omitempty"`
	// Paused: `claudopilot pause` holds new launches; LanesOff are lanes
	// switched off; Lanes is the pacer's last concurrency per lane.
	Paused bool `json:"paused"`
	// Usage adds up every phase's spend from the journal; ByRole splits it.
	Usage    *ledger.Usage                   `json:"usage,omitempty"`
	ByRole   map[scheduler.Role]ledger.Usage `json:"usage_by_role,omitempty"`
	LanesOff []string                        `json:"lanes_off,omitempty"`
	Lanes    map[string]int                  `json:"lanes,omitempty"`
}

type pendingMoveJSON struct {
	Dir  string `json:"dir"`
	From string `json:"from"`
	To   string `json:"to"`
}

func cmdStatus(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "status", "status [ROADMAP_DIR] [--json]", `
Show where a roadmap stands, from the manifest and the run journal
(.claudopilot/state/journal.jsonl): each phase's state, attempts, the reason
a failed or blocked phase gave, time spent and its newest log; what is
running now; what can start next; and, while a run goes on, the driver's
pid. It changes nothing and is safe to run during a run.`,
		"  claudopilot status\n  claudopilot status --json | jq '.phases[] | select(.state==\"blocked\")'")
	jsonOut := fs.Bool("json", false, "print JSON for scripts")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf("status takes at most one ROADMAP_DIR")
	}
	s, err := loadSnapshot(ctx, a, fs.Arg(0))
	if err != nil {
		return err
	}
	st := statusJSON{Manifest: s.rm.ManifestPath, Live: s.live, Counts: map[string]int{}, Running: []string{}, Eligible: []string{}}
	if s.live {
		st.PID = s.lock.PID
	}
	for _, ms := range manifest.States {
		st.Counts[string(ms)] = 0
	}
	for _, n := range s.rm.Nodes {
		h := s.hist[n.ID]
		p := statusPhase{ID: n.ID, Title: roadmap.CleanTitle(n.Title), State: string(n.State), Log: s.rel(s.latestLog(n.ID))}
		if m, ok := work.WorktreeLane(s.layout.Worktree(n.ID)); ok {
			p.Lane = &m
		}
		if h != nil {
			p.Attempts = h.WorkerRuns + h.SuperRuns
			if h.Spent > 0 {
				p.Spent = h.Spent.Round(time.Second).String()
			}
			if h.Usage.Known() {
				u := h.Usage
				p.Usage, p.ByRole = &u, h.ByRole
				st.addUsage(h)
			}
			if n.State == manifest.Failed || n.State == manifest.Blocked {
				p.Reason, p.WaitsOn = string(h.Reason), h.WaitsOn
			}
			if s.live && n.State == manifest.Running {
				p.Waiting, p.WaitingFiles = h.Waiting, h.WaitingFiles
				p.Conflict = h.Conflict
			}
		}
		st.Counts[p.State]++
		st.Phases = append(st.Phases, p)
		if n.State == manifest.Running {
			st.Running = append(st.Running, n.ID)
		}
		if s.rm.Eligible(n, roadmap.FileState) {
			st.Eligible = append(st.Eligible, n.ID)
		}
	}
	if until := s.cool.Latest(scheduler.Worker); until.After(s.now) {
		st.Cooldown = until.Format(time.RFC3339)
	}
	if mv, err := land.Pending(s.layout); err == nil && mv != nil {
		st.PendingMove = &pendingMoveJSON{Dir: mv.Dir, From: mv.Old, To: mv.New}
	}
	if mv, err := land.LastBaseMove(s.layout); err == nil {
		st.BaseMoved = mv
	}
	if sw, err := control.Load(s.layout.StateDir()); err == nil {
		st.Paused = sw.Paused
		for _, id := range slices.Sorted(maps.Keys(sw.LanesOff)) {
			if sw.LanesOff[id] {
				st.LanesOff = append(st.LanesOff, id)
			}
		}
	}
	if m, err := control.LoadLanes(s.layout.StateDir()); err == nil && len(m) > 0 {
		st.Lanes = m
	}
	if *jsonOut {
		enc := json.NewEncoder(a.s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	w := a.s.Out
	fmt.Fprintf(w, "%s: %s\n", s.rel(s.rm.ManifestPath), countsText(st.Counts))
	switch {
	case s.live:
		fmt.Fprintf(w, "A run is going on: driver pid %d on %s, since %s.\n", s.lock.PID, s.lock.Host, s.lock.Time.Local().Format("15:04:05"))
	case s.lockSet:
		fmt.Fprintf(w, "No run is going on (a stale lock of pid %d is left: `claudopilot clean` removes it).\n", s.lock.PID)
	default:
		fmt.Fprintln(w, "No run is going on.")
	}
	fmt.Fprintln(w)
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
		if p.WaitsOn != "" {
			why = strings.TrimSpace(why + "  waits on " + p.WaitsOn)
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
				v = colorOnly(a.s.Color, v)
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
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Running now: %s\n", listOrNone(st.Running))
	fmt.Fprintf(w, "Eligible next: %s\n", listOrNone(st.Eligible))
	if mv := st.PendingMove; mv != nil {
		fmt.Fprintf(w, "Base checkout: %s has not followed the base to %s yet (a move after a merge is pending); the next run, or the next merge of this one, finishes it. Do not commit there until then.\n", s.rel(mv.Dir), short(mv.To))
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
	if st.Cooldown != "" {
		until := s.cool.Latest(scheduler.Worker)
		fmt.Fprintf(w, "Rate-limit cooldown: no new agent before %s (%s left)\n", until.Local().Format("15:04:05"), until.Sub(s.now).Round(time.Second))
	}
	return nil
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// rel shows a path relative to the repository's top level.
func (s *snapshot) rel(p string) string {
	if p == "" {
		return ""
	}
	return relTo(s.cwd, p)
}

// addUsage adds one phase's spend to the totals.
func (st *statusJSON) addUsage(h *state.PhaseHistory) {
	var total ledger.Usage
	if st.Usage != nil {
		total = *st.Usage
	}
	total = ledger.Add(total, h.Usage)
	st.Usage = &total
	if st.ByRole == nil {
		st.ByRole = map[scheduler.Role]ledger.Usage{}
	}
	for r, u := range h.ByRole {
		st.ByRole[r] = ledger.Add(st.ByRole[r], u)
	}
}

// byRoleText renders " (worker $1.20, supervisor $0.30)" in role order.
func byRoleText(m map[scheduler.Role]ledger.Usage) string {
	var parts []string
	for _, r := range []scheduler.Role{scheduler.Worker, scheduler.Supervisor, "reviewer"} {
		if u, ok := m[r]; ok {
			parts = append(parts, string(r)+" "+ledger.CostText(u))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
