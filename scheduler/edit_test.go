package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// newEditHarness is newHarness over a real roadmap folder holding a doc
// per id, since the loop re-validates edits with RequireDocs against the
// folder's listing. It returns the channel a test sends edits on.
func newEditHarness(t *testing.T, text string, cfg Config, docIDs ...string) (*harness, chan []byte) {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for _, id := range docIDs {
		name := id + ".md"
		if err := os.WriteFile(filepath.Join(dir, name), []byte("# "+id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	h := newHarness(t, text, cfg)
	rm, err := roadmap.Parse(dir, []byte(text), files, roadmap.Options{RequireDocs: true})
	if err != nil {
		t.Fatal(err)
	}
	h.rm = rm
	// The loop re-reads the manifest file when told of an edit.
	h.store.path = rm.ManifestPath
	if err := os.WriteFile(rm.ManifestPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	edits := make(chan []byte)
	h.build().SetEdits(edits)
	return h, edits
}

// humanEdit saves an edited manifest into the store, as an editor would,
// and hands the new bytes to the loop, as the watcher would.
func (h *harness) humanEdit(edits chan<- []byte, old, new string) {
	h.t.Helper()
	h.store.mu.Lock()
	src := string(h.store.src)
	if !strings.Contains(src, old) {
		h.store.mu.Unlock()
		h.t.Fatalf("edit: %q not in the manifest:\n%s", old, src)
	}
	src = strings.Replace(src, old, new, 1)
	h.store.src = []byte(src)
	if err := h.store.mirror(); err != nil {
		h.store.mu.Unlock()
		h.t.Fatal(err)
	}
	h.store.mu.Unlock()
	select {
	case edits <- []byte(src):
	case <-time.After(hangTimeout):
		h.t.Fatal("the loop did not take the edit")
	}
}

// A parked phase flipped back to [pending] mid-run is retried with fresh
// counters, and the phases parked behind it come back too.
func TestEditRetriesParkedPhase(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2, KeepGoing: true}, "a", "b", "c")
	releaseC := make(chan struct{})
	h.runner.on("a", state.Worker, fail(state.ReasonGate))
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: releaseC}) // keeps the run alive
	ch := h.start(context.Background())
	h.ev.wait(t, "b parked", isEv(EvBlocked, "b"))
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked})
	h.humanEdit(edits, "[blocked] **a**", "[pending] **a**")
	h.ev.wait(t, "merge of b", isEv(EvMerged, "b"))
	close(releaseC)
	sum, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	a := h.runner.jobsOf("a", state.Worker)
	if len(a) != 2 || a[0].Retry || !a[1].Retry || a[1].Attempt != 1 {
		t.Errorf("a's jobs %+v, want attempt 1, then attempt 1 again with Retry", a)
	}
	if b := h.runner.jobsOf("b", state.Worker); len(b) != 1 {
		t.Errorf("b's jobs %+v", b)
	}
	h.store.wantStates(t, allMerged("a", "b", "c"))
	if p := phaseSummary(t, sum, "b"); p.WaitsOn != "" {
		t.Errorf("b still waits on %q", p.WaitsOn)
	}
	e := mustFind(t, evs, isEv(EvEdit, ""))
	if !strings.Contains(e.Detail, "retry a") || !strings.Contains(e.Detail, "retry b") {
		t.Errorf("edit event %q", e.Detail)
	}
}

// Flipping the phase that halted the run back to [pending] lifts the halt.
func TestEditLiftsHalt(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **c** — c (deps: none)",
		"[pending] **d** — d (deps: a)",
	), Config{MaxParallel: 2}, "a", "c", "d")
	releaseC := make(chan struct{})
	h.runner.on("a", state.Worker, fail(state.ReasonExit))
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: releaseC})
	ch := h.start(context.Background())
	h.ev.wait(t, "halt", isEv(EvHalt, "a"))
	h.humanEdit(edits, "[failed] **a**", "[pending] **a**")
	h.ev.wait(t, "merge of d", isEv(EvMerged, "d"))
	close(releaseC)
	_, _, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v (the halt should have been lifted)", err)
	}
	h.store.wantStates(t, allMerged("a", "c", "d"))
}

