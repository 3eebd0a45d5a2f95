package scheduler

// Tests named TestRegression* pin defects found in the scheduler and since
// fixed; each comment says what went wrong.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/manifest"
)

// shortHang bounds waits whose correct outcome is immediate, where the bug
// is a hang: long enough for a machine shared ten ways (the journal
// fsyncs), short enough for a failing test.
const shortHang = 30 * time.Second

// BUG (loop.go, idle): a fatal merge error (MergeOutcome.Err) while another
// done phase waits in the merge queue hangs Run forever. onMerge sets
// s.fatal; the loop then never calls dispatch (it is skipped once fatal is
// set), so the queue never empties, and idle() returns false for a
// non-empty mergeQ before it looks at s.fatal. The loop re-arms a one-hour
// timer forever. The same happens when the store write in dispatch fails
// (fatal) while a phase sits in mergeQ.
// Fix: in idle(), return true when s.fatal != nil once running == 0 and
// merging == nil, before checking len(s.mergeQ) (queued phases stay
// [running] on disk and are resumed by the next driver).
func TestRegressionFatalMergeErrorWithQueuedMergeHangs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 2})
	boom := errors.New("index.lock: file exists")
	aMerging := make(chan struct{})
	h.merger.on("a", mstep{Called: aMerging, Err: boom})
	// b finishes while a's merge is in progress, so it is queued behind it
	// whichever of the two results the loop sees first.
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: aMerging})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	select {
	case r := <-ch:
		h.ev.close()
		if !errors.Is(r.err, boom) {
			t.Errorf("Run error %v, want the merge error", r.err)
		}
	case <-time.After(shortHang):
		cancel()
		r := <-ch
		h.ev.close()
		t.Errorf("Run hung after a fatal merge error with b queued for merging (returned %v only after a cancel)", r.err)
	}
}

// BUG (loop.go, Run): an interrupt that arrives while the loop is not
// waiting in its select is reported as "nothing can progress" (or as a
// checkpoint stop) instead of ErrInterrupted. The loop skips dispatch once
// ctx is done, then idle() is true if nothing is in flight, the loop breaks
// and finish() never looks at ctx. Deterministic with a context cancelled
// before Run (a signal during start-up); it also happens at random when
// SIGINT races the last result or merge report (select picks either ready
// case). package main then exits with the "invalid" code instead of the
// SIGINT one (it only checks sig != nil as a fallback).
// Fix: after the loop (before finish), or at the top of finish, return
// ErrInterrupted (with an EvEnd "interrupted") when ctx.Err() != nil and
// not every phase is merged.
func TestRegressionInterruptBeforeStartReportsNoProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := h.run(ctx)
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("Run with a cancelled context returned %v, want ErrInterrupted", err)
	}
	if h.runner.callsOf("a") != 0 {
		t.Errorf("launched after the cancel")
	}
}

// BUG (loop.go, onOutcome/requeue): a supervisor attempt that hits a rate
// limit (or a transient error) is relaunched with FailureLog pointing at its
// own rate-limited log instead of the log of the failure it was asked to
// repair. onOutcome sets p.logPath = o.LogPath for every outcome before the
// switch, and requeue then copies p.logPath into the new Job, although its
// comment says "the supervisor's failure context is kept from the first
// try". The relaunched supervisor tails the wrong log (work.Runner reads
// j.FailureLog).
// Fix: only update p.logPath on the OK and failure paths (not for
// Cooldown/Transient), or keep the launched Job on the phase and requeue a
// copy of it.
func TestRegressionSupervisorCooldownLosesFailureLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Detail: "red", Log: "/logs/a/worker-1.log"})
	h.runner.on("a", state.Supervisor, step{Cooldown: time.Millisecond, Log: "/logs/a/supervisor-1.log"}, okStep)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sup := h.runner.jobsOf("a", state.Supervisor)
	if len(sup) != 2 {
		t.Fatalf("supervisor jobs %+v", sup)
	}
	if sup[1].FailureLog != "/logs/a/worker-1.log" {
		t.Errorf("relaunched supervisor has FailureLog %q, want the worker's failure log %q", sup[1].FailureLog, "/logs/a/worker-1.log")
	}
}

