package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

// noteUnsyncedMerges makes h fail the test when a merge is told while
// one of its records may not be on disk yet. The loop writes records only
// from its own goroutine, and blocks in the emit while the hook runs, so
// what the hook sees is what the loop left when it told the merge.
func noteUnsyncedMerges(t *testing.T, h *harness) {
	var mu sync.Mutex
	h.ev.hook = func(e Event) {
		if e.Kind == EvMerged && h.jn.Unsynced() {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf("%s told merged before its record was fsynced", e.Phase)
		}
	}
}

// One landing, one fsync: the loop's records ride on the fsync of the
// next record that must be on disk (an agent's process group id, a
// merge's "merged" record before it is told). Each phase of a serial run
// costs two at most: its pgid (which carries its launch) and its merge
// (which carries its done). Every record still reached the file, and
// none is left unsynced at the end.
func TestJournalSyncsPerLanding(t *testing.T) {
	t.Parallel()
	const n = 3
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("[pending] **p%d** — p%d (deps: none)", i, i))
	}
	h := newHarness(t, manifestOf(lines...), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.jn = openJournal(t)
	h.build()
	noteUnsyncedMerges(t, h)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.jn.Unsynced() {
		t.Errorf("records left unsynced when the run ended")
	}
	// A merge whose record another phase's pgid fsync carried (written
	// between the record and its fsync) costs none of its own.
	if got := h.jn.Syncs(); got < n || got > 2*n {
		t.Errorf("%d fsyncs for %d landed phases, want %d to %d (a pgid and a merge each, at most)", got, n, n, 2*n)
	}
	recs := readRecords(t, h.jn)
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Event]++
	}
	for _, ev := range []string{"launch", "pgid", "done", "merged"} {
		if counts[ev] != n {
			t.Errorf("%d %q records, want %d: %v", counts[ev], ev, n, counts)
		}
	}
}

// The landings of one publish share one fsync, made before the first of
// them is told: a, b and c land in one car behind z.
func TestJournalSyncsOncePerTrain(t *testing.T) {
	t.Parallel()
	h, sm := specHarness(t, lettersManifest("z", "a", "b", "c"), Config{MaxParallel: 4, MaxSupervisorAttempts: 1, MergeBatch: 4, GateSlots: 1})
	h.jn = openJournal(t)
	h.s = New(h.cfg, h.rm, h.store, h.runner, sm, h.jn, h.ev.ch)
	release := make(chan struct{})
	sm.hold["z"] = release
	sm.gateIn = make(chan []string, 8)
	noteUnsyncedMerges(t, h)
	zGating := make(chan struct{})
	for _, id := range []string{"a", "b", "c"} {
		h.runner.on(id, state.Worker, step{OK: true, Wait: true, Hold: zGating})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ch := h.start(ctx)
	if c := <-sm.gateIn; !slices.Equal(c, []string{"z"}) {
		t.Fatalf("first car %v, want z alone", c)
	}
	close(zGating)
	for _, id := range []string{"a", "b", "c"} {
		h.ev.wait(t, id+" done", func(e Event) bool { return e.Kind == EvExit && e.Phase == id && e.Role == state.Worker })
	}
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	h.store.wantStates(t, allMerged("z", "a", "b", "c"))
	if len(sm.published) != 2 || len(sm.published[1]) != 3 {
		t.Fatalf("published %v, want z, then a train of 3", sm.published)
	}
	// 4 pgids, the landing of z, the train of 3.
	if got := h.jn.Syncs(); got != 6 {
		t.Errorf("%d fsyncs, want 6: 4 pgids, 1 for z, 1 for the train of 3", got)
	}
}

func readRecords(t *testing.T, jn *state.Journal) []state.Record {
	t.Helper()
	recs, err := state.ReadJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A halted run's last records (the phase [failed]) are on disk before its
// end is told.
func TestJournalSyncedBeforeTheEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 0})
	h.jn = openJournal(t)
	h.runner.on("a", state.Worker, fail(state.ReasonExit))
	h.build()
	var unsynced bool
	h.ev.hook = func(e Event) {
		if e.Kind == EvEnd {
			unsynced = h.jn.Unsynced()
		}
	}
	_, _, err := h.run(context.Background())
	wantHalt(t, err)
	if unsynced {
		t.Errorf("the end was told with records not on disk")
	}
}
