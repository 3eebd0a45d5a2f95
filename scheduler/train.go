package scheduler

import (
	"context"
	"slices"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

// trainFrom picks a merge train starting at mergeQ[i]: the due phases from
// there on, in queue order, with the same gate, up to MergeBatch. Nil when
// trains are off (MERGE_BATCH 1, a Merger that cannot batch, the review
// gate on: a review holds for one base only).
func (s *Scheduler) trainFrom(i int, now time.Time) []*phase {
	if s.cfg.MergeBatch < 2 || s.reviewOn() {
		return nil
	}
	if _, ok := s.merger.(BatchMerger); !ok {
		return nil
	}
	first := s.mergeQ[i]
	t := []*phase{first}
	for _, p := range s.mergeQ[i+1:] {
		if len(t) == s.cfg.MergeBatch {
			break
		}
		if p.notBefore.After(now) || s.gateOf(p) != s.gateOf(first) || s.landsLater(p) {
			continue
		}
		t = append(t, p)
	}
	return t
}

// startTrain hands a merge train to the merge owner.
func (s *Scheduler) startTrain(ctx context.Context, t []*phase) {
	s.mergeQ = slices.DeleteFunc(s.mergeQ, func(p *phase) bool { return slices.Contains(t, p) })
	s.merging, s.train = t[0], t
	js := make([]MergeJob, len(t))
	for k, p := range t {
		p.busy = true
		// The k-th merge completes the manifest when everything else is
		// merged or lands before it in the train.
		complete := true
		for _, q := range s.phases {
			if q.state != manifest.Merged && !slices.Contains(t[:k+1], q) {
				complete = false
				break
			}
		}
		j := MergeJob{ID: p.n.ID, Title: p.n.Title, Owns: p.n.Owns, Tip: p.tip, Gate: s.gateOf(p), Complete: complete}
		j.Gating = func() { s.stages <- Event{Time: s.now(), Kind: EvGate, Phase: j.ID, Detail: "merge"} }
		js[k] = j
		s.emit(Event{Kind: EvMerging, Phase: p.n.ID})
	}
	bm := s.merger.(BatchMerger)
	go func() {
		s.batched <- bm.MergeBatch(ctx, js)
	}()
}

// onBatch books a merge train's outcomes, each as a single merge's, in
// the train's order; the phases it did not get to go back to the front
// of the queue, in their order.
func (s *Scheduler) onBatch(ms []MergeOutcome) {
	// One fsync for the whole train's records, before any landing is told.
	s.beginGroup()
	defer s.endGroup()
	t := s.train
	s.train = nil
	var back []*phase
	for _, m := range ms {
		if m.Again {
			back = append(back, s.byID[m.ID])
		}
	}
	// First the ones it did not get to; a merge that waits goes before
	// them (onMerge puts it first).
	s.mergeQ = append(back, s.mergeQ...)
	for _, m := range ms {
		if m.Again {
			continue
		}
		s.merging = s.byID[m.ID]
		s.onMerge(m)
	}
	s.merging = nil
	for _, p := range t {
		p.busy = false
	}
}

// batchedAfterInterrupt books a merge train that ended after an
// interrupt.
func (s *Scheduler) batchedAfterInterrupt(ms []MergeOutcome) {
	s.train = nil
	for _, m := range ms {
		s.mergedAfterInterrupt(m)
	}
}
