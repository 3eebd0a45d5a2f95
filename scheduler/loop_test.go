package scheduler

import (
	"context"
	"errors"
	"fmt"
	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/state"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

var diamondText = manifestOf(
	"[pending] **phase-01** — top (deps: none)",
	"[pending] **phase-02** — left (deps: phase-01)",
	"[pending] **phase-03** — right (deps: phase-01)",
	"[pending] **phase-04** — bottom (deps: phase-02, phase-03)",
)

var diamondIDs = []string{"phase-01", "phase-02", "phase-03", "phase-04"}

func allMerged(ids ...string) map[string]manifest.State {
	m := map[string]manifest.State{}
	for _, id := range ids {
		m[id] = manifest.Merged
	}
	return m
}

// 1. Diamond: everything runs once, merges once, merges are serial.
func TestDiamondAllMerged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diamondText, Config{MaxParallel: 2, Gate: "make test"})

	// Make the two middle merges overlap in time if the scheduler let
	// them: phase-02's merge holds until phase-03's worker has finished,
	// so phase-03 sits in the merge queue while phase-02 is merging.
	merge02 := make(chan struct{})
	hold02 := make(chan struct{})
	h.merger.on("phase-02", mstep{Called: merge02, Hold: hold02})
	h.runner.on("phase-03", state.Worker, step{OK: true, Wait: true, Hold: merge02})

	ch := h.start(context.Background())
	h.ev.wait(t, "exit of phase-03", isEv(EvExit, "phase-03"))
	close(hold02)
	sum, _, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, id := range diamondIDs {
		if n := h.runner.callsOf(id); n != 1 {
			t.Errorf("%s ran %d times, want 1", id, n)
		}
		if n := len(h.merger.jobsOf(id)); n != 1 {
			t.Errorf("%s merged %d times, want 1", id, n)
		}
	}
	order := h.merger.landed()
	want := []string{"phase-01", "phase-02", "phase-03", "phase-04"}
	if !slices.Equal(order, want) {
		t.Errorf("merge order = %v, want %v", order, want)
	}
	for _, j := range h.runner.allJobs() {
		if j.Role != state.Worker || j.Attempt != 1 || j.Retry || j.Resume || j.Mode != "" {
			t.Errorf("job %+v: want a plain first worker attempt", j)
		}
		if j.Gate != "make test" {
			t.Errorf("job %s: Gate = %q, want the configured gate", j.ID, j.Gate)
		}
	}
	for _, id := range diamondIDs {
		mj := h.merger.jobsOf(id)[0]
		if wantComplete := id == "phase-04"; mj.Complete != wantComplete {
			t.Errorf("MergeJob %s: Complete = %v, want %v", id, mj.Complete, wantComplete)
		}
		if mj.Tip != "tip-"+id+"-worker-1" {
			t.Errorf("MergeJob %s: Tip = %q", id, mj.Tip)
		}
	}
	h.store.wantStates(t, allMerged(diamondIDs...))
	if sum.Counts[string(manifest.Merged)] != 4 || len(sum.Phases) != 4 {
		t.Errorf("summary = %+v, want 4 merged", sum)
	}
	for _, p := range sum.Phases {
		if p.Attempts != 1 || p.State != string(manifest.Merged) || p.Spent != time.Minute {
			t.Errorf("summary phase %+v", p)
		}
	}
}

// Phase files: the Job carries the doc, owns and the phase's own gate.
func TestJobCarriesPhaseFields(t *testing.T) {
	t.Parallel()
	text := manifestOf(
		"[pending] **a** — the A thing (deps: none) (owns: a/, x.go) (gate: make a)",
		"[pending] **b** — the B thing (deps: none)",
	)
	h := newHarness(t, text, Config{MaxParallel: 2, Gate: "make all"})
	h.rm = parseRoadmap(t, text, "a-thing.md", "DONE_b.md", "EXECUTION-MANIFEST.md")
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	a := h.runner.jobsOf("a", state.Worker)[0]
	if a.Doc != "a-thing.md" || a.Gate != "make a" || !slices.Equal(a.Owns, []string{"a/", "x.go"}) || !strings.HasPrefix(a.Title, "the A thing") {
		t.Errorf("job a = %+v", a)
	}
	b := h.runner.jobsOf("b", state.Worker)[0]
	if b.Doc != "b.md" || b.Gate != "make all" || len(b.Owns) != 0 {
		t.Errorf("job b = %+v", b)
	}
	if mj := h.merger.jobsOf("a")[0]; mj.Gate != "make a" || !slices.Equal(mj.Owns, []string{"a/", "x.go"}) {
		t.Errorf("merge job a = %+v", mj)
	}
}

// 2. MAX_PARALLEL is never exceeded, and is reached.
func TestMaxParallelRespectedAndReached(t *testing.T) {
	t.Parallel()
	var lines []string
	for _, id := range []string{"p1", "p2", "p3", "p4", "p5", "p6"} {
		lines = append(lines, "[pending] **"+id+"** — "+id+" (deps: none)")
	}
	h := newHarness(t, manifestOf(lines...), Config{MaxParallel: 3})
	release := make(chan struct{})
	for i := 1; i <= 6; i++ {
		h.runner.on("p"+string(rune('0'+i)), state.Worker, step{OK: true, Wait: true, Hold: release})
	}
	h.runner.entered = make(chan Job, 16)
	ch := h.start(context.Background())
	for i := 0; i < 3; i++ {
		select {
		case <-h.runner.entered:
		case <-time.After(hangTimeout):
			t.Fatalf("only %d agents started", i)
		}
	}
	// Three are inside Run and hold; nothing else can have started.
	if cur := h.runner.running(); cur != 3 {
		t.Errorf("%d agents running while 3 hold, want 3", cur)
	}
	close(release)
	_, _, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if peak := h.runner.peakSeen(); peak != 3 {
		t.Errorf("peak concurrency = %d, want exactly 3", peak)
	}
	if got := len(h.merger.landed()); got != 6 {
		t.Errorf("%d merged, want 6", got)
	}
}

// MaxParallel below 1 means one.
func TestMaxParallelZeroMeansOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 0})
	h.runner.maxParallel = 1
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if peak := h.runner.peakSeen(); peak != 1 {
		t.Errorf("peak = %d, want 1", peak)
	}
}