// An invalid edit is reported and ignored.
func TestEditInvalidIgnored(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
	), Config{MaxParallel: 1}, "a")
	release := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: release})
	ch := h.start(context.Background())
	h.ev.wait(t, "launch", isEv(EvLaunch, "a"))
	h.humanEdit(edits, "(deps: none)", "(deps: ghost)")
	w := h.ev.wait(t, "warning", isEv(EvWarn, ""))
	if !strings.Contains(w.Detail, "ghost") {
		t.Errorf("warning %q does not say what is wrong", w.Detail)
	}
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// The driver's state wins for a phase it is running.
func TestEditKeepsDriverStateForRunningPhase(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
	), Config{MaxParallel: 1}, "a")
	release := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: release})
	ch := h.start(context.Background())
	h.ev.wait(t, "launch", isEv(EvLaunch, "a"))
	h.humanEdit(edits, "[running] **a**", "[pending] **a**")
	e := h.ev.wait(t, "edit", isEv(EvEdit, ""))
	if !strings.Contains(e.Detail, "a stays [running]") {
		t.Errorf("edit event %q", e.Detail)
	}
	if st := h.store.state(t, "a"); st != manifest.Running {
		t.Errorf("store has a [%s], want the driver's [running] back", st)
	}
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := h.runner.callsOf("a"); n != 1 {
		t.Errorf("a ran %d times", n)
	}
}

// Removing a LOOP-CHECKPOINT marker mid-run lets the phases below it go.
func TestEditRemovesCheckpoint(t *testing.T) {
	t.Parallel()
	text := "# R\n\n## Phases\n\n1. [pending] **one** — (deps: none)\n\n<!-- LOOP-CHECKPOINT: look -->\n\n2. [pending] **two** — (deps: none)\n"
	h, edits := newEditHarness(t, text, Config{MaxParallel: 2}, "one", "two")
	release := make(chan struct{})
	h.runner.on("one", state.Worker, step{OK: true, Wait: true, Hold: release})
	ch := h.start(context.Background())
	h.ev.wait(t, "launch", isEv(EvLaunch, "one"))
	h.humanEdit(edits, "<!-- LOOP-CHECKPOINT: look -->\n\n", "")
	h.ev.wait(t, "launch of two", isEv(EvLaunch, "two"))
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.store.wantStates(t, allMerged("one", "two"))
}

// A phase added mid-run is scheduled.
func TestEditAddsPhase(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
	), Config{MaxParallel: 2}, "a", "n")
	release := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: release})
	ch := h.start(context.Background())
	h.ev.wait(t, "launch", isEv(EvLaunch, "a"))
	h.humanEdit(edits, "a (deps: none)\n", "a (deps: none)\n2. [pending] **n** — new (deps: none)\n")
	h.ev.wait(t, "merge of n", isEv(EvMerged, "n"))
	close(release)
	sum, _, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(sum.Phases) != 2 {
		t.Errorf("summary phases %+v", sum.Phases)
	}
	h.store.wantStates(t, allMerged("a", "n"))
}

// Phases whose (owns: …) overlap never run at the same time.
func TestOverlappingScopesSerialized(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — (deps: none) (owns: api/)",
		"[pending] **b** — (deps: none) (owns: api/handlers.go)",
		"[pending] **c** — (deps: none) (owns: web/)",
		"[pending] **d** — (deps: none)",
	), Config{MaxParallel: 3})
	release := make(chan struct{})
	for _, id := range []string{"a", "c", "d"} {
		h.runner.on(id, state.Worker, step{OK: true, Wait: true, Hold: release})
	}
	h.runner.entered = make(chan Job, 8)
	ch := h.start(context.Background())
	var first []string
	for i := 0; i < 3; i++ {
		select {
		case j := <-h.runner.entered:
			first = append(first, j.ID)
		case <-time.After(hangTimeout):
			t.Fatalf("only %v started", first)
		}
	}
	slices.Sort(first)
	if !slices.Equal(first, []string{"a", "c", "d"}) {
		t.Errorf("first launches %v, want a, c, d (b overlaps a)", first)
	}
	close(release)
	_, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if indexOf(evs, isEv(EvLaunch, "b")) < indexOf(evs, isEv(EvMerged, "a")) {
		t.Errorf("b started before a merged:\n%s", fmtEvents(evs))
	}
}