// BUG (loop.go, cmdOf): cooldowns are keyed "agent:"+AgentCmd and
// "supervisor:"+SupervisorCmd, so a worker and a supervisor on the same
// command never share a rate limit, although Config says "quota is shared
// per command" and Outcome.Cooldown says "no agent on the same command
// starts before it has passed". SUPERVISOR_CMD defaults to AGENT_CMD
// (cmd_run.go), so by default a supervisor starts straight into the
// worker's rate limit (and burns its attempt, or loops on cooldowns).
// Fix: key the cooldown map by the command alone (cmdOf returns the
// command string for either role); restore must then merge the per-role
// deadlines from History with max() instead of overwriting.
func TestRegressionSameCommandCooldownNotShared(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, AgentCmd: "claude", SupervisorCmd: "claude"})
	holdA := make(chan struct{})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Wait: true, Hold: holdA}) // fails once released
	h.runner.on("b", state.Worker, step{Cooldown: time.Second})
	ch := h.start(context.Background())
	cool := h.ev.wait(t, "cooldown", isEv(EvCooldown, "b"))
	close(holdA)
	_, _, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// Ordering by the scheduler's own clock: with a shared quota the
	// supervisor on the same command may not start before the limit ends.
	l := mustFind(t, h.ev.all(), isLaunch("a", state.Supervisor, 1))
	if l.Time.Before(cool.Until) {
		t.Errorf("supervisor on the rate-limited command started %v before the cooldown ended", cool.Until.Sub(l.Time))
	}
}

// BUG (loop.go, idle; restore.go): a driver restarted during a rate limit
// (the journal holds a cooldown still in force) with only [pending] phases
// ends at once with ErrNoProgress ("pending phases wait on phases that are
// not merged"), instead of waiting out the cooldown. restore puts the
// deadline in s.cooldown, dispatch returns early because of it, and idle()
// only counts p.next relaunches as reasons to wait, not a cooldown that
// holds back eligible pending phases. (Typical: Ctrl-C during a long rate
// limit, the user resets [running] to [pending], runs again.)
// Fix: in idle(), return false while the worker command's cooldown is in
// force and some pending phase is eligible; arm() must then also consider
// s.cooldown[cmdOf(Worker)].
func TestRegressionRestoredCooldownEndsRunWithNoProgress(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	h.jn = openJournal(t)
	until := time.Now().Add(300 * time.Millisecond)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "cooldown", Role: state.Worker, Attempt: 1, Until: until},
	)
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Errorf("Run over a journal with a cooldown in force returned %v; want it to wait and merge a", err)
		return
	}
	if l := mustFind(t, evs, isEv(EvLaunch, "a")); l.Time.Before(until) {
		t.Errorf("a launched during the restored cooldown")
	}
}

// BUG (loop.go, arm): the loop busy-waits at 1 ms while a relaunch waits
// for a free slot. arm() considers p.notBefore and the cooldown deadline of
// every phase with p.next set, even when those moments are already past
// and the relaunch is held only by MaxParallel (or by a halt); at is then
// in the past, d = max(negative, 1ms), and the timer fires every
// millisecond until a running agent ends, which can be hours. Expired
// cooldown entries are never deleted, so they keep feeding this. The same
// holds for a mergeQ entry whose Wait poll has passed while another merge
// runs.
// Fix: in arm(), ignore deadlines that are not after now (a relaunch or
// merge that is due but blocked is woken by the result that frees its slot),
// and skip p.next entries entirely while s.halt != nil.
func TestRegressionLoopSpinsWhileRelaunchWaitsForSlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
		"[pending] **c** — c (deps: none)",
	), Config{MaxParallel: 2, TransientMaxRetries: 1, Backoff: func(int) time.Duration { return time.Millisecond }})
	release := make(chan struct{})
	h.runner.on("a", state.Worker, step{Transient: true, Reason: state.ReasonExit})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: release})
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: release})
	var ticks atomic.Int64
	s := h.build()
	s.now = func() time.Time { ticks.Add(1); return time.Now() }
	ch := h.start(context.Background())
	// a's transient retry is due 1ms later, but c takes the free slot:
	// a waits for b or c. Nothing happens until the test releases them.
	h.ev.wait(t, "launch of c", isEv(EvLaunch, "c"))
	h.ev.wait(t, "retry of a", isEv(EvRetry, "a"))
	before := ticks.Load()
	// An observation window, not coordination: a loop that sleeps until
	// something happens reads the clock a bounded number of times in it.
	time.Sleep(300 * time.Millisecond)
	spun := ticks.Load() - before
	close(release)
	if _, _, err := h.await(ch); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if spun > 20 {
		t.Errorf("the loop woke about %d times in 300ms with nothing to do (busy-wait on a past deadline)", spun)
	}
}

