package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/manifest"
)

func openJournal(t *testing.T) *state.Journal {
	t.Helper()
	jn, err := state.OpenJournal(filepath.Join(t.TempDir(), "state", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jn.Close() })
	return jn
}

// reopen closes jn and opens the same file again, as a restarted driver.
func reopen(t *testing.T, jn *state.Journal) *state.Journal {
	t.Helper()
	if err := jn.Close(); err != nil {
		t.Fatal(err)
	}
	jn2, err := state.OpenJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jn2.Close() })
	return jn2
}

func appendAll(t *testing.T, jn *state.Journal, recs ...state.Record) {
	t.Helper()
	for _, r := range recs {
		if err := jn.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// 13a. Supervisor counters survive an interrupt and a restart.
func TestJournalCarriesSupervisorCountsAcrossRestart(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **a** — a (deps: none)")
	cfg := Config{MaxParallel: 1, MaxSupervisorAttempts: 2}

	// First driver: worker 1 fails, supervisor 1 fails and hands back to
	// the worker; worker 2 is running when the driver is interrupted.
	h1 := newHarness(t, text, cfg)
	h1.jn = openJournal(t)
	// (Worker 2 reports success as it is interrupted, so its end is the
	// same whichever way the loop collects it.)
	h1.runner.on("a", state.Worker, fail(state.ReasonGate), step{Wait: true, CancelOK: true})
	h1.runner.on("a", state.Supervisor, fail(state.ReasonExit))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "second worker launch", isLaunch("a", state.Worker, 2))
	cancel()
	_, _, err := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if st := h1.store.state(t, "a"); st != manifest.Running {
		t.Fatalf("a is [%s] after the interrupt, want [running]", st)
	}

	// The restarted driver reads the manifest as the first left it.
	h2 := newHarness(t, h1.store.text(), cfg)
	h2.jn = reopen(t, h1.jn)
	h2.runner.on("a", state.Worker, fail(state.ReasonGate))
	sum, _, err := h2.run(context.Background())
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	jobs := h2.runner.allJobs()
	if len(jobs) != 2 {
		t.Fatalf("second run jobs %+v, want a resumed worker and one supervisor", jobs)
	}
	if w := jobs[0]; w.Role != state.Worker || !w.Resume || w.Attempt != 3 {
		t.Errorf("first job after restart %+v, want worker attempt 3 with Resume", w)
	}
	// One supervisor attempt was spent before the restart, so one
	// remains: it is the last allowed, hence best-effort, and numbered 2.
	if s := jobs[1]; s.Role != state.Supervisor || s.Attempt != 2 || s.Mode != "best-effort" || s.Failure != state.ReasonGate {
		t.Errorf("supervisor job after restart %+v, want attempt 2, best-effort", s)
	}
	// The summary counts this run's attempts, and all of them apart.
	if p := phaseSummary(t, sum, "a"); p.Attempts != 2 || p.AttemptsInAll != 5 || p.State != "merged" {
		t.Errorf("summary %+v, want 2 attempts in this run, 5 over both runs", p)
	}
	h2.store.wantStates(t, allMerged("a"))
}

// A resumed phase whose branch is found already done runs no agent: that
// is not an attempt, in this run's summary, in all, or in the journal a
// later driver reads. The summary counts this run's attempts and time.
func TestResumeFoundDoneIsNoAttempt(t *testing.T) {
	t.Parallel()
	text := manifestOf("[pending] **a** — a (deps: none)", "[pending] **b** — b (deps: none)")
	cfg := Config{MaxParallel: 2, MaxSupervisorAttempts: 2}
	h1 := newHarness(t, text, cfg)
	h1.jn = openJournal(t)
	h1.runner.on("a", state.Worker, step{Wait: true})
	h1.runner.on("b", state.Worker, step{Wait: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "a's worker", isLaunch("a", state.Worker, 1))
	h1.ev.wait(t, "b's worker", isLaunch("b", state.Worker, 1))
	cancel()
	_, _, err := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)

	h2 := newHarness(t, h1.store.text(), cfg)
	h2.jn = reopen(t, h1.jn)
	h2.runner.on("a", state.Worker, step{OK: true, Found: true})
	h2.runner.on("b", state.Worker, step{OK: true, Found: true})
	sum, _, err := h2.run(context.Background())
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	for id, all := range map[string]int{"a": 1, "b": 1} {
		p := phaseSummary(t, sum, id)
		if p.Attempts != 0 || p.AttemptsInAll != all || p.State != "merged" {
			t.Errorf("summary %+v, want 0 attempts in this run, %d in all", p, all)
		}
	}
	recs, err := state.ReadJournal(h2.jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := state.History(recs)
	if h := hist["a"]; h.WorkerRuns != 1 {
		t.Errorf("the journal says a had %d worker runs, want 1", h.WorkerRuns)
	}
}

// 13b. A driver that died between a failure and the supervisor's launch
// resumes with the supervisor.
func TestRestoreResumesSupervisorAfterFail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2})
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate, Detail: "red"},
	)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	jobs := h.runner.allJobs()
	if len(jobs) != 1 {
		t.Fatalf("jobs %+v, want one supervisor run", jobs)
	}
	if j := jobs[0]; j.Role != state.Supervisor || j.Attempt != 1 || !j.Resume || j.Failure != state.ReasonGate || j.Detail != "red" || j.Mode != "standard" {
		t.Errorf("job %+v", j)
	}
}