// 3. Critical path first, ties in file order.
func TestCriticalPathFirst(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		lines     []string
		first     string
		fileOrder bool
	}{
		{"file order when asked", []string{
			"[pending] **short** — s (deps: none)",
			"[pending] **head** — h (deps: none)",
			"[pending] **mid** — m (deps: head)",
			"[pending] **tail** — t (deps: mid)",
		}, "short", true},
		{"long chain beats file order", []string{
			"[pending] **short** — s (deps: none)",
			"[pending] **head** — h (deps: none)",
			"[pending] **mid** — m (deps: head)",
			"[pending] **tail** — t (deps: mid)",
		}, "head", false},
		{"tie in file order", []string{
			"[pending] **x** — x (deps: none)",
			"[pending] **y** — y (deps: none)",
			"[pending] **x2** — (deps: x)",
			"[pending] **y2** — (deps: y)",
		}, "x", false},
		{"tie in file order, later first written", []string{
			"[pending] **y** — y (deps: none)",
			"[pending] **x** — x (deps: none)",
			"[pending] **x2** — (deps: x)",
			"[pending] **y2** — (deps: y)",
		}, "y", false},
		{"estimates: one long phase beats a chain of short ones", []string{
			"[pending] **big** — (deps: none) (est: 5h)",
			"[pending] **c1** — (deps: none) (est: 10m)",
			"[pending] **c2** — (deps: c1) (est: 10m)",
			"[pending] **c3** — (deps: c2) (est: 10m)",
		}, "big", false},
		{"estimates: a heavy chain beats a light single", []string{
			"[pending] **small** — (deps: none) (est: 20m)",
			"[pending] **c1** — (deps: none) (est: 10m)",
			"[pending] **c2** — (deps: c1) (est: 10m)",
			"[pending] **c3** — (deps: c2) (est: 10m)",
		}, "c1", false},
		{"estimates: a missing estimate counts as the average", []string{
			"[pending] **a** — (deps: none) (est: 30m)",
			"[pending] **b** — (deps: none)",
			"[pending] **b2** — (deps: b) (est: 20m)",
		}, "b", false},
		{"merged deps do not count", []string{
			"[merged] **done** — (deps: none)",
			"[pending] **one** — (deps: none)",
			"[pending] **two** — (deps: done)",
			"[pending] **two2** — (deps: two)",
		}, "two", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf(c.lines...), Config{MaxParallel: 1, FileOrder: c.fileOrder})
			if _, _, err := h.run(context.Background()); err != nil {
				t.Fatalf("Run: %v", err)
			}
			jobs := h.runner.allJobs()
			if len(jobs) == 0 || jobs[0].ID != c.first {
				var ids []string
				for _, j := range jobs {
					ids = append(ids, j.ID)
				}
				t.Errorf("launch order %v, want %s first", ids, c.first)
			}
		})
	}
}

// 4. A failure without supervisor attempts halts: nothing new launches,
// but a running phase finishes and merges.
func TestHaltStopsLaunchesRunningPhaseFinishes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
		"[pending] **d** — d (deps: a)",
	), Config{MaxParallel: 2, MaxSupervisorAttempts: 0})
	releaseB := make(chan struct{})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonExit, Detail: "exit 2", Log: "/logs/a.log"})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: releaseB})
	ch := h.start(context.Background())
	h.ev.wait(t, "halt", isEv(EvHalt, "a"))
	close(releaseB)
	sum, evs, err := h.await(ch)

	he := wantHalt(t, err)
	if he.ID != "a" || he.Reason != state.ReasonExit || he.LogPath != "/logs/a.log" {
		t.Errorf("HaltError = %+v", he)
	}
	if n := h.runner.callsOf("c"); n != 0 {
		t.Errorf("c launched %d times after the halt", n)
	}
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Errorf("%d supervisor runs with MaxSupervisorAttempts 0", n)
	}
	if got := h.merger.landed(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("merged %v, want [b]", got)
	}
	h.store.wantStates(t, map[string]manifest.State{
		"a": manifest.Failed, "b": manifest.Merged, "c": manifest.Pending, "d": manifest.Pending,
	})
	halt := indexOf(evs, isEv(EvHalt, "a"))
	if i := indexOf(evs[halt:], isEv(EvLaunch, "")); i >= 0 {
		t.Errorf("launch after halt: %+v", evs[halt+i])
	}
	if indexOf(evs[halt:], isEv(EvMerged, "b")) < 0 {
		t.Errorf("b did not merge after the halt")
	}
	if indexOf(evs, isEv(EvFailed, "a")) < 0 {
		t.Errorf("no EvFailed for a")
	}
	if p := phaseSummary(t, sum, "a"); p.State != "failed" || p.Reason != state.ReasonExit {
		t.Errorf("summary a = %+v", p)
	}
}