// BUG (loop.go, finish): when the final store.Read fails, Run returns the
// error without emitting EvEnd, so an event consumer (progress view,
// --json) never sees the run end. Every other exit path emits EvEnd.
// Fix: emit Event{Kind: EvEnd, Detail: err.Error()} before returning.
func TestRegressionNoEndEventWhenFinalReadFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	h.store.readErr = errors.New("manifest vanished")
	_, evs, err := h.run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "manifest vanished") {
		t.Fatalf("Run error %v", err)
	}
	if last := evs[len(evs)-1]; last.Kind != EvEnd {
		t.Errorf("last event is %q, want %q", last.Kind, EvEnd)
	}
}

// BUG (loop.go, drain): attempts collected after an interrupt get a journal
// record ("interrupted") but no EvExit, so the event stream has launches
// that never end (the --json consumer and the progress view keep those
// agents "running"). Fix: emit Event{Kind: EvExit, Phase, Role, Attempt,
// Reason: o.Reason, Detail: "interrupted"} in drain, as onOutcome does.
// (The loop's select sometimes takes the killed agent's result before
// ctx.Done, see TestRegressionInterruptedAgentCountedAsFailure; then an exit is
// emitted. So this tries a few times.)
func TestRegressionInterruptedAttemptsHaveNoExitEvent(t *testing.T) {
	t.Parallel()
	for trial := 0; trial < 5; trial++ {
		h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
		h.runner.on("a", state.Worker, step{Wait: true})
		ctx, cancel := context.WithCancel(context.Background())
		ch := h.start(ctx)
		h.ev.wait(t, "launch", isEv(EvLaunch, "a"))
		cancel()
		_, evs, err := h.await(ch)
		if !errors.Is(err, ErrInterrupted) {
			continue // the other bug's path
		}
		if indexOf(evs, isEv(EvExit, "a")) < 0 {
			t.Fatalf("the interrupted attempt of a has a launch event but no exit event:\n%s", fmtEvents(evs))
		}
	}
}

// BUG (loop.go, Run's select / onOutcome): an agent killed by the
// interrupt can be handled as a genuine failure. When ctx is cancelled the
// runner's agent is stopped and returns a failure (work.Runner: reason
// exit, "interrupted"). If that result is ready when the loop next
// selects, Go picks at random between it and ctx.Done; half the time
// onOutcome runs: the phase is written [failed] and the run halts (halt
// mode), or it is parked [blocked] with all its dependents (keep-going),
// or a supervisor attempt is spent, and a "fail" record goes to the
// journal. The next driver then refuses to resume the phase.
// Fix: in Run, check ctx.Err() when a result or merge report arrives and
// route it to the drain path (record "interrupted", no failure handling),
// e.g. handle the <-s.results case with `if ctx.Err() != nil { ... }`, or
// simply prefer ctx.Done with a non-blocking check before the select.
// Worse, once that result has made the run halt, idle() can become true
// before the loop ever selects ctx.Done, and Run returns the *HaltError
// (or ErrParked) for an interrupted run.
// This test blocks the loop (in emit) while the interrupt lands and the
// killed agent's result becomes ready, so both select cases are ready; it
// repeats that 20 times.
func TestRegressionInterruptedAgentCountedAsFailure(t *testing.T) {
	t.Parallel()
	for trial := 0; trial < 20; trial++ {
		h := newHarness(t, manifestOf(
			"[pending] **a** — a (deps: none)",
			"[pending] **b** — b (deps: none)",
		), Config{MaxParallel: 2})
		h.runner.on("a", state.Worker, step{Wait: true}) // killed by the interrupt
		exited := make(chan Job, 4)
		h.runner.exited = exited
		ctx, cancel := context.WithCancel(context.Background())
		h.build()
		h.ev.hook = func(e Event) {
			if e.Kind != EvExit || e.Phase != "b" {
				return
			}
			// The loop has handed over b's exit and blocks at its next
			// emit until this returns.
			cancel()
			for j := range exited {
				if j.ID == "a" {
					break
				}
			}
			for i := 0; i < 10; i++ {
				runtime.Gosched() // let a's result reach the channel
			}
		}
		ch := h.start(ctx)
		_, evs, err := h.await(ch)
		st := h.store.state(t, "a")
		if !errors.Is(err, ErrInterrupted) || st != manifest.Running || indexOf(evs, isEv(EvHalt, "")) >= 0 {
			t.Fatalf("BUG (trial %d): the agent killed by the interrupt was handled as a failure: a is [%s], Run returned %v\n%s", trial, st, err, fmtEvents(evs))
		}
	}
}