// Kill rounds do not use up a phase's repairs: two supervisors the
// driver's death cut short (no outcome) and a worker failing again after
// each restart leave every attempt of MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, so
// the restarted driver sends a supervisor instead of halting.
func TestRestoreAfterKilledRepairsSendsSupervisor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 2})
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate},
		state.Record{Phase: "a", Event: "launch", Role: state.Supervisor, Attempt: 1}, // killed
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 2},
		state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 2, Reason: state.ReasonGate},
		state.Record{Phase: "a", Event: "launch", Role: state.Supervisor, Attempt: 2}, // killed
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 3},
		state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 3, Reason: state.ReasonGate},
	)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v (the killed repairs were counted)", err)
	}
	sup := h.runner.jobsOf("a", state.Supervisor)
	if len(sup) != 1 || sup[0].Attempt != 3 || sup[0].Mode != "standard" {
		t.Errorf("supervisor jobs %+v, want one, attempt 3, standard (none of the two spent)", sup)
	}
}

// A [running] phase whose supervisors are used up is resumed as a worker
// and halts on its next failure without another supervisor.
func TestRestoreExhaustedSupervisor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate},
		state.Record{Phase: "a", Event: "launch", Role: state.Supervisor, Attempt: 1},
		state.Record{Phase: "a", Event: "fail", Role: state.Supervisor, Attempt: 1, Reason: state.ReasonExit},
	)
	h.runner.on("a", state.Worker, fail(state.ReasonGate))
	_, _, err := h.run(context.Background())
	wantHalt(t, err)
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Errorf("%d supervisor runs beyond the limit", n)
	}
}