// 5. The supervisor repairs a red gate. A supervisor that fails hands the
// phase back to the worker; the next worker failure gets the next
// supervisor attempt, the last allowed one in best-effort mode.
func TestSupervisorRepairs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		max       int
		superFail int // supervisor attempts that fail before one passes
		modes     []string
	}{
		{max: 2, superFail: 0, modes: []string{"standard"}},
		{max: 1, superFail: 0, modes: []string{"best-effort"}},
		{max: 2, superFail: 1, modes: []string{"standard", "best-effort"}},
		{max: 3, superFail: 2, modes: []string{"standard", "standard", "best-effort"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.modes, ","), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf("[pending] **a** — a (deps: none) (gate: make check)"),
				Config{MaxParallel: 1, MaxSupervisorAttempts: c.max})
			for i := 1; i <= c.superFail+1; i++ {
				h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Detail: "worker red " + strconv.Itoa(i)})
			}
			for i := 0; i < c.superFail; i++ {
				h.runner.on("a", state.Supervisor, step{Reason: state.ReasonGate, Detail: "still red", Log: "/logs/a/s.log"})
			}
			sum, evs, err := h.run(context.Background())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			sup := h.runner.jobsOf("a", state.Supervisor)
			if len(sup) != len(c.modes) {
				t.Fatalf("%d supervisor runs, want %d", len(sup), len(c.modes))
			}
			for i, j := range sup {
				if j.Role != state.Supervisor || j.Attempt != i+1 || j.Mode != c.modes[i] || j.Failure != state.ReasonGate || j.Gate != "make check" {
					t.Errorf("supervisor job %d = %+v, want attempt %d mode %s failure gate", i, j, i+1, c.modes[i])
				}
				// Each supervisor is told about the worker failure that
				// preceded it.
				wantLog := "/logs/a/worker-" + strconv.Itoa(i+1) + ".log"
				if j.FailureLog != wantLog || j.Detail != "worker red "+strconv.Itoa(i+1) {
					t.Errorf("supervisor job %d: FailureLog %q Detail %q, want %q and the worker's detail", i, j.FailureLog, j.Detail, wantLog)
				}
			}
			w := h.runner.jobsOf("a", state.Worker)
			if len(w) != c.superFail+1 {
				t.Errorf("%d worker runs, want %d", len(w), c.superFail+1)
			}
			for i, j := range w {
				if j.Attempt != i+1 || j.Retry || j.Resume {
					t.Errorf("worker job %d = %+v", i, j)
				}
			}
			// Roles alternate: worker, supervisor, worker, ...
			var roles []state.Role
			for _, e := range evs {
				if e.Kind == EvLaunch {
					roles = append(roles, e.Role)
				}
			}
			for i, r := range roles {
				if want := []state.Role{state.Worker, state.Supervisor}[i%2]; r != want {
					t.Errorf("launch roles %v do not alternate worker/supervisor", roles)
					break
				}
			}
			mj := h.merger.jobsOf("a")
			if len(mj) != 1 || mj[0].Tip != "tip-a-supervisor-"+strconv.Itoa(len(c.modes)) {
				t.Errorf("merge jobs %+v, want one with the supervisor's tip", mj)
			}
			h.store.wantStates(t, allMerged("a"))
			if p := phaseSummary(t, sum, "a"); p.Attempts != len(w)+len(sup) || p.Reason != "" {
				t.Errorf("summary a = %+v", p)
			}
		})
	}
}

// A supervisor that fails hands back to the worker, which may then pass.
func TestSupervisorHandsBackToWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2})
	h.runner.on("a", state.Worker, fail(state.ReasonGate), okStep)
	h.runner.on("a", state.Supervisor, fail(state.ReasonNoDone))
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	w := h.runner.jobsOf("a", state.Worker)
	if len(w) != 2 || w[1].Attempt != 2 || w[1].Failure != "" {
		t.Errorf("worker jobs %+v", w)
	}
	if mj := h.merger.jobsOf("a"); len(mj) != 1 || mj[0].Tip != "tip-a-worker-2" {
		t.Errorf("merge jobs %+v", mj)
	}
}

// 6a. Supervisor attempts exhausted in halt mode: the last reason is the
// halt's reason (package main maps exit to 5 and no-done to 6).
func TestSupervisorExhaustedHalts(t *testing.T) {
	t.Parallel()
	for _, last := range []state.Reason{state.ReasonExit, state.ReasonNoDone, state.ReasonScope} {
		t.Run(string(last), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf(
				"[pending] **a** — a (deps: none)",
				"[pending] **b** — b (deps: a)",
			), Config{MaxParallel: 2, MaxSupervisorAttempts: 2})
			h.runner.on("a", state.Worker, fail(state.ReasonGate), fail(state.ReasonTimeout))
			h.runner.on("a", state.Supervisor, fail(state.ReasonExit), step{Reason: last, Detail: "last", Log: "/logs/last"})
			_, evs, err := h.run(context.Background())
			he := wantHalt(t, err)
			if he.ID != "a" || he.Reason != last || he.LogPath != "/logs/last" {
				t.Errorf("HaltError = %+v, want a/%s", he, last)
			}
			sup := h.runner.jobsOf("a", state.Supervisor)
			if len(sup) != 2 {
				t.Fatalf("%d supervisor runs, want 2", len(sup))
			}
			if sup[0].Mode != "standard" || sup[1].Mode != "best-effort" || sup[1].Attempt != 2 || sup[1].Failure != state.ReasonTimeout || sup[0].Failure != state.ReasonGate {
				t.Errorf("supervisor jobs %+v", sup)
			}
			if h.runner.callsOf("b") != 0 || len(h.merger.landed()) != 0 {
				t.Errorf("b ran or something merged")
			}
			h.store.wantStates(t, map[string]manifest.State{"a": manifest.Failed, "b": manifest.Pending})
			if indexOf(evs, isEv(EvFailed, "a")) < 0 || indexOf(evs, isEv(EvHalt, "a")) < 0 {
				t.Errorf("missing failed/halt events:\n%s", fmtEvents(evs))
			}
		})
	}
}

// 6b. Keep-going parks the phase and its dependents, and finishes the rest.
func TestKeepGoingParks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
		"[pending] **c** — c (deps: b)",
		"[pending] **d** — d (deps: none)",
		"[pending] **e** — e (deps: d)",
		"[pending] **f** — f (deps: c, e)",
	), Config{MaxParallel: 2, MaxSupervisorAttempts: 2, KeepGoing: true})
	h.runner.on("a", state.Worker, fail(state.ReasonGate), fail(state.ReasonGate))
	h.runner.on("a", state.Supervisor, fail(state.ReasonExit), fail(state.ReasonNoDone))
	sum, evs, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	var he *HaltError
	if errors.As(err, &he) {
		t.Errorf("keep-going returned a HaltError")
	}
	h.store.wantStates(t, map[string]manifest.State{
		"a": manifest.Blocked, "b": manifest.Blocked, "c": manifest.Blocked, "f": manifest.Blocked,
		"d": manifest.Merged, "e": manifest.Merged,
	})
	for _, id := range []string{"b", "c", "f"} {
		if n := h.runner.callsOf(id); n != 0 {
			t.Errorf("%s ran %d times", id, n)
		}
		if p := phaseSummary(t, sum, id); p.WaitsOn != "a" || p.State != "blocked" {
			t.Errorf("summary %s = %+v, want blocked waiting on a", id, p)
		}
	}
	if p := phaseSummary(t, sum, "a"); p.State != "blocked" || p.Reason != state.ReasonNoDone || p.Attempts != 4 || p.WaitsOn != "" {
		t.Errorf("summary a = %+v", p)
	}
	if sum.Counts["blocked"] != 4 || sum.Counts["merged"] != 2 {
		t.Errorf("counts = %v", sum.Counts)
	}
	if indexOf(evs, isEv(EvHalt, "")) >= 0 {
		t.Errorf("keep-going emitted a halt")
	}
	if e := mustFind(t, evs, isEv(EvBlocked, "c")); e.Detail != "waits on a" {
		t.Errorf("blocked event for c = %+v", e)
	}
}

