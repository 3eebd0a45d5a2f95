package status

import (
	"maps"
	"slices"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// Timeline is what each node did over time, drawn from the journal alone,
// so a finished run's shows as well as a live one's: one row per node,
// its attempts as spans by role and lane, its landings, its waits shaded
// by reason, gates and merges marked.
type Timeline struct {
	Start, End time.Time
	Rows       []TimelineRow
	// Runs are the times a driver started (a "run" record): a later one
	// after a gap is a restart.
	Runs []time.Time
}

// TimelineRow is one node's line.
type TimelineRow struct {
	ID, Title string
	Spans     []Span
	Marks     []Mark
}

// Span kinds and the reasons a node waits.
const (
	SpanAttempt = "attempt" // an agent ran (Role, Attempt, Lane; End: how it ended)
	SpanLanding = "landing" // done: gated and merged into the base, or refused
	SpanWait    = "wait"    // Reason: one of the Wait* below

	WaitSlot       = "slot"        // ready, no free agent slot
	WaitLane       = "lane"        // ready, no free slot on its lane (LANES)
	WaitCooldown   = "cooldown"    // its command (or account) cools down after a rate limit
	WaitDependency = "dependency"  // a dep is not merged yet
	WaitNeedsInput = "needs-input" // its agent asked a question; no answer yet
)

// Span is a stretch of a node's time.
type Span struct {
	Kind     string
	From, To time.Time
	Role     state.Role
	Attempt  int
	Lane     string
	Reason   string // a wait's
	// End says how an attempt or a landing ended: done, merged, a
	// failure's reason, "cut off" by a driver's end, "" still going.
	End string
}

// Mark is a moment: a gate started ("gate", Role worker: the attempt's
// own check; merge: the landing's), "merged", or a parking ("blocked",
// "failed" with its reason in Detail).
type Mark struct {
	Kind   string
	At     time.Time
	Role   state.Role
	Detail string
}

// Deps says what each node waits on: the manifest's deps, and an outside
// node's from its journal ("node" records).
func Deps(rm *roadmap.Roadmap, hist map[string]*state.PhaseHistory) map[string][]string {
	deps := map[string][]string{}
	if rm != nil {
		for _, n := range rm.Nodes {
			for _, d := range rm.Deps(n) {
				deps[n.ID] = append(deps[n.ID], d.ID)
			}
			deps[n.ID] = append(deps[n.ID], n.External...)
		}
	}
	for id, h := range hist {
		if roadmap.IsIssueRef(id) {
			deps[id] = h.Deps
		}
	}
	return deps
}

// TimelineOf is the timeline of the journal's records recs for roadmap
// rm (nil for a queue alone): its phases in manifest order, then the
// issues; a phase [merged] that no record launched merged before the
// journal began.
func TimelineOf(rm *roadmap.Roadmap, recs []state.Record, now time.Time) Timeline {
	hist, _ := state.History(recs)
	launched := map[string]bool{}
	for _, r := range recs {
		if r.Event == "launch" {
			launched[r.Phase] = true
		}
	}
	var order []string
	titles, before := map[string]string{}, map[string]bool{}
	if rm != nil {
		for _, n := range rm.Nodes {
			order = append(order, n.ID)
			titles[n.ID] = roadmap.CleanTitle(n.Title)
			before[n.ID] = n.State == manifest.Merged && !launched[n.ID]
		}
	}
	return BuildTimeline(recs, order, titles, Deps(rm, hist), before, now)
}

// BuildTimeline folds the journal's records into a timeline. order names
// the rows to show first (the manifest's phases, in order); every other
// node the journal names follows, in the order it appears. deps is Deps's;
// titles names rows (may be nil); merged are the nodes merged before the
// journal's first record. now ends what is still open: a live run's now;
// zero for a finished run (its last record).
func BuildTimeline(recs []state.Record, order []string, titles map[string]string, deps map[string][]string, merged map[string]bool, now time.Time) Timeline {
	b := &tlBuilder{deps: deps, rows: map[string]*tlRow{}, merged: maps.Clone(merged)}
	if b.merged == nil {
		b.merged = map[string]bool{}
	}
	for _, id := range order {
		b.row(id)
	}
	for _, r := range recs {
		b.apply(r)
	}
	if b.last.After(now) || now.IsZero() {
		now = b.last
	}
	b.cut(now, "")
	tl := Timeline{Start: b.first, End: now, Runs: b.runs}
	for _, id := range b.order {
		row := b.rows[id]
		if len(row.Spans) == 0 && len(row.Marks) == 0 {
			continue // nothing happened to it in the journal's time
		}
		row.ID, row.Title = id, titles[id]
		if t := b.titles[id]; t != "" && row.Title == "" {
			row.Title = t
		}
		tl.Rows = append(tl.Rows, row.TimelineRow)
	}
	return tl
}

type tlRow struct {
	TimelineRow
	open    *Span // the attempt, landing or wait going on now
	landing bool  // a landing was under way when a driver's run ended
	parked  bool
	started bool // the node had its first launch
}

type tlBuilder struct {
	deps        map[string][]string
	rows        map[string]*tlRow
	order       []string
	merged      map[string]bool
	titles      map[string]string
	first, last time.Time
	runs        []time.Time
	running     bool // a driver's run is under way (a "run" record seen)
}

func (b *tlBuilder) row(id string) *tlRow {
	r := b.rows[id]
	if r == nil {
		r = &tlRow{}
		b.rows[id] = r
		b.order = append(b.order, id)
	}
	return r
}

// open starts a span on row r at t, ending the one going on.
func (b *tlBuilder) open(r *tlRow, s Span, end string) {
	b.close(r, s.From, end)
	r.open = &s
}

// close ends r's open span at t; a cooldown wait that ended before t is
// followed by a wait for a slot.
func (b *tlBuilder) close(r *tlRow, t time.Time, end string) {
	s := r.open
	if s == nil {
		return
	}
	r.open = nil
	if s.Kind == SpanWait && s.Reason == WaitCooldown && !s.To.IsZero() && s.To.Before(t) {
		r.Spans = append(r.Spans, *s)
		s = &Span{Kind: SpanWait, Reason: WaitSlot, From: s.To}
	}
	s.To = t
	if s.Kind != SpanWait {
		s.End = end
	}
	if !s.To.After(s.From) && s.Kind == SpanWait {
		return // a wait of no length is no wait
	}
	r.Spans = append(r.Spans, *s)
}

// cut ends every open span at t: the run ended (end "" for now, still
// going) or a new driver started after a kill ("cut off").
func (b *tlBuilder) cut(t time.Time, end string) {
	for _, id := range b.order {
		r := b.rows[id]
		r.landing = r.open != nil && r.open.Kind == SpanLanding
		b.close(r, t, end)
	}
}

// ready opens the wait of a node that is not running: for a dep not
// merged, else for a slot.
func (b *tlBuilder) ready(id string, r *tlRow, t time.Time) {
	if r.parked || b.merged[id] || !b.running {
		return
	}
	reason := WaitSlot
	for _, d := range b.deps[id] {
		if !b.merged[d] {
			reason = WaitDependency
		}
	}
	b.open(r, Span{Kind: SpanWait, Reason: reason, From: t}, "")
}

func (b *tlBuilder) apply(rec state.Record) {
	if rec.Phase == "" && rec.Event == "run" {
		b.startRun(rec.Time) // what was open ends at the last record before
	}
	if !rec.Time.IsZero() {
		if b.first.IsZero() {
			b.first = rec.Time
		}
		b.last = rec.Time
	}
	if rec.Phase == "" {
		return
	}
	r := b.row(rec.Phase)
	switch rec.Event {
	case "launch":
		b.launch(r, rec)
	case "gate":
		r.Marks = append(r.Marks, Mark{Kind: "gate", At: rec.Time, Role: rec.Role})
	case "done":
		b.open(r, Span{Kind: SpanLanding, From: rec.Time}, "done")
	case "fail", "interrupted":
		b.fail(rec.Phase, r, rec)
	case "cooldown":
		// A usage limit ends the attempt that hit it (the breaker journals
		// no "fail": the attempt is not counted).
		b.open(r, Span{Kind: SpanWait, Reason: WaitCooldown, From: rec.Time, To: rec.Until}, "usage limit")
	case "ask": // night's needs-input: the attempt ended with a question
		b.open(r, Span{Kind: SpanWait, Reason: WaitNeedsInput, From: rec.Time}, WaitNeedsInput)
	case "answer":
		b.ready(rec.Phase, r, rec.Time)
	case "merged":
		b.merge(rec.Phase, r, rec.Time)
	case "blocked", "failed":
		b.park(r, rec)
	case "retry":
		r.parked = false
		b.ready(rec.Phase, r, rec.Time)
	case "node":
		if b.titles == nil {
			b.titles = map[string]string{}
		}
		b.titles[rec.Phase] = rec.Title
		if r.open == nil && !r.started {
			b.ready(rec.Phase, r, rec.Time)
		}
	}
}

// startRun: a driver started. What an earlier one left open was cut off
// by its end; every node not merged nor parked waits again.
func (b *tlBuilder) startRun(t time.Time) {
	if !b.last.IsZero() {
		b.cut(b.last, "cut off")
	}
	b.runs = append(b.runs, t)
	b.running = true
	for _, id := range b.order {
		r := b.rows[id]
		r.parked = false // a restart may retry; a "blocked" record parks it again
		if r.landing {
			// Its work was done: the new driver lands it first.
			b.open(r, Span{Kind: SpanLanding, From: t}, "")
			continue
		}
		b.ready(id, r, t)
	}
}

func (b *tlBuilder) launch(r *tlRow, rec state.Record) {
	if o := r.open; o != nil && o.Reason == WaitCooldown && !o.To.IsZero() && o.To.Before(rec.Time) {
		// The cooldown ended before: it waited for a slot since.
		r.Spans = append(r.Spans, *o)
		r.open = &Span{Kind: SpanWait, Reason: WaitSlot, From: o.To}
	}
	if r.open != nil && r.open.Kind == SpanWait && r.open.Reason == WaitSlot && rec.Lane != "" {
		r.open.Reason = WaitLane
	}
	r.started, r.parked = true, false
	b.open(r, Span{Kind: SpanAttempt, From: rec.Time, Role: rec.Role, Attempt: rec.Attempt, Lane: rec.Lane}, "")
}

// fail ends an attempt (a role's) or a landing (no role) that failed; the
// node waits for its repair's slot unless a parking record follows.
func (b *tlBuilder) fail(id string, r *tlRow, rec state.Record) {
	end := string(rec.Reason)
	if rec.Event == "interrupted" {
		end = "interrupted"
	}
	if end == "" {
		end = "fail"
	}
	b.close(r, rec.Time, end)
	if rec.Event != "interrupted" {
		b.ready(id, r, rec.Time) // for its repair; a parking ends it
	}
}

func (b *tlBuilder) merge(id string, r *tlRow, t time.Time) {
	b.close(r, t, "merged")
	b.merged[id] = true
	r.Marks = append(r.Marks, Mark{Kind: "merged", At: t})
	for _, q := range b.order {
		qr := b.rows[q]
		if qr.open != nil && qr.open.Kind == SpanWait && qr.open.Reason == WaitDependency && slices.Contains(b.deps[q], id) {
			b.ready(q, qr, t)
		}
	}
}

func (b *tlBuilder) park(r *tlRow, rec state.Record) {
	if r.open != nil && r.open.Kind != SpanWait {
		b.close(r, rec.Time, string(rec.Reason))
	} else {
		b.close(r, rec.Time, "")
	}
	r.parked = true
	detail := string(rec.Reason)
	if rec.WaitsOn != "" {
		detail = "behind " + rec.WaitsOn
	}
	r.Marks = append(r.Marks, Mark{Kind: rec.Event, At: rec.Time, Detail: detail})
}
