package scheduler

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// SetEdits gives the loop the manifest's content each time a human (or the
// driver itself) changes it; see roadmap.Watch. Call before Run.
func (s *Scheduler) SetEdits(ch <-chan []byte) { s.edits = ch }

// onEdit applies a manifest edit made while the run goes on. An invalid
// edit is reported and ignored: the last good graph stays. Otherwise:
//   - a [blocked] or [failed] phase flipped to [pending] is retried, with
//     fresh counters, and so are the phases parked because they waited on
//     it;
//   - new phases are scheduled and changed deps take effect;
//   - a phase the driver is working on keeps the driver's state.
func (s *Scheduler) onEdit(reported []byte) {
	rm, ok := s.readEdit()
	if !ok {
		return
	}
	defer s.flushStates()
	for _, p := range s.phases {
		if rm.Node(p.n.ID) == nil && s.inFlight(p) {
			s.emit(Event{Kind: EvWarn, Phase: p.n.ID, Detail: "manifest edit ignored: it removes " + p.n.ID + ", which is running"})
			return
		}
	}
	if s.out.src != nil {
		// The outside nodes stay in the graph beside the edited phases.
		s.out.base = rm
		c, err := rm.With(s.outsidePhases())
		if err != nil {
			s.emit(Event{Kind: EvWarn, Detail: "manifest edit ignored: " + err.Error()})
			return
		}
		rm = c
	}
	changes, retried := s.adoptEdit(rm)
	changes = append(changes, s.retryEdited(retried)...)
	if s.halt != nil {
		// A retried phase lifts the halt it caused.
		if p := s.byID[s.halt.ID]; p != nil && p.state == manifest.Pending {
			s.halt = nil
		}
	}
	if len(changes) > 0 {
		s.emit(Event{Kind: EvEdit, Detail: strings.Join(changes, "; ")})
	}
}

// readEdit parses the manifest as it is on disk now. Not ok when it is
// empty, unreadable or invalid: an invalid edit is reported (or, during a
// merge, looked at again when the merge ends) and the last good graph stays.
func (s *Scheduler) readEdit() (*roadmap.Roadmap, bool) {
	// Read the file now rather than trust the reported bytes: they may
	// predate a state this loop wrote since, and reading them as a human
	// edit would undo it (a phase just parked would look flipped back).
	src, err := s.store.Source()
	if err != nil || len(src) == 0 {
		return nil, false
	}
	files := s.docFiles()
	opt := roadmap.Options{RequireDocs: true}
	if s.cfg.ExternalDone != nil {
		opt.External = roadmap.IsIssueRef
	}
	rm, err := roadmap.Parse(s.rm.Dir, src, files, opt)
	if err != nil {
		if s.inMerge(rm, err) {
			// The merge is moving the base checkout: the merged phase's
			// doc is half-way through its rename to DONE_. Look again
			// when the merge ends (onMerge).
			s.editLater = true
			return nil, false
		}
		s.emit(Event{Kind: EvWarn, Detail: "manifest edit ignored, keeping the last good one:\n" + err.Error()})
		return nil, false
	}
	return rm, true
}

// adoptEdit makes rm the loop's graph, keeping each known phase's run
// state, and returns what changed and the phases a human flipped from
// [blocked] or [failed] to [pending].
func (s *Scheduler) adoptEdit(rm *roadmap.Roadmap) (changes []string, retried []*phase) {
	old := s.byID
	s.rm = rm
	s.phases = make([]*phase, len(rm.Nodes))
	s.byID = make(map[string]*phase, len(rm.Nodes))
	for i, n := range rm.Nodes {
		p := old[n.ID]
		if p == nil {
			p = &phase{n: n, state: n.State}
			if !n.Outside {
				changes = append(changes, "new phase "+n.ID)
			}
			if n.State == manifest.Running {
				p.next = &Job{Role: state.Worker, Resume: true}
			}
		} else {
			p.n = n
		}
		s.phases[i] = p
		s.byID[n.ID] = p
		if n.Outside || p.state == n.State {
			// An outside node's state is the loop's, not the file's.
			continue
		}
		if s.editRetries(p, n) {
			retried = append(retried, p)
		} else if c := s.editState(p, n); c != "" {
			changes = append(changes, c)
		}
	}
	return changes, retried
}