// While the manifest does not parse, the driver's writes wait; an edit
// that arrives then shows the states from before them. Those older states
// are not a human's flip: a phase parked meanwhile is not retried.
func TestEditDoesNotUndoDeferredWrites(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2, KeepGoing: true}, "a", "b", "c")
	var broken atomic.Bool
	h.store.setErr = func(id string, s manifest.State) error {
		if broken.Load() {
			return manifest.ErrorList{{Line: 1, Msg: "half-saved by an editor"}}
		}
		return nil
	}
	releaseA, releaseC := make(chan struct{}), make(chan struct{})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Detail: "red", Wait: true, Hold: releaseA})
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: releaseC}) // keeps the run alive
	ch := h.start(context.Background())
	h.ev.wait(t, "a and c running", func(e Event) bool { return e.Kind == EvLaunch && e.Phase == "c" })
	broken.Store(true)
	close(releaseA)
	h.ev.wait(t, "b parked", isEv(EvBlocked, "b"))
	broken.Store(false)
	h.humanEdit(edits, "## Phases", "## Phases\n\nA note.")
	close(releaseC)
	_, evs, err := h.await(ch)
	wantErrIs(t, err, ErrParked)
	for _, e := range evs {
		if e.Kind == EvEdit && strings.Contains(e.Detail, "retry") {
			t.Errorf("edit event %q: a deferred write was read as a human's flip", e.Detail)
		}
	}
	if n := h.runner.callsOf("b"); n != 0 {
		t.Errorf("b ran %d times", n)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked, "c": manifest.Merged})
}

// The loop reads an edit through its Store, never the file behind it: a
// store with no file on disk still takes edits.
func TestEditReadsTheStore(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
	), Config{MaxParallel: 2}, "a", "n")
	h.store.mu.Lock()
	h.store.path = ""
	h.store.mu.Unlock()
	if err := os.Remove(h.rm.ManifestPath); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: release})
	ch := h.start(context.Background())
	h.ev.wait(t, "launch", isEv(EvLaunch, "a"))
	h.humanEdit(edits, "a (deps: none)\n", "a (deps: none)\n2. [pending] **n** — new (deps: none)\n")
	h.ev.wait(t, "merge of n", isEv(EvMerged, "n"))
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.store.wantStates(t, allMerged("a", "n"))
}

// A human edit saved while a merge moves the base checkout forward sees the
// phase's doc in mid-rename (the checkout writes DONE_<doc>, then removes
// <doc>): that is no error of the human's. It is not reported, and it takes
// effect when the merge ends, not at the file's next change.
func TestEditDuringCheckoutAdvanceAppliesAfterMerge(t *testing.T) {
	t.Parallel()
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2, KeepGoing: true}, "b", "c")
	dir := h.rm.Dir
	releaseC := make(chan struct{})
	h.runner.on("b", state.Worker, fail(state.ReasonGate))
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: releaseC})
	h.merger.onMerge = func(j MergeJob) {
		if j.ID != "c" {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "DONE_c.md"), []byte("# c\n"), 0o644); err != nil {
			t.Error(err)
		}
		h.humanEdit(edits, "[blocked] **b**", "[pending] **b**")
		// The loop takes a second report only once it has handled the
		// first: the edit has been seen with both docs in the folder.
		edits <- []byte(h.store.text())
		if err := os.Remove(filepath.Join(dir, "c.md")); err != nil {
			t.Error(err)
		}
	}
	ch := h.start(context.Background())
	h.ev.wait(t, "b parked", isEv(EvBlocked, "b"))
	close(releaseC)
	_, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v (b should have been retried)", err)
	}
	for _, e := range evs {
		if e.Kind == EvWarn && strings.Contains(e.Detail, "manifest edit ignored") {
			t.Errorf("warning during the checkout advance: %s", e.Detail)
		}
	}
	if b := h.runner.jobsOf("b", state.Worker); len(b) != 2 {
		t.Errorf("b's jobs %+v, want a retry after the edit", b)
	}
	h.store.wantStates(t, allMerged("b", "c"))
}
