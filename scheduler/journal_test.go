package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

func openJournal(t *testing.T) *Journal {
	t.Helper()
	jn, err := OpenJournal(filepath.Join(t.TempDir(), "state", "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jn.Close() })
	return jn
}

// reopen closes jn and opens the same file again, as a restarted driver.
func reopen(t *testing.T, jn *Journal) *Journal {
	t.Helper()
	if err := jn.Close(); err != nil {
		t.Fatal(err)
	}
	jn2, err := OpenJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jn2.Close() })
	return jn2
}

func appendAll(t *testing.T, jn *Journal, recs ...Record) {
	t.Helper()
	for _, r := range recs {
		if err := jn.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJournalRoundTrip(t *testing.T) {
	t.Parallel()
	jn := openJournal(t)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	in := []Record{
		{Time: t0, Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		{Time: t0.Add(time.Second), Phase: "a", Event: "pgid", Role: Worker, Attempt: 1, PGID: 4242},
		{Time: t0.Add(2 * time.Second), Phase: "a", Event: "cooldown", Role: Worker, Attempt: 1, Until: t0.Add(time.Hour)},
		{Time: t0.Add(3 * time.Second), Phase: "a", Event: "fail", Role: Supervisor, Attempt: 2, Reason: ReasonConflict, Detail: "x.go"},
		{Time: t0.Add(4 * time.Second), Phase: "a", Event: "merged", Commit: "abc"},
	}
	appendAll(t, jn, in...)
	if err := jn.Append(Record{Phase: "b", Event: "launch"}); err != nil {
		t.Fatal(err)
	}
	out, err := ReadJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in)+1 {
		t.Fatalf("read %d records, want %d", len(out), len(in)+1)
	}
	for i := range in {
		if !reflect.DeepEqual(out[i], in[i]) {
			t.Errorf("record %d = %+v, want %+v", i, out[i], in[i])
		}
	}
	if out[len(in)].Time.IsZero() {
		t.Errorf("Append did not stamp a zero time")
	}
}

func TestReadJournalMissingAndTorn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recs, err := ReadJournal(filepath.Join(dir, "nope.jsonl"))
	if err != nil || recs != nil {
		t.Errorf("missing journal: %v, %v", recs, err)
	}
	path := filepath.Join(dir, "j.jsonl")
	data := `{"t":"2025-01-01T00:00:00Z","phase":"a","ev":"launch","role":"worker","attempt":1}
{"t":"2025-01-01T00:00:01Z","phase":"a","ev":"do`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err = ReadJournal(path)
	if err != nil || len(recs) != 1 || recs[0].Event != "launch" {
		t.Errorf("torn journal: %+v, %v", recs, err)
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rec := func(s int, phase, ev string, role Role, attempt int) Record {
		return Record{Time: at(s), Phase: phase, Event: ev, Role: role, Attempt: attempt}
	}
	with := func(r Record, f func(*Record)) Record { f(&r); return r }

	cases := []struct {
		name string
		recs []Record
		want map[string]*PhaseHistory
		cool map[Role]time.Time
	}{
		{
			name: "empty",
			want: map[string]*PhaseHistory{},
			cool: map[Role]time.Time{},
		},
		{
			name: "records without a phase are ignored",
			recs: []Record{{Time: at(0), Event: "start", PID: 7}},
			want: map[string]*PhaseHistory{},
			cool: map[Role]time.Time{},
		},
		{
			name: "worker fails, supervisor fails",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 11 }),
				with(rec(10, "a", "fail", Worker, 1), func(r *Record) { r.Reason, r.Detail = ReasonGate, "red" }),
				rec(11, "a", "launch", Supervisor, 1),
				with(rec(12, "a", "pgid", Supervisor, 1), func(r *Record) { r.PGID = 12 }),
				with(rec(20, "a", "fail", Supervisor, 1), func(r *Record) { r.Reason, r.Detail = ReasonExit, "boom" }),
			},
			want: map[string]*PhaseHistory{"a": {
				WorkerRuns: 1, SuperRuns: 1, SuperSpent: 1, Reason: ReasonExit, Detail: "boom",
				Last: "fail", LastFailBy: Supervisor, Spent: 19 * time.Second,
			}},
			cool: map[Role]time.Time{},
		},
		{
			name: "running: process groups kept",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 7 }),
				with(rec(2, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 8 }),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "launch", PGIDs: []int{7, 8}, launchedAt: at(0)}},
			cool: map[Role]time.Time{},
		},
		{
			name: "cooldown reuses the attempt number",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(5, "a", "cooldown", Worker, 1), func(r *Record) { r.Until = at(100) }),
				rec(100, "a", "launch", Worker, 1),
				with(rec(110, "a", "done", Worker, 1), func(r *Record) { r.Tip = "abc" }),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "done", Tip: "abc", Spent: 15 * time.Second}},
			cool: map[Role]time.Time{Worker: at(100)},
		},
		{
			name: "cooldown not yet relaunched leaves the count one lower",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(5, "a", "cooldown", Worker, 1), func(r *Record) { r.Until = at(100) }),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 0, Last: "cooldown", Spent: 5 * time.Second}},
			cool: map[Role]time.Time{Worker: at(100)},
		},
		{
			name: "newest cooldown deadline per role",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "cooldown", Worker, 1), func(r *Record) { r.Until = at(100) }),
				rec(0, "b", "launch", Worker, 1),
				with(rec(1, "b", "cooldown", Worker, 1), func(r *Record) { r.Until = at(50) }),
				rec(2, "c", "launch", Supervisor, 1),
				with(rec(3, "c", "cooldown", Supervisor, 1), func(r *Record) { r.Until = at(70) }),
			},
			want: map[string]*PhaseHistory{
				"a": {Last: "cooldown", Spent: time.Second},
				"b": {Last: "cooldown", Spent: time.Second},
				"c": {Last: "cooldown", Spent: time.Second},
			},
			cool: map[Role]time.Time{Worker: at(100), Supervisor: at(70)},
		},
		{
			name: "supervisor transient reuses its attempt; a repair the driver died during is not spent",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				rec(2, "a", "launch", Supervisor, 1),
				rec(3, "a", "transient", Supervisor, 1),
				rec(4, "a", "launch", Supervisor, 1),
			},
			want: map[string]*PhaseHistory{"a": {
				WorkerRuns: 1, SuperRuns: 1, SuperSpent: 0, Reason: ReasonGate, Last: "launch", LastFailBy: Worker,
				Spent: 2 * time.Second, launchedAt: at(4),
			}},
			cool: map[Role]time.Time{},
		},
		{
			name: "interrupted attempt still counts",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "pgid", Worker, 1), func(r *Record) { r.PGID = 9 }),
				rec(3, "a", "interrupted", Worker, 1),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "interrupted", Spent: 3 * time.Second}},
			cool: map[Role]time.Time{},
		},
		{
			name: "failed and blocked",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason, r.Detail = ReasonStuck, "quiet" }),
				with(rec(2, "a", "blocked", "", 0), func(r *Record) { r.Reason = ReasonStuck }),
				with(rec(2, "b", "blocked", "", 0), func(r *Record) { r.WaitsOn = "a" }),
				with(rec(3, "c", "failed", "", 0), func(r *Record) { r.Reason = ReasonNoDone }),
			},
			want: map[string]*PhaseHistory{
				"a": {WorkerRuns: 1, Reason: ReasonStuck, Detail: "quiet", Last: "blocked", LastFailBy: Worker, Spent: time.Second},
				"b": {Last: "blocked", WaitsOn: "a"},
				"c": {Last: "failed", Reason: ReasonNoDone},
			},
			cool: map[Role]time.Time{},
		},
		{
			name: "merged and retry start over",
			recs: []Record{
				rec(0, "a", "launch", Worker, 1),
				with(rec(1, "a", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				rec(2, "a", "launch", Supervisor, 1),
				rec(3, "a", "done", Supervisor, 1),
				with(rec(4, "a", "merged", "", 0), func(r *Record) { r.Commit = "c1" }),
				rec(0, "b", "launch", Worker, 1),
				with(rec(1, "b", "fail", Worker, 1), func(r *Record) { r.Reason = ReasonGate }),
				with(rec(2, "b", "failed", "", 0), func(r *Record) { r.Reason = ReasonGate }),
				rec(3, "b", "retry", "", 0),
			},
			want: map[string]*PhaseHistory{
				"a": {WorkerRuns: 1, SuperRuns: 1, SuperSpent: 1, LastFailBy: Worker, Last: "merged", Spent: 2 * time.Second},
				"b": {Last: "retry"},
			},
			cool: map[Role]time.Time{},
		},
		{
			name: "counters after a retry",
			recs: []Record{
				rec(0, "a", "launch", Worker, 3),
				rec(1, "a", "retry", "", 0),
				rec(2, "a", "launch", Worker, 1),
			},
			want: map[string]*PhaseHistory{"a": {WorkerRuns: 1, Last: "launch", launchedAt: at(2)}},
			cool: map[Role]time.Time{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, cool := History(c.recs)
			if !reflect.DeepEqual(got, c.want) {
				for id, h := range got {
					t.Errorf("got %s: %+v", id, *h)
				}
				for id, h := range c.want {
					t.Errorf("want %s: %+v", id, *h)
				}
			}
			byRole := map[Role]time.Time{}
			for k, until := range cool {
				if until.After(byRole[k.Role]) {
					byRole[k.Role] = until
				}
			}
			if !reflect.DeepEqual(byRole, c.cool) {
				t.Errorf("cooldowns %v, want %v", cool, c.cool)
			}
		})
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
	h1.runner.on("a", Worker, fail(ReasonGate), step{Wait: true, CancelOK: true})
	h1.runner.on("a", Supervisor, fail(ReasonExit))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "second worker launch", isLaunch("a", Worker, 2))
	cancel()
	_, err, _ := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if st := h1.store.state(t, "a"); st != manifest.Running {
		t.Fatalf("a is [%s] after the interrupt, want [running]", st)
	}

	// The restarted driver reads the manifest as the first left it.
	h2 := newHarness(t, h1.store.text(), cfg)
	h2.jn = reopen(t, h1.jn)
	h2.runner.on("a", Worker, fail(ReasonGate))
	sum, err, _ := h2.run(context.Background())
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	jobs := h2.runner.allJobs()
	if len(jobs) != 2 {
		t.Fatalf("second run jobs %+v, want a resumed worker and one supervisor", jobs)
	}
	if w := jobs[0]; w.Role != Worker || !w.Resume || w.Attempt != 3 {
		t.Errorf("first job after restart %+v, want worker attempt 3 with Resume", w)
	}
	// One supervisor attempt was spent before the restart, so one
	// remains: it is the last allowed, hence best-effort, and numbered 2.
	if s := jobs[1]; s.Role != Supervisor || s.Attempt != 2 || s.Mode != "best-effort" || s.Failure != ReasonGate {
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
	h1.runner.on("a", Worker, step{Wait: true})
	h1.runner.on("b", Worker, step{Wait: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := h1.start(ctx)
	h1.ev.wait(t, "a's worker", isLaunch("a", Worker, 1))
	h1.ev.wait(t, "b's worker", isLaunch("b", Worker, 1))
	cancel()
	_, err, _ := h1.await(ch)
	wantErrIs(t, err, ErrInterrupted)

	h2 := newHarness(t, h1.store.text(), cfg)
	h2.jn = reopen(t, h1.jn)
	h2.runner.on("a", Worker, step{OK: true, Found: true})
	h2.runner.on("b", Worker, step{OK: true, Found: true})
	sum, err, _ := h2.run(context.Background())
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	for id, all := range map[string]int{"a": 1, "b": 1} {
		p := phaseSummary(t, sum, id)
		if p.Attempts != 0 || p.AttemptsInAll != all || p.State != "merged" {
			t.Errorf("summary %+v, want 0 attempts in this run, %d in all", p, all)
		}
	}
	recs, err := ReadJournal(h2.jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := History(recs)
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
		Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		Record{Phase: "a", Event: "fail", Role: Worker, Attempt: 1, Reason: ReasonGate, Detail: "red"},
	)
	if _, err, _ := h.run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	jobs := h.runner.allJobs()
	if len(jobs) != 1 {
		t.Fatalf("jobs %+v, want one supervisor run", jobs)
	}
	if j := jobs[0]; j.Role != Supervisor || j.Attempt != 1 || !j.Resume || j.Failure != ReasonGate || j.Detail != "red" || j.Mode != "standard" {
		t.Errorf("job %+v", j)
	}
}

// A [running] phase whose supervisors are used up is resumed as a worker
// and halts on its next failure without another supervisor.
func TestRestoreExhaustedSupervisor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[running] **a** — a (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1})
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		Record{Phase: "a", Event: "fail", Role: Worker, Attempt: 1, Reason: ReasonGate},
		Record{Phase: "a", Event: "launch", Role: Supervisor, Attempt: 1},
		Record{Phase: "a", Event: "fail", Role: Supervisor, Attempt: 1, Reason: ReasonExit},
	)
	h.runner.on("a", Worker, fail(ReasonGate))
	_, err, _ := h.run(context.Background())
	wantHalt(t, err)
	if n := len(h.runner.jobsOf("a", Supervisor)); n != 0 {
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
				Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
				Record{Phase: "a", Event: "fail", Role: Worker, Attempt: 1, Reason: ReasonGate},
				Record{Phase: "a", Event: "launch", Role: Supervisor, Attempt: 1},
				Record{Phase: "a", Event: "fail", Role: Supervisor, Attempt: 1, Reason: ReasonExit},
				Record{Phase: "a", Event: "launch", Role: Supervisor, Attempt: 2},
				Record{Phase: "a", Event: "fail", Role: Supervisor, Attempt: 2, Reason: ReasonExit},
				Record{Phase: "a", Event: last, Reason: ReasonExit},
				Record{Phase: "b", Event: "blocked", WaitsOn: "a"},
			)
			h.runner.on("a", Worker, fail(ReasonGate))
			sum, err, _ := h.run(context.Background())
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			w := h.runner.jobsOf("a", Worker)
			if len(w) != 1 || !w[0].Retry || w[0].Attempt != 1 || w[0].Resume {
				t.Errorf("worker jobs %+v, want attempt 1 with Retry", w)
			}
			s := h.runner.jobsOf("a", Supervisor)
			if len(s) != 1 || s[0].Attempt != 1 || s[0].Mode != "standard" || s[0].Retry {
				t.Errorf("supervisor jobs %+v, want a fresh attempt 1 (counters reset)", s)
			}
			if p := phaseSummary(t, sum, "a"); p.Attempts != 2 {
				t.Errorf("summary a %+v, want 2 attempts (reset)", p)
			}
			if w := h.runner.jobsOf("b", Worker); len(w) != 1 || !w[0].Retry {
				// b was [blocked] waiting on a and is [pending] now: it
				// also restarts as a retry.
				t.Errorf("b jobs %+v", w)
			}
			recs, err := ReadJournal(h.jn.Path())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(recs, func(r Record) bool { return r.Phase == "a" && r.Event == "retry" }) {
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
		Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		Record{Phase: "a", Event: "cooldown", Role: Worker, Attempt: 1, Until: until},
	)
	_, err, evs := h.run(context.Background())
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
		Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1},
		Record{Phase: "a", Event: "done", Role: Worker, Attempt: 1},
	)
	sum, err, _ := h.run(context.Background())
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
	jn, err := OpenJournal(filepath.Join(dir, "j"))
	if err != nil {
		t.Fatal(err)
	}
	defer jn.Close()
	jn.path = dir // reading a directory fails
	h.jn = jn
	_, err, evs := h.run(context.Background())
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
	appendAll(t, h.jn, Record{Phase: "a", Event: "launch", Role: Worker, Attempt: 1})
	h.runner.on("a", Worker, step{Reason: ReasonConflict, Detail: "conflicts with main: x", Found: true})
	h.runner.on("a", Supervisor, step{OK: true})
	sum, err, _ := h.run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	jobs := h.runner.allJobs()
	if len(jobs) != 2 || jobs[0].Role != Worker || !jobs[0].Resume {
		t.Fatalf("jobs %+v, want the resumed worker, then the supervisor", jobs)
	}
	if j := jobs[1]; j.Role != Supervisor || j.Attempt != 1 || j.Failure != ReasonConflict || j.Detail != "conflicts with main: x" {
		t.Errorf("supervisor job %+v, want attempt 1 for the conflict", j)
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 1 || p.AttemptsInAll != 2 || p.State != "merged" {
		t.Errorf("summary %+v, want 1 attempt in this run (the supervisor), 2 in all", p)
	}
	recs, err := ReadJournal(h.jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := History(recs)
	if hh := hist["a"]; hh.WorkerRuns != 1 || hh.SuperRuns != 1 {
		t.Errorf("the journal says %d worker and %d supervisor runs, want 1 and 1", hh.WorkerRuns, hh.SuperRuns)
	}
}