// editRetries is true when the file flips a parked or failed phase the
// driver does not hold back to [pending]: a human's retry.
func (s *Scheduler) editRetries(p *phase, n *roadmap.Node) bool {
	_, stale := s.unwritten[n.ID]
	if stale || s.inFlight(p) || p.state == manifest.Merged || n.State == manifest.Running {
		return false
	}
	return n.State == manifest.Pending && (p.state == manifest.Blocked || p.state == manifest.Failed)
}

// editState settles a phase whose state in the file differs from the
// loop's, and says what it did ("" for nothing).
func (s *Scheduler) editState(p *phase, n *roadmap.Node) string {
	_, stale := s.unwritten[n.ID]
	if !stale && !s.inFlight(p) && p.state != manifest.Merged && n.State != manifest.Running {
		change := fmt.Sprintf("%s [%s] -> [%s]", n.ID, p.state, n.State)
		p.state = n.State
		return change
	}
	// The driver's state wins while it works on the phase, or when the
	// file could not take its last write yet (what the file shows is
	// older, not a human's choice); a merged phase stays merged, and only
	// the driver starts phases.
	if n.State == manifest.Merged {
		return ""
	}
	if err := s.store.SetState(n.ID, p.state); err != nil {
		s.emit(Event{Kind: EvWarn, Phase: n.ID, Detail: err.Error()})
	} else {
		// Written: the flush after this edit must not write it again
		// over a human's flip made meanwhile.
		delete(s.unwritten, n.ID)
	}
	return fmt.Sprintf("%s stays [%s]", n.ID, p.state)
}

// retryEdited retries the phases a human flipped to [pending], and with
// them the phases parked because they waited on one of them.
func (s *Scheduler) retryEdited(retried []*phase) (changes []string) {
	for i := 0; i < len(retried); i++ {
		p := retried[i]
		s.retry(p)
		changes = append(changes, "retry "+p.n.ID)
		for _, d := range s.rm.Dependents(p.n) {
			q := s.phases[d.Index]
			if q.state == manifest.Blocked && q.waitsOn != "" && !containsPhase(retried, q) {
				if err := s.setState(q, manifest.Pending); err == nil {
					retried = append(retried, q)
				}
			}
		}
	}
	return changes
}

// retry makes a parked or failed phase pending again with fresh counters.
func (s *Scheduler) retry(p *phase) {
	p.state = manifest.Pending
	p.workerRuns, p.superRuns, p.superSpent, p.transient = 0, 0, 0, 0
	p.runsBefore = 0
	p.reason, p.detail, p.waitsOn = "", "", ""
	p.next = nil
	p.retry = true
	s.forgetReview(p)
	s.record(state.Record{Phase: p.n.ID, Event: "retry"})
}

func containsPhase(ps []*phase, p *phase) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// inFlight is true while the driver holds the phase: an attempt, a merge,
// or a relaunch waiting for its slot.
func (s *Scheduler) inFlight(p *phase) bool {
	if p.busy || p.next != nil || s.mergeHeld(p) || s.inReview(p) {
		return true
	}
	for _, q := range s.mergeQ {
		if q == p {
			return true
		}
	}
	return false
}

// inMerge is true when every problem of an edit is at the line of a phase
// being merged: what a doc caught mid-rename looks like ("no doc", or
// "more than one doc").
func (s *Scheduler) inMerge(rm *roadmap.Roadmap, err error) bool {
	var bad *roadmap.InvalidError
	landing := s.spec.landing
	if s.merging != nil {
		landing = append([]*phase{s.merging}, landing...)
	}
	if len(landing) == 0 || rm == nil || !errors.As(err, &bad) {
		return false
	}
	lines := map[int]bool{}
	for _, p := range landing {
		if n := rm.Node(p.n.ID); n != nil {
			lines[n.Line] = true
		}
	}
	for _, p := range bad.Problems {
		if !lines[p.Line] {
			return false
		}
	}
	return true
}

func (s *Scheduler) docFiles() []string {
	ents, err := os.ReadDir(s.rm.Dir)
	if err != nil {
		return nil
	}
	var files []string
	for _, e := range ents {
		if !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	return files
}