// 13c. A phase a human flipped back to [pending] starts over with Retry.
func TestRestoreRetryAfterFlip(t *testing.T) {
	t.Parallel()
	for _, last := range []string{"blocked", "failed"} {
		t.Run(last, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf(
				"[pending] **a** — a (deps: none)",
				"[pending] **b** — b (deps: a)",
			), Config{MaxParallel: 1, MaxSupervisorAttempts: 2})
			h.jn = openJournal(t)
			appendAll(t, h.jn,
				state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
				state.Record{Phase: "a", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonGate},
				state.Record{Phase: "a", Event: "launch", Role: state.Supervisor, Attempt: 1},
				state.Record{Phase: "a", Event: "fail", Role: state.Supervisor, Attempt: 1, Reason: state.ReasonExit},
				state.Record{Phase: "a", Event: "launch", Role: state.Supervisor, Attempt: 2},
				state.Record{Phase: "a", Event: "fail", Role: state.Supervisor, Attempt: 2, Reason: state.ReasonExit},
				state.Record{Phase: "a", Event: last, Reason: state.ReasonExit},
				state.Record{Phase: "b", Event: "blocked", WaitsOn: "a"},
			)
			h.runner.on("a", state.Worker, fail(state.ReasonGate))
			sum, _, err := h.run(context.Background())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			w := h.runner.jobsOf("a", state.Worker)
			if len(w) != 1 || !w[0].Retry || w[0].Attempt != 1 || w[0].Resume {
				t.Errorf("worker jobs %+v, want attempt 1 with Retry", w)
			}
			s := h.runner.jobsOf("a", state.Supervisor)
			if len(s) != 1 || s[0].Attempt != 1 || s[0].Mode != "standard" || s[0].Retry {
				t.Errorf("supervisor jobs %+v, want a fresh attempt 1 (counters reset)", s)
			}
			if p := phaseSummary(t, sum, "a"); p.Attempts != 2 {
				t.Errorf("summary a %+v, want 2 attempts (reset)", p)
			}
			if w := h.runner.jobsOf("b", state.Worker); len(w) != 1 || !w[0].Retry {
				// b was [blocked] waiting on a and is [pending] now: it
				// also restarts as a retry.
				t.Errorf("b jobs %+v", w)
			}
			recs, err := state.ReadJournal(h.jn.Path())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(recs, func(r state.Record) bool { return r.Phase == "a" && r.Event == "retry" }) {
				t.Errorf("no retry record journaled for a")
			}
		})
	}
}

// A cooldown in the journal still in force holds back the resumed phase.
func TestRestoredCooldownDelaysResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1})
	h.jn = openJournal(t)
	until := time.Now().Add(100 * time.Millisecond)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "cooldown", Role: state.Worker, Attempt: 1, Until: until},
	)
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	l := mustFind(t, evs, isEv(EvLaunch, "a"))
	if l.Time.Before(until) || l.Attempt != 1 {
		t.Errorf("launch %+v: want attempt 1 (the rate-limited one) no earlier than %v", l, until)
	}
	if j := h.runner.allJobs()[0]; !j.Resume {
		t.Errorf("job %+v, want Resume", j)
	}
}

// A merged phase's history is ignored.
func TestRestoreSkipsMerged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[merged] **a** — a (deps: none)",
		"[pending] **b** — b (deps: a)",
	), Config{MaxParallel: 1})
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "done", Role: state.Worker, Attempt: 1},
	)
	sum, _, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 0 {
		t.Errorf("merged phase restored counters: %+v", p)
	}
	if n := h.runner.callsOf("a"); n != 0 {
		t.Errorf("merged phase ran")
	}
}