// Keep-going with no supervisor attempts parks at once.
func TestKeepGoingNoSupervisor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 1, KeepGoing: true})
	h.runner.on("a", state.Worker, fail(state.ReasonStuck))
	_, _, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Merged})
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Errorf("%d supervisor runs", n)
	}
}

// 7a. A rate limit pauses launches on the agent command, spends no
// attempt, and lets merges of done phases go on.
func TestCooldownPausesLaunchesNotMerges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, AgentCmd: "claude", SupervisorCmd: "other"})
	releaseB := make(chan struct{})
	h.runner.on("a", state.Worker, step{Cooldown: time.Hour, Detail: "rate limited"})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: releaseB})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	cool := h.ev.wait(t, "cooldown", isEv(EvCooldown, "a"))
	close(releaseB)
	h.ev.wait(t, "merge of b", isEv(EvMerged, "b"))
	// b merged during the cooldown. The cooldown lasts an hour, so c
	// cannot have started and a cannot have been relaunched; end the run.
	cancel()
	sum, evs, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if n := h.runner.callsOf("c"); n != 0 {
		t.Errorf("c launched during the cooldown")
	}
	if n := h.runner.callsOf("a"); n != 1 {
		t.Errorf("a ran %d times during its cooldown", n)
	}
	if cool.Role != state.Worker || cool.Until.Before(cool.Time.Add(59*time.Minute)) {
		t.Errorf("cooldown event %+v", cool)
	}
	if got := h.merger.landed(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("merged %v, want [b]", got)
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 0 {
		t.Errorf("a's cooldown spent an attempt: %+v", p)
	}
	if indexOf(evs, isEv(EvLaunch, "c")) >= 0 {
		t.Errorf("launch of c in events")
	}
}

// 7b. After the cooldown the same attempt runs again, and other phases
// launch only then.
func TestCooldownRelaunchSameAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2, MaxSupervisorAttempts: 0})
	releaseB := make(chan struct{})
	h.runner.on("a", state.Worker, step{Cooldown: 50 * time.Millisecond})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: releaseB})
	ch := h.start(context.Background())
	cool := h.ev.wait(t, "cooldown", isEv(EvCooldown, "a"))
	close(releaseB)
	sum, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	jobs := h.runner.jobsOf("a", "")
	if len(jobs) != 2 || jobs[0].Attempt != 1 || jobs[1].Attempt != 1 || jobs[1].Role != state.Worker {
		t.Errorf("a's jobs %+v, want worker attempt 1 twice", jobs)
	}
	// Ordering by the scheduler's own clock: launches after the rate
	// limit happen no earlier than its end.
	for _, e := range evs[indexOf(evs, isEv(EvCooldown, "a")):] {
		if e.Kind == EvLaunch && e.Time.Before(cool.Until) {
			t.Errorf("launch of %s at %v, before the cooldown ends at %v", e.Phase, e.Time, cool.Until)
		}
	}
	if indexOf(evs, isEv(EvCooldown, "a")) > indexOf(evs, isEv(EvLaunch, "c")) {
		t.Errorf("c launched before a's cooldown:\n%s", fmtEvents(evs))
	}
	h.store.wantStates(t, allMerged("a", "b", "c"))
	if p := phaseSummary(t, sum, "a"); p.Attempts != 1 {
		t.Errorf("summary a = %+v, want 1 attempt", p)
	}
}

// 7c. A supervisor's rate limit spends none of its attempts.
func TestSupervisorCooldownSpendsNoAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"),
		Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Detail: "red"})
	h.runner.on("a", state.Supervisor, step{Cooldown: 10 * time.Millisecond}, okStep)
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v (a cooldown must not use up the only supervisor attempt)", err)
	}
	sup := h.runner.jobsOf("a", state.Supervisor)
	if len(sup) != 2 {
		t.Fatalf("supervisor jobs %+v, want 2", sup)
	}
	for _, j := range sup {
		if j.Attempt != 1 || j.Failure != state.ReasonGate || j.Detail != "red" || j.Mode != "best-effort" {
			t.Errorf("supervisor job %+v, want attempt 1, failure gate/red, best-effort", j)
		}
	}
	if e := mustFind(t, evs, isEv(EvCooldown, "a")); e.Role != state.Supervisor {
		t.Errorf("cooldown event %+v", e)
	}
}

// 8. Transient errors are retried with backoff, then count as a failure.
func TestTransientRetries(t *testing.T) {
	t.Parallel()
	type tc struct {
		name      string
		transient int  // transient outcomes before the next step
		thenOK    bool // the call after them succeeds
		wantErr   bool
		backoffs  []int
	}
	for _, c := range []tc{
		{name: "recovers", transient: 2, thenOK: true, backoffs: []int{1, 2}},
		{name: "exhausted", transient: 3, wantErr: true, backoffs: []int{1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var backoffs []int
			h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{
				MaxParallel: 1, TransientMaxRetries: 2,
				Backoff: func(n int) time.Duration {
					mu.Lock()
					backoffs = append(backoffs, n)
					mu.Unlock()
					return time.Millisecond
				},
			})
			for i := 0; i < c.transient; i++ {
				h.runner.on("a", state.Worker, step{Transient: true, Reason: state.ReasonExit, Detail: "overloaded"})
			}
			_, evs, err := h.run(context.Background())
			if c.wantErr {
				he := wantHalt(t, err)
				if he.Reason != state.ReasonExit {
					t.Errorf("HaltError %+v", he)
				}
				h.store.wantStates(t, map[string]manifest.State{"a": manifest.Failed})
			} else if err != nil {
				t.Fatalf("Run: %v", err)
			}
			jobs := h.runner.jobsOf("a", "")
			wantRuns := c.transient
			if c.thenOK {
				wantRuns++
			}
			if len(jobs) != wantRuns {
				t.Errorf("%d runs, want %d", len(jobs), wantRuns)
			}
			for _, j := range jobs {
				if j.Attempt != 1 || j.Role != state.Worker {
					t.Errorf("job %+v: a transient retry reuses worker attempt 1", j)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(backoffs, c.backoffs) {
				t.Errorf("Backoff called with %v, want %v", backoffs, c.backoffs)
			}
			if n := len(slices.DeleteFunc(kinds(evs, "a"), func(k string) bool { return k != EvRetry })); n != 2 {
				t.Errorf("%d retry events, want 2", n)
			}
		})
	}
}

// The transient counter starts over for the supervisor after the worker's
// retries ran out.
func TestTransientCounterResetsAfterFailure(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var backoffs []int
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{
		MaxParallel: 1, TransientMaxRetries: 1, MaxSupervisorAttempts: 1,
		Backoff: func(n int) time.Duration {
			mu.Lock()
			backoffs = append(backoffs, n)
			mu.Unlock()
			return time.Millisecond
		},
	})
	tr := step{Transient: true, Reason: state.ReasonExit}
	h.runner.on("a", state.Worker, tr, tr)
	h.runner.on("a", state.Supervisor, tr, okStep)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(backoffs, []int{1, 1}) {
		t.Errorf("Backoff calls %v, want [1 1]", backoffs)
	}
	if sup := h.runner.jobsOf("a", state.Supervisor); len(sup) != 2 || sup[1].Attempt != 1 || sup[1].Failure != state.ReasonExit {
		t.Errorf("supervisor jobs %+v", sup)
	}
}

