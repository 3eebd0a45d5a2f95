package scheduler

import "github.com/claudopilot/claudopilot/state"

// The loop writes its journal records as they come (state.Journal.Write):
// readers and a driver restarted after a kill see them at once. It fsyncs
// only where the disk must not lag behind what is told or relied upon:
//
//   - a merge's "merged" record, before the merge is reported; the records
//     of a merge train's landings share one fsync (outcomeGroup);
//   - an agent's process group id, before the runner goes on with the
//     agent (the reaper of a restarted driver relies on it); its fsync
//     also carries the launch record written before it;
//   - what is left, before the run's end is told (emit of EvEnd).
//
// Everything else rides on the next of these. A power loss keeps a prefix
// of the journal, so it leaves the journal of a driver killed a little
// earlier, which restore already handles. The live manifest is written
// with no fsync at all: its [merged], [failed] and [blocked] precede their
// records, and restore puts back one a power cut lost (repairLive).

// outcomeGroup holds the events of outcomes booked together (a merge
// train's): they go out after one fsync covers all their records.
type outcomeGroup struct {
	events []Event
	sync   bool // a held event needs the journal on disk first
}

// durable makes the records written so far reach the disk before the next
// event is told; inside a group, once, when the group ends.
func (s *Scheduler) durable() {
	if s.group != nil {
		s.group.sync = true
		return
	}
	s.syncJournal()
}

// syncJournal fsyncs the journal's unsynced records, if any.
func (s *Scheduler) syncJournal() {
	if s.jn == nil {
		return
	}
	if err := s.jn.Sync(); err != nil {
		s.emit(Event{Kind: EvWarn, Detail: "journal: " + err.Error()})
	}
}

// recordNow writes a record and fsyncs it with everything before it. Any
// goroutine: the journal has its own lock.
func (s *Scheduler) recordNow(r state.Record) {
	if s.jn == nil {
		return
	}
	if err := s.jn.Append(r); err != nil {
		s.emit(Event{Kind: EvWarn, Phase: r.Phase, Detail: "journal: " + err.Error()})
	}
}

// beginGroup starts holding events; endGroup fsyncs once if a held event
// needs it, then tells them in order.
func (s *Scheduler) beginGroup() { s.group = &outcomeGroup{} }

func (s *Scheduler) endGroup() {
	g := s.group
	s.group = nil
	if g.sync {
		s.syncJournal()
	}
	for _, e := range g.events {
		s.emit(e)
	}
}