// BUG (restore.go): restore resumes a [running] phase whose journal ends in
// a *supervisor* failure with another supervisor attempt, while the live
// loop (failed(), by == Supervisor) hands a failed supervisor back to the
// worker. History does not keep the role of the last failure, and restore
// only checks h.Last == "fail". A driver killed between a supervisor's
// failure and the worker's relaunch therefore runs two supervisors in a
// row after the restart.
// Fix: record the failing role in PhaseHistory (e.g. LastRole) and in
// restore create Job{Role: Worker, Resume: true} when the last failure was
// the supervisor's.
func TestRegressionRestoreAfterSupervisorFailureSkipsWorkerHandback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 3})
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate},
		state.Record{Phase: "a", Event: "launch", Role: state.Supervisor, Attempt: 1},
		state.Record{Phase: "a", Event: "fail", Role: state.Supervisor, Attempt: 1, Reason: state.ReasonExit},
	)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	jobs := h.runner.allJobs()
	if len(jobs) == 0 || jobs[0].Role != state.Worker || jobs[0].Attempt != 2 {
		t.Errorf("first job after the restart is %+v; the live loop would hand the failed supervisor back to worker attempt 2", jobs[0])
	}
	h.store.wantStates(t, allMerged("a"))
}

// Control for TestRegressionSameCommandCooldownNotShared: distinct commands keep
// separate quotas, so the supervisor need not wait.
func TestDistinctCommandsDoNotShareCooldown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (deps: none)",
		"[pending] **b** — b (deps: none)",
	), Config{MaxParallel: 2, MaxSupervisorAttempts: 1, AgentCmd: "claude", SupervisorCmd: "codex"})
	holdA := make(chan struct{})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonGate, Wait: true, Hold: holdA})
	h.runner.on("b", state.Worker, step{Cooldown: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h.start(ctx)
	h.ev.wait(t, "cooldown", isEv(EvCooldown, "b"))
	close(holdA)
	h.ev.wait(t, "supervisor launch", isLaunch("a", state.Supervisor, 1))
	h.ev.wait(t, "merge of a", isEv(EvMerged, "a"))
	cancel()
	_, _, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Running})
}

// BUG (loop.go, dispatch and arm): each read the clock itself. A backoff
// that ended after dispatch's reading (the relaunch not due yet) but
// before arm's (no longer after now, so "waiting for a slot") was lost:
// the timer slept an hour with a free slot, and the run hung
// (TestTransientCounterResetsAfterFailure, about 1 in 300 with a 1 ms
// backoff). A clock that moves 1 ms per reading puts some backoff of this
// sweep between the two readings.
// Fix: dispatch and arm take one reading per pass of the loop.
func TestRegressionBackoffEndingBetweenDispatchAndArm(t *testing.T) {
	t.Parallel()
	for b := 1; b <= 24; b++ {
		t.Run(fmt.Sprintf("%dms", b), func(t *testing.T) {
			t.Parallel()
			backoff := time.Duration(b) * time.Millisecond
			h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{
				MaxParallel: 1, TransientMaxRetries: 1,
				Backoff: func(int) time.Duration { return backoff },
			})
			h.runner.on("a", state.Worker, step{Transient: true, Reason: state.ReasonExit}, okStep)
			var ticks atomic.Int64
			t0 := time.Now()
			s := h.build()
			s.now = func() time.Time { return t0.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
			if _, _, err := h.run(context.Background()); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := len(h.runner.jobsOf("a", state.Worker)); n != 2 {
				t.Errorf("%d worker runs, want 2 (one transient retry)", n)
			}
		})
	}
}