// 9. A merge conflict goes to the supervisor with the conflicting paths.
func TestMergeConflictGoesToSupervisor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
	), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.merger.on("a", mstep{Reason: state.ReasonConflict, Detail: "both modified: x.go"})
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	sup := h.runner.jobsOf("a", state.Supervisor)
	if len(sup) != 1 {
		t.Fatalf("supervisor jobs %+v, want 1", sup)
	}
	if j := sup[0]; j.Failure != state.ReasonConflict || j.Detail != "both modified: x.go" || j.Attempt != 1 {
		t.Errorf("supervisor job %+v", j)
	}
	mj := h.merger.jobsOf("a")
	if len(mj) != 2 || mj[0].Tip != "tip-a-worker-1" || mj[1].Tip != "tip-a-supervisor-1" {
		t.Errorf("merge jobs %+v", mj)
	}
	if got := h.merger.landed(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("landed %v", got)
	}
	i := indexOf(evs, func(e Event) bool { return e.Kind == EvExit && e.Phase == "a" && e.Reason == state.ReasonConflict })
	if i < 0 || evs[i].Detail != "both modified: x.go" {
		t.Errorf("no conflict exit event:\n%s", fmtEvents(evs))
	}
}

// A merge conflict with no supervisor attempts halts.
func TestMergeConflictHalts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	h.merger.on("a", mstep{Reason: state.ReasonConflict, Detail: "x.go"})
	_, _, err := h.run(context.Background())
	if he := wantHalt(t, err); he.Reason != state.ReasonConflict || he.ID != "a" {
		t.Errorf("HaltError %+v", he)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Failed})
}

// 10. A merge that would overwrite uncommitted files waits and retries.
func TestMergeWaitRetries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1, Poll: time.Millisecond})
	h.merger.on("a", mstep{Wait: []string{"README.md", "go.sum"}}, mstep{Wait: []string{"go.sum"}})
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(h.merger.jobsOf("a")); n != 3 {
		t.Errorf("%d merge calls, want 3", n)
	}
	if n := h.runner.callsOf("a"); n != 1 {
		t.Errorf("the phase ran %d times; a waiting merge must not rerun it", n)
	}
	w := mustFind(t, evs, isEv(EvWait, "a"))
	if !slices.Equal(w.Files, []string{"README.md", "go.sum"}) || !strings.Contains(w.Detail, "README.md") {
		t.Errorf("wait event %+v", w)
	}
	h.store.wantStates(t, allMerged("a"))
}

// A waiting merge does not hold up the merges of other done phases.
func TestMergeWaitDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 2, Poll: time.Hour})
	releaseB := make(chan struct{})
	h.merger.on("a", mstep{Wait: []string{"dirty.txt"}})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: releaseB})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "wait", isEv(EvWait, "a"))
	close(releaseB)
	h.ev.wait(t, "merge of b", isEv(EvMerged, "b"))
	cancel()
	_, _, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if got := h.merger.landed(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("landed %v, want [b]", got)
	}
	if n := len(h.merger.jobsOf("a")); n != 1 {
		t.Errorf("a's merge retried %d times before its poll interval", n-1)
	}
}

// 11. A LOOP-CHECKPOINT stops the run after the phases above it.
func TestCheckpoint(t *testing.T) {
	t.Parallel()
	text := `# Roadmap

**Status:** in-progress

## Phases

1. [pending] **phase-01** — one (deps: none)
2. [pending] **phase-02** — two (deps: phase-01)

<!-- LOOP-CHECKPOINT: review -->

3. [pending] **phase-03** — three (deps: phase-02)
4. [pending] **phase-04** — four (deps: none)
`
	cases := []struct {
		name string
		cfg  Config
	}{
		{"stops", Config{MaxParallel: 2}},
		{"keep-going", Config{MaxParallel: 2, KeepGoing: true}},
		{"ignore-checkpoints", Config{MaxParallel: 2, IgnoreCheckpoints: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, text, c.cfg)
			if len(h.rm.Manifest.Checkpoints) != 1 {
				t.Fatalf("checkpoints %+v", h.rm.Manifest.Checkpoints)
			}
			_, _, err := h.run(context.Background())
			if c.name != "stops" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				h.store.wantStates(t, allMerged("phase-01", "phase-02", "phase-03", "phase-04"))
				return
			}
			wantErrIs(t, err, ErrCheckpoint)
			if !strings.Contains(err.Error(), "line 10") {
				t.Errorf("error %q does not name the marker's line", err)
			}
			h.store.wantStates(t, map[string]manifest.State{
				"phase-01": manifest.Merged, "phase-02": manifest.Merged,
				"phase-03": manifest.Pending, "phase-04": manifest.Pending,
			})
			if h.runner.callsOf("phase-03")+h.runner.callsOf("phase-04") != 0 {
				t.Errorf("a phase below the checkpoint ran")
			}
		})
	}
}