// A journal that is a directory cannot be read: Run fails before it starts.
func TestRestoreJournalReadError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
	dir := t.TempDir()
	jn, err := state.OpenJournal(filepath.Join(dir, "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer jn.Close()
	// Reading a directory fails.
	if err := os.Remove(jn.Path()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(jn.Path(), 0o755); err != nil {
		t.Fatal(err)
	}
	h.jn = jn
	_, evs, err := h.run(context.Background())
	if err == nil {
		t.Fatal("Run succeeded with an unreadable journal")
	}
	if len(evs) != 0 || h.runner.callsOf("a") != 0 {
		t.Errorf("Run started: %v", kinds(evs, ""))
	}
}

// A resumed phase found stopped in an unfinished merge of the base (its
// worktree has MERGE_HEAD and conflicts) goes to the supervisor as a
// conflict, whoever was relaunched; recovery is no attempt, in this run
// or for a later driver.
func TestResumeUnfinishedMergeGoesToSupervisor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.jn = openJournal(t)
	appendAll(t, h.jn, state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1})
	h.runner.on("a", state.Worker, step{Reason: state.ReasonConflict, Detail: "conflicts with main: x", Found: true})
	h.runner.on("a", state.Supervisor, step{OK: true})
	sum, _, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	jobs := h.runner.allJobs()
	if len(jobs) != 2 || jobs[0].Role != state.Worker || !jobs[0].Resume {
		t.Fatalf("jobs %+v, want the resumed worker, then the supervisor", jobs)
	}
	if j := jobs[1]; j.Role != state.Supervisor || j.Attempt != 1 || j.Failure != state.ReasonConflict || j.Detail != "conflicts with main: x" {
		t.Errorf("supervisor job %+v, want attempt 1 for the conflict", j)
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 1 || p.AttemptsInAll != 2 || p.State != "merged" {
		t.Errorf("summary %+v, want 1 attempt in this run (the supervisor), 2 in all", p)
	}
	recs, err := state.ReadJournal(h.jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := state.History(recs)
	if hh := hist["a"]; hh.WorkerRuns != 1 || hh.SuperRuns != 1 {
		t.Errorf("the journal says %d worker and %d supervisor runs, want 1 and 1", hh.WorkerRuns, hh.SuperRuns)
	}
}

// A power cut gave back the live manifest as it was before the driver's
// last writes (issue 25 §1: it writes the file without an fsync). The
// journal's last word on the phase was written after the lost write and
// the file is older than it: the state is put back, said in one line, and
// nothing runs or merges again. On main before this the phase ran again
// (and, [running], was merged again).
func TestRestorePutsBackALostWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, live, ev string
		want           manifest.State
	}{
		{"merged read pending", "pending", "merged", manifest.Merged},
		{"merged read running", "running", "merged", manifest.Merged},
		{"failed read running", "running", "failed", manifest.Failed},
		{"blocked read pending", "pending", "blocked", manifest.Blocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf(
				"["+tc.live+"] **a** — a (deps: none)",
				"[merged] **b** — b (deps: none)",
			), Config{MaxParallel: 1, KeepGoing: true})
			h.store.mtime = time.Now().Add(-time.Minute) // the version before the write
			h.jn = openJournal(t)
			appendAll(t, h.jn,
				state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
				state.Record{Phase: "a", Event: "done", Role: state.Worker, Attempt: 1},
				state.Record{Phase: "a", Event: tc.ev, Commit: "c1", Reason: state.ReasonGate},
			)
			sum, evs, _ := h.run(context.Background())
			if n := h.runner.callsOf("a"); n != 0 || len(h.merger.allJobs()) != 0 {
				t.Errorf("a ran %d times, %d merges: want none (the journal says it is %s)", n, len(h.merger.allJobs()), tc.ev)
			}
			h.store.wantStates(t, map[string]manifest.State{"a": tc.want, "b": manifest.Merged})
			if p := phaseSummary(t, sum, "a"); p.State != string(tc.want) {
				t.Errorf("summary a %+v, want [%s]", p, tc.want)
			}
			w := mustFind(t, evs, func(e Event) bool { return e.Kind == EvWarn && strings.Contains(e.Detail, "put back") })
			if !strings.Contains(w.Detail, "/rm/EXECUTION-MANIFEST.md") || !strings.Contains(w.Detail, "a ["+tc.live+"] -> ["+string(tc.want)+"]") {
				t.Errorf("warning %q: want the file and what was put back", w.Detail)
			}
		})
	}
}

// A person set a merged phase back to [pending] after the driver wrote
// [merged] (the file is newer than the journal's record): that stands, as
// it always did, and the phase runs again; so does a live file the store
// cannot date.
func TestRestoreKeepsAPersonsReset(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"newer", "undated"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, manifestOf("[pending] **a** — a (deps: none)"), Config{MaxParallel: 1})
			h.jn = openJournal(t)
			appendAll(t, h.jn,
				state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
				state.Record{Phase: "a", Event: "merged", Commit: "c1"},
			)
			if name == "newer" {
				h.store.mtime = time.Now().Add(time.Minute)
			}
			_, evs, err := h.run(context.Background())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := h.runner.callsOf("a"); n != 1 {
				t.Errorf("a ran %d times, want once (the person's reset stands)", n)
			}
			if i := indexOf(evs, func(e Event) bool { return e.Kind == EvWarn && strings.Contains(e.Detail, "put back") }); i >= 0 {
				t.Errorf("a reset by a person was put back: %q", evs[i].Detail)
			}
		})
	}
}
