package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// EvConflict: a merge conflict is predicted for a running phase (Detail:
// with which phase, or the base, and on which files), or no longer
// (Detail empty).
const EvConflict = "conflict"

// Conflict is a predicted merge conflict: between the branches of two
// running phases A and B, or (B empty) between A's branch and the base.
type Conflict struct {
	A, B  string
	Paths []string
}

// Predictor dry-runs the merges between running phases' branches, and
// with the base (git merge-tree, nothing written to any checkout). It is
// called from a goroutine of its own, at most once a Poll while agents
// run; independent says which pairs to try (neither depends on the
// other).
type Predictor interface {
	Predict(ctx context.Context, running []string, independent func(a, b string) bool) []Conflict
}

// SetPredictor turns conflict prediction on.
func (s *Scheduler) SetPredictor(p Predictor) { s.pred.p = p }

// predictState is the loop's prediction state. Only the loop touches it.
type predictState struct {
	p       Predictor
	results chan []Conflict
	busy    bool
	last    time.Time
	// with and detail are each phase's predicted conflict: the other
	// phase ("" for the base) and the sentence told.
	with   map[string]string
	detail map[string]string
	// paired keeps, per phase, every phase it was predicted to conflict
	// with until that one lands: a prediction made while the other
	// merges (no longer running) clears with, not this.
	paired map[string]map[string]bool
}

// maybePredict starts a prediction when one is due.
func (s *Scheduler) maybePredict(ctx context.Context) {
	if s.pred.p == nil || s.pred.busy || s.now().Before(s.pred.last.Add(s.cfg.Poll)) {
		return
	}
	var running []string
	for _, p := range s.phases {
		if p.busy && p.state == manifest.Running && !s.mergeHeld(p) {
			running = append(running, p.n.ID)
		}
	}
	if len(running) == 0 {
		return
	}
	s.pred.busy, s.pred.last = true, s.now()
	if s.pred.results == nil {
		s.pred.results = make(chan []Conflict, 1)
	}
	related := s.relatedIDs()
	pr, out := s.pred.p, s.pred.results
	go func() {
		out <- pr.Predict(ctx, running, func(a, b string) bool { return !related(a, b) })
	}()
}

// relatedIDs reports whether one of two phases depends on the other,
// directly or not.
func (s *Scheduler) relatedIDs() func(a, b string) bool {
	memo := map[*roadmap.Node]map[*roadmap.Node]bool{}
	var ancestors func(n *roadmap.Node) map[*roadmap.Node]bool
	ancestors = func(n *roadmap.Node) map[*roadmap.Node]bool {
		if m, ok := memo[n]; ok {
			return m
		}
		m := map[*roadmap.Node]bool{}
		memo[n] = m
		for _, d := range s.rm.Deps(n) {
			m[d] = true
			for a := range ancestors(d) {
				m[a] = true
			}
		}
		return m
	}
	return func(a, b string) bool {
		pa, pb := s.byID[a], s.byID[b]
		if pa == nil || pb == nil {
			return true
		}
		return ancestors(pa.n)[pb.n] || ancestors(pb.n)[pa.n]
	}
}

// onPredicted books a prediction: each phase's conflict is told (event,
// journal) when it appears or changes, and cleared when it is gone.
func (s *Scheduler) onPredicted(cs []Conflict) {
	s.pred.busy = false
	with, detail := map[string]string{}, map[string]string{}
	add := func(id, other, d string) {
		if _, ok := detail[id]; ok && other == "" {
			return // a conflict with a phase says more than one with the base
		}
		with[id], detail[id] = other, d
	}
	for _, c := range cs {
		paths := strings.Join(c.Paths, ", ")
		if c.B == "" {
			add(c.A, "", "predicted conflict with the base on "+paths)
			continue
		}
		s.pair(c.A, c.B)
		s.pair(c.B, c.A)
		add(c.A, c.B, fmt.Sprintf("predicted conflict with %s on %s", c.B, paths))
		add(c.B, c.A, fmt.Sprintf("predicted conflict with %s on %s", c.A, paths))
	}
	if s.pred.detail == nil {
		s.pred.detail, s.pred.with = map[string]string{}, map[string]string{}
	}
	for id, d := range detail {
		if s.pred.detail[id] != d {
			s.record(state.Record{Phase: id, Event: EvConflict, Detail: d})
			s.emit(Event{Kind: EvConflict, Phase: id, Detail: d})
		}
	}
	for id := range s.pred.detail {
		if _, ok := detail[id]; !ok {
			s.record(state.Record{Phase: id, Event: EvConflict})
			s.emit(Event{Kind: EvConflict, Phase: id})
		}
	}
	s.pred.detail, s.pred.with = detail, with
}

// conflictOrder puts, in the merge queue, the first phase (in file order)
// of a predicted pair before the second: the second is the one to
// resolve the conflict, against a base that has the first.
func (s *Scheduler) conflictOrder() {
	for i := 0; i < len(s.mergeQ); i++ {
		p := s.mergeQ[i]
		other := s.byID[s.pred.with[p.n.ID]]
		if other == nil || other.n.Index > p.n.Index {
			continue
		}
		if j := slices.Index(s.mergeQ, other); j > i {
			s.mergeQ = slices.Delete(s.mergeQ, j, j+1)
			s.mergeQ = slices.Insert(s.mergeQ, i, other)
		}
	}
}

// landedPredicted marks every phase predicted to conflict with id, which
// just landed: its next attempt takes the new base first (Job.TakeBase).
// The attempt in flight is left alone: the base is merged between
// attempts, never during one.
func (s *Scheduler) landedPredicted(id string) {
	delete(s.pred.paired, id)
	for other, with := range s.pred.paired {
		if with[id] {
			delete(with, id)
			if p := s.byID[other]; p != nil && p.state != manifest.Merged {
				p.takeBase = true
			}
		}
	}
}

// pair notes that a was predicted to conflict with b.
func (s *Scheduler) pair(a, b string) {
	if s.pred.paired == nil {
		s.pred.paired = map[string]map[string]bool{}
	}
	if s.pred.paired[a] == nil {
		s.pred.paired[a] = map[string]bool{}
	}
	s.pred.paired[a][b] = true
}

// takesBase tells whether p's attempt about to start merges the base in
// first: a phase it was predicted to conflict with has landed, or it is
// predicted to conflict with the base itself. A first attempt starts from
// the base anyway.
func (s *Scheduler) takesBase(p *phase) bool {
	if p.workerRuns+p.superRuns == 0 {
		return false
	}
	if p.takeBase {
		p.takeBase = false
		return true
	}
	id := p.n.ID
	return s.pred.detail[id] != "" && s.pred.with[id] == ""
}