// 12. Nothing can start: a failed phase holds its dependent.
func TestNoProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[failed] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
	), Config{MaxParallel: 2})
	_, evs, err := h.run(context.Background())
	wantErrIs(t, err, ErrNoProgress)
	if !strings.Contains(err.Error(), "a is [failed]") {
		t.Errorf("error %q does not name the failed phase", err)
	}
	if n := len(h.runner.allJobs()); n != 0 {
		t.Errorf("%d launches", n)
	}
	if n := len(h.merger.allJobs()); n != 0 {
		t.Errorf("%d merges", n)
	}
	if got := kinds(evs, ""); !slices.Equal(got, []string{EvStart, EvEnd}) {
		t.Errorf("events %v", got)
	}
}

// Already merged: nothing to do, and that is success.
func TestAllMergedAlready(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[merged] **a** — a (deps: none)",
		"[merged] **b** — b (deps: a)",
	), Config{MaxParallel: 2})
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(h.runner.allJobs()); n != 0 {
		t.Errorf("%d launches", n)
	}
}

// A pending phase whose dep is [blocked]: the run ends parked, not stuck.
func TestBlockedAtStartIsParked(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[blocked] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 2})
	_, _, err := h.run(context.Background())
	wantErrIs(t, err, ErrParked)
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Merged})
}

// A store that cannot be written ends the run with that error.
func TestStoreWriteErrorIsFatal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
	), Config{MaxParallel: 1})
	boom := errors.New("disk full")
	h.store.setErr = func(id string, s manifest.State) error {
		if id == "b" {
			return boom
		}
		return nil
	}
	_, evs, err := h.run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Run error %v, want the store's", err)
	}
	if h.runner.callsOf("b") != 0 {
		t.Errorf("b launched although its state could not be written")
	}
	if evs[len(evs)-1].Kind != EvEnd {
		t.Errorf("last event %+v, want end", evs[len(evs)-1])
	}
}

// A merge's git/I-O error ends the run.
func TestMergeErrorIsFatal(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
	), Config{MaxParallel: 1})
	boom := errors.New("index.lock exists")
	h.merger.on("a", mstep{Err: boom})
	_, _, err := h.run(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "merge a") {
		t.Fatalf("Run error %v", err)
	}
	if h.runner.callsOf("b") != 0 {
		t.Errorf("b launched after a fatal merge error")
	}
}

// 14. Event stream invariants over a run with a repair and a merge wait.
func TestEventStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diamondText, Config{MaxParallel: 2, MaxSupervisorAttempts: 1, Poll: time.Millisecond})
	h.runner.on("phase-02", state.Worker, fail(state.ReasonGate))
	h.merger.on("phase-03", mstep{Wait: []string{"f"}})
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkEventStream(t, evs)
	if n := len(slices.DeleteFunc(kinds(evs, ""), func(k string) bool { return k != EvMerged })); n != 4 {
		t.Errorf("%d merged events, want 4", n)
	}
}

// checkEventStream: start first, end last, every launch ended by an exit
// of the same phase, role and attempt, merges one at a time, and the
// clock never goes back.
func checkEventStream(t *testing.T, evs []Event) {
	t.Helper()
	if len(evs) < 2 || evs[0].Kind != EvStart || evs[len(evs)-1].Kind != EvEnd {
		t.Fatalf("events do not run from start to end:\n%s", fmtEvents(evs))
	}
	type att struct {
		id   string
		role state.Role
		n    int
	}
	open := map[att]int{}
	merging := ""
	for i, e := range evs {
		if i > 0 && e.Time.Before(evs[i-1].Time) {
			t.Errorf("event %d (%s) is earlier than the one before", i, e.Kind)
		}
		if (e.Kind == EvStart) != (i == 0) || (e.Kind == EvEnd) != (i == len(evs)-1) {
			t.Errorf("event %d is %s", i, e.Kind)
		}
		switch e.Kind {
		case EvLaunch:
			open[att{e.Phase, e.Role, e.Attempt}]++
		case EvExit:
			if e.Role == "" { // a merge's failure
				if merging != e.Phase {
					t.Errorf("merge exit for %s while merging %q", e.Phase, merging)
				}
				merging = ""
				continue
			}
			k := att{e.Phase, e.Role, e.Attempt}
			if open[k] == 0 {
				t.Errorf("exit without launch: %+v", e)
			}
			open[k]--
		case EvMerging:
			if merging != "" {
				t.Errorf("merging %s while %s merges", e.Phase, merging)
			}
			merging = e.Phase
		case EvMerged, EvWait:
			if merging != e.Phase {
				t.Errorf("%s for %s while merging %q", e.Kind, e.Phase, merging)
			}
			merging = ""
		}
	}
	for k, n := range open {
		if n != 0 {
			t.Errorf("launch of %v never exited", k)
		}
	}
}

// 15. An interrupt stops launches, waits for every agent, and merges
// nothing new.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2})
	// Both agents finish successfully just as the interrupt lands. Neither
	// may be merged, and c may not start. (Agents that fail because of the
	// interrupt are TestBugInterruptedAgentCountedAsFailure.)
	h.runner.on("a", state.Worker, step{Wait: true, CancelOK: true})
	h.runner.on("b", state.Worker, step{Wait: true, CancelOK: true})
	h.runner.entered = make(chan Job, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	for i := 0; i < 2; i++ {
		select {
		case <-h.runner.entered:
		case <-time.After(hangTimeout):
			t.Fatal("agents did not start")
		}
	}
	cancel()
	sum, evs, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	h.runner.mu.Lock()
	cancelled := h.runner.cancelled
	h.runner.mu.Unlock()
	if cancelled != 2 {
		t.Errorf("%d agents saw the cancel, want 2", cancelled)
	}
	if n := len(h.merger.allJobs()); n != 0 {
		t.Errorf("%d merges after the interrupt", n)
	}
	if h.runner.callsOf("c") != 0 {
		t.Errorf("c launched")
	}
	if e := evs[len(evs)-1]; e.Kind != EvEnd || e.Detail != "interrupted" {
		t.Errorf("last event %+v", e)
	}
	if indexOf(evs, isEv(EvMerging, "")) >= 0 {
		t.Errorf("a merge started after the interrupt")
	}
	// The manifest keeps [running], as a killed driver leaves it, so a
	// restart resumes them.
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Running, "b": manifest.Running, "c": manifest.Pending})
	if sum.Counts["running"] != 2 {
		t.Errorf("counts %v", sum.Counts)
	}
}

// An interrupt during a merge that is past its gate lets the merge finish
// (a ref move is never cut off) and records it.
func TestInterruptLetsMergeFinish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **x** — x (deps: none)",
		"[pending] **b** — b (deps: a)",
	), Config{MaxParallel: 2})
	called := make(chan struct{})
	hold := make(chan struct{})
	h.merger.on("a", mstep{Called: called, Hold: hold})
	// x is still running at the interrupt and finishes then; it keeps the
	// loop from ending on its own, whatever order it sees things in.
	h.runner.on("x", state.Worker, step{Wait: true, CancelOK: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	select {
	case <-called:
	case <-time.After(hangTimeout):
		t.Fatal("merge did not start")
	}
	cancel()
	close(hold)
	sum, _, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if p := phaseSummary(t, sum, "a"); p.State != "merged" {
		t.Errorf("summary a = %+v, want merged", p)
	}
	if h.runner.callsOf("b") != 0 {
		t.Errorf("b launched after the interrupt")
	}
	if got := h.merger.landed(); len(got) != 1 || got[0] != "a" {
		t.Errorf("landed %v, want only a", got)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "x": manifest.Running, "b": manifest.Pending})
}

// An interrupt during a merge gate stops the gate: the merge ends with the
// context's error, which is no failure and no fatal error: the run ends
// interrupted, the phase still [running] for the next run.
func TestInterruptCancelsTheMergeGate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	called := make(chan struct{})
	never := make(chan struct{})
	h.merger.on("a", mstep{Called: called, Gate: never})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	select {
	case <-called:
	case <-time.After(hangTimeout):
		t.Fatal("merge did not start")
	}
	cancel()
	_, evs, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if indexOf(evs, isEv(EvHalt, "")) >= 0 || indexOf(evs, isEv(EvFailed, "")) >= 0 {
		t.Errorf("a cancelled merge gate was handled as a failure:\n%s", fmtEvents(evs))
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Running})
}

// A merge that waits (a base that keeps moving, a lock, the user's
// uncommitted files) is never a failure and never fatal: it is tried again
// until it lands, and its wait is told once, in the events and the journal.
func TestMergeWaitIsRetriedAndToldOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 2, Poll: time.Millisecond})
	moving := mstep{Waiting: "the base keeps moving"}
	h.merger.on("a", moving, moving, moving)
	h.merger.on("b", mstep{Wait: []string{"f.txt"}}, mstep{Wait: []string{"f.txt"}})
	jn := openJournal(t)
	h.jn = jn
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged})
	var waits []Event
	for _, e := range evs {
		if e.Kind == EvWait {
			waits = append(waits, e)
		}
	}
	if len(waits) != 2 {
		t.Fatalf("%d wait events, want one per phase:\n%s", len(waits), fmtEvents(evs))
	}
	for _, e := range waits {
		switch e.Phase {
		case "a":
			if e.Detail != "waiting: the base keeps moving" {
				t.Errorf("a's wait: %q", e.Detail)
			}
		case "b":
			if !strings.Contains(e.Detail, "f.txt") || !strings.Contains(e.Detail, "commit, stash or revert") {
				t.Errorf("b's wait: %q", e.Detail)
			}
		}
	}
	recs, err := state.ReadJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event == "wait" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d wait records in the journal, want 2", n)
	}
	// While it waits, the history says so; once merged, it does not.
	hs, _ := state.History(recs[:slices.IndexFunc(recs, func(r state.Record) bool { return r.Event == "wait" && r.Phase == "b" })+1])
	if h := hs["b"]; h == nil || !slices.Equal(h.WaitingFiles, []string{"f.txt"}) {
		t.Errorf("history of b while waiting: %+v", h)
	}
	if hs, _ := state.History(recs); hs["b"].Waiting != "" {
		t.Errorf("history of b after the merge still waiting: %q", hs["b"].Waiting)
	}
}

// A waiting merge whose watch sees a change is tried again at once, not at
// the next poll (an hour here).
func TestMergeWaitWokenByItsWatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1, Poll: time.Hour})
	changed := make(chan struct{})
	close(changed) // the user cleaned the file at once
	h.merger.on("a", mstep{Wait: []string{"f.txt"}, Changed: changed})
	ch := h.start(context.Background())
	if _, _, err := h.await(ch); err != nil {
		t.Fatalf("Run: %v", err)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged})
}

// The started callback's process group id is journaled.
func TestPGIDJournaled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	jn := openJournal(t)
	h.jn = jn
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	recs, err := state.ReadJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, r := range recs {
		evs = append(evs, r.Event)
		if r.Event == "pgid" && (r.PGID <= 1000 || r.Phase != "a" || r.Role != state.Worker || r.Attempt != 1) {
			t.Errorf("pgid record %+v", r)
		}
	}
	if !slices.Equal(evs, []string{"run", "launch", "pgid", "usage", "done", "merged"}) {
		t.Errorf("journal events %v", evs)
	}
}

// A journal that cannot be written costs crash recovery, not the run: each
// failed append is a warning.
func TestJournalWriteFailureWarns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	jn := openJournal(t)
	jn.Close() // appends fail from now on; the file still reads
	h.jn = jn
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	w := mustFind(t, evs, isEv(EvWarn, "a"))
	if !strings.HasPrefix(w.Detail, "journal: ") {
		t.Errorf("warning %q", w.Detail)
	}
	h.store.wantStates(t, allMerged("a"))
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	rm := parseRoadmap(t, manifestOf("[pending] **a** — a (deps: none)"))
	s := New(Config{}, rm, newMemStore(""), newRunner(0), nil, nil, nil)
	if s.cfg.MaxParallel != 1 || s.cfg.Poll != 5*time.Second {
		t.Errorf("cfg %+v", s.cfg)
	}
	if got := s.cfg.Backoff(3); got != 0 {
		t.Errorf("Backoff(3) = %v without one given, want 0 (the rule is proc.Backoff's, which engine passes)", got)
	}
	if !reflect.DeepEqual(s.byID["a"], s.phases[0]) {
		t.Errorf("byID and phases disagree")
	}
}

// A gate starting (the attempt's, then the merge commit's) is an event,
// between the launch and the attempt's exit, and before the merge lands:
// the progress shows "gate", not an agent that is done.
func TestGateEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	h.runner.onRun = func(j Job) { j.Gating() }
	h.merger.onMerge = func(j MergeJob) { j.Gating() }
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if e.Phase == "a" {
			k := e.Kind
			if e.Kind == EvGate {
				k += "/" + e.Detail + string(e.Role)
			}
			kinds = append(kinds, k)
		}
	}
	want := []string{EvLaunch, EvGate + "/worker", EvExit, EvMerging, EvGate + "/merge", EvMerged}
	if !slices.Equal(kinds, want) {
		t.Errorf("events of a: %v, want %v", kinds, want)
	}
}

// A worker's exit code reports as Claudopilot's contract has it: 2 a
// checkpoint, 4 a dependency error. No supervisor is sent: the run halts
// with the report's reason (exit 2, exit 4), or under KEEP_GOING the
// phase is parked with its dependents and the rest goes on.
func TestWorkerReports(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		exit int
		want state.Reason
		keep bool
	}{{2, state.ReasonCheckpoint, false}, {4, state.ReasonDeps, false}, {4, state.ReasonDeps, true}, {2, state.ReasonCheckpoint, true}} {
		t.Run(fmt.Sprintf("exit%d/keep-going=%v", c.exit, c.keep), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf(
				"[pending] **a** — a (deps: none)",
				"[pending] **b** — b (deps: a)",
				"[pending] **c** — c (deps: none)",
			), Config{MaxParallel: 1, MaxSupervisorAttempts: 2, KeepGoing: c.keep})
			h.runner.on("a", state.Worker, step{Reason: state.ReasonExit, Exit: c.exit, Detail: fmt.Sprintf("worker exited %d", c.exit)})
			_, _, err := h.run(context.Background())
			if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
				t.Errorf("%d supervisors sent, want none", n)
			}
			if c.keep {
				wantErrIs(t, err, ErrParked)
				h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked, "c": manifest.Merged})
				return
			}
			if he := wantHalt(t, err); he.ID != "a" || he.Reason != c.want {
				t.Errorf("HaltError = %+v, want a/%s", he, c.want)
			}
			h.store.wantStates(t, map[string]manifest.State{"a": manifest.Failed, "b": manifest.Pending})
		})
	}
}

// A phase that never produced its DONE_ doc, whose repairs could not make
// it, halts as Claudopilot's exit 6 whatever the last repair's own exit
// (HaltError.NoDone); one whose gate went red past the done check does
// not.
func TestHaltWithoutDoneDoc(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		workers []step
		want    bool
	}{
		{"no-done", []step{fail(state.ReasonNoDone), fail(state.ReasonNoDone)}, true},
		{"gave-up-exit-5", []step{{Reason: state.ReasonExit, Exit: 5}, {Reason: state.ReasonExit, Exit: 6}}, true},
		{"red-gate-after", []step{fail(state.ReasonNoDone), fail(state.ReasonGate)}, false},
		{"crash", []step{fail(state.ReasonExit), fail(state.ReasonExit)}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf("[pending] **a** — a"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2})
			h.runner.on("a", state.Worker, c.workers...)
			h.runner.on("a", state.Supervisor, step{Reason: state.ReasonExit, Exit: 3}, step{Reason: state.ReasonExit, Exit: 3})
			_, _, err := h.run(context.Background())
			if he := wantHalt(t, err); he.NoDone != c.want {
				t.Errorf("HaltError = %+v, want NoDone %v", he, c.want)
			}
		})
	}
}

// A gate's start is journaled too: a timeline drawn from the journal (a
// finished run's) marks the attempt's gate and the merge's.
func TestGateJournaled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	h.jn = openJournal(t)
	h.runner.onRun = func(j Job) { j.Gating() }
	h.merger.onMerge = func(j MergeJob) { j.Gating() }
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs, err := state.ReadJournal(h.jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	for _, r := range recs {
		if r.Event != "pgid" && r.Event != "usage" {
			evs = append(evs, r.Event+"/"+r.Detail+string(r.Role))
		}
	}
	if want := []string{"run/", "launch/worker", "gate/worker", "done/worker", "gate/merge", "merged/"}; !slices.Equal(evs, want) {
		t.Errorf("journal %v, want %v", evs, want)
	}
}

// A stuck agent is poked first, as Claudopilot's poke did: stopped and
// relaunched at once in its own session, at no attempt; only after
// STUCK_POKES pokes in a row is stuck its attempt's failure (the
// supervisor's turn). A transient error resumes the session too.
func TestStuckIsPoked(t *testing.T) {
	t.Parallel()
	stuck := func(sess string) step {
		return step{Reason: state.ReasonStuck, Detail: "no output for 10m0s", Usage: ledger.Usage{SessionID: sess}}
	}
	for _, c := range []struct {
		name   string
		steps  []step
		super  int
		resume []string // the sessions the worker's runs resumed
	}{
		{"recovers", []step{stuck("s1"), stuck("s2"), okStep}, 0, []string{"", "s1", "s2"}},
		{"exhausted", []step{stuck("s1"), stuck("s2"), stuck("s3")}, 1, []string{"", "s1", "s2"}},
		{"transient", []step{{Transient: true, Reason: state.ReasonExit, Usage: ledger.Usage{SessionID: "t1"}}, okStep}, 0, []string{"", "t1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf("[pending] **a** — a"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, StuckPokes: 2, TransientMaxRetries: 2, Backoff: func(int) time.Duration { return time.Millisecond }})
			h.runner.on("a", state.Worker, c.steps...)
			h.run(context.Background())
			var got []string
			for _, j := range h.runner.jobsOf("a", state.Worker) {
				if j.Attempt != 1 {
					t.Errorf("job %+v: a poke spends no attempt", j)
				}
				got = append(got, j.Session)
			}
			if len(got) > len(c.resume) {
				got = got[:len(c.resume)]
			}
			if !slices.Equal(got, c.resume) {
				t.Errorf("sessions resumed %q, want %q", got, c.resume)
			}
			if n := len(h.runner.jobsOf("a", state.Supervisor)); n != c.super {
				t.Errorf("%d supervisors, want %d", n, c.super)
			}
		})
	}
}
