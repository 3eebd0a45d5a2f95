package scheduler

import (
	"context"
	"github.com/claudopilot/claudopilot/ledger"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/state"
)

func twoLanes(claude, codex int) []Lane {
	return []Lane{
		{ID: "claude", Cmd: "claude -p", SupervisorCmd: "claude -p", Slots: claude, Fallback: "codex"},
		{ID: "codex", Cmd: "codex exec", SupervisorCmd: "codex exec", Slots: codex},
	}
}

// Phases split by annotation and by free slot: a (lane: codex) phase runs
// on codex; the others take claude's one slot first, then codex's.
func TestLanesSplitByAnnotationAndFreeSlot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf(
		"[pending] **pinned** — p (lane: codex)",
		"[pending] **x** — x",
		"[pending] **y** — y",
	), Config{Lanes: twoLanes(1, 2), MaxSupervisorAttempts: 1})
	h.runner.maxParallel = 3
	hold := make(chan struct{})
	for _, id := range []string{"pinned", "x", "y"} {
		h.runner.on(id, state.Worker, step{OK: true, Wait: true, Hold: hold})
	}
	h.runner.entered = make(chan Job, 3)
	ch := h.start(context.Background())
	lanes := map[string]Job{}
	for range 3 {
		j := <-h.runner.entered
		lanes[j.ID] = j
	}
	close(hold)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	if j := lanes["pinned"]; j.Lane != "codex" || j.Cmd != "codex exec" {
		t.Errorf("pinned ran on %q with %q", j.Lane, j.Cmd)
	}
	onClaude := 0
	for _, id := range []string{"x", "y"} {
		if lanes[id].Lane == "claude" {
			onClaude++
			if lanes[id].Cmd != "claude -p" {
				t.Errorf("%s on claude ran %q", id, lanes[id].Cmd)
			}
		}
	}
	if onClaude != 1 {
		t.Errorf("%d of x, y on claude (one slot), want 1: %+v", onClaude, lanes)
	}
}

// While claude cools down after a rate limit, its phase falls back on
// codex; no attempt is spent.
func TestLaneFallbackOnRateLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, manifestOf("[pending] **a** — a (lane: claude)"), Config{Lanes: twoLanes(1, 1), MaxSupervisorAttempts: 1})
	h.runner.on("a", state.Worker, step{Cooldown: time.Hour, Detail: "rate limited"})
	sum, _, err := h.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	js := h.runner.jobsOf("a", state.Worker)
	if len(js) != 2 || js[0].Lane != "claude" || js[1].Lane != "codex" || js[1].Cmd != "codex exec" {
		t.Fatalf("jobs %+v, want claude then codex", js)
	}
	if p := phaseSummary(t, sum, "a"); p.Attempts != 1 {
		t.Errorf("attempts %d, want 1 (the cooldown spends none)", p.Attempts)
	}
}

// A pinned lane without a fallback waits out its cooldown rather than
// run elsewhere, and the run does not end meanwhile.
func TestLanePinnedWaitsForItsLane(t *testing.T) {
	t.Parallel()
	lanes := twoLanes(1, 1)
	lanes[0].Fallback = ""
	h := newHarness(t, manifestOf("[pending] **a** — a (lane: claude)", "[pending] **b** — b (lane: codex)"), Config{Lanes: lanes, MaxSupervisorAttempts: 1})
	h.runner.maxParallel = 2 // one slot on each lane
	h.runner.on("a", state.Worker, step{Cooldown: time.Hour, Detail: "rate limited"})
	ctx, cancel := context.WithCancel(context.Background())
	ch := h.start(ctx)
	h.ev.wait(t, "cooldown", isEv(EvCooldown, "a"))
	h.ev.wait(t, "merge of b", isEv(EvMerged, "b"))
	cancel()
	_, _, err := h.await(ch)
	wantErrIs(t, err, ErrInterrupted)
	if js := h.runner.jobsOf("a", state.Worker); len(js) != 1 {
		t.Errorf("a ran %d times during its lane's cooldown", len(js))
	}
}

// Pause stops new launches while the running agent goes on; resume starts
// them again. The pacer's slots change what runs at once.
func TestPauseResumeAndSlots(t *testing.T) {
	t.Parallel()
	controls := make(chan Control)
	h := newHarness(t, manifestOf(
		"[pending] **a** — a",
		"[pending] **b** — b",
		"[pending] **c** — c",
	), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, AgentCmd: "agent", Controls: controls})
	holdA := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: holdA})
	h.runner.entered = make(chan Job, 3)
	ch := h.start(context.Background())
	if j := <-h.runner.entered; j.ID != "a" {
		t.Fatalf("first launch %s", j.ID)
	}
	yes, no := true, false
	controls <- Control{Pause: &yes}
	h.ev.wait(t, "paused", isEv(EvPaused, ""))
	close(holdA)
	h.ev.wait(t, "merge of a", isEv(EvMerged, "a"))
	if n := h.runner.callsOf("b") + h.runner.callsOf("c"); n != 0 {
		t.Fatalf("%d launches while paused", n)
	}
	// Two slots from the pacer, then resume: b and c run together.
	holdBC := make(chan struct{})
	h.runner.on("b", state.Worker, step{OK: true, Wait: true, Hold: holdBC})
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: holdBC})
	h.runner.maxParallel = 2
	controls <- Control{Slots: map[string]int{"": 2}}
	h.ev.wait(t, "lanes", isEv(EvLanes, ""))
	controls <- Control{Pause: &no}
	<-h.runner.entered
	<-h.runner.entered
	close(holdBC)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	if h.runner.peakSeen() != 2 {
		t.Errorf("peak %d, want 2 after the pacer gave two slots", h.runner.peakSeen())
	}
}

// A run started paused waits for resume rather than ending.
func TestStartPausedWaits(t *testing.T) {
	t.Parallel()
	controls := make(chan Control)
	h := newHarness(t, manifestOf("[pending] **a** — a"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, Controls: controls, Paused: true})
	ch := h.start(context.Background())
	no := false
	// The loop takes the control only once it is waiting in select, so
	// the send itself shows the run did not end while paused.
	controls <- Control{Pause: &no}
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	if h.runner.callsOf("a") != 1 {
		t.Errorf("a ran %d times", h.runner.callsOf("a"))
	}
}

// The loop reports the base's gate: red when a merge gate fails, green
// again when a merge lands.
func TestGateStateReported(t *testing.T) {
	t.Parallel()
	var got []bool
	h := newHarness(t, manifestOf("[pending] **a** — a"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1,
		GateState: func(red bool) { got = append(got, red) }})
	h.merger.on("a", mstep{Reason: state.ReasonGate, Detail: "red"})
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0] || got[1] {
		t.Fatalf("gate reports %v, want [true false]", got)
	}
}

// Two lanes run one command on two accounts (LANE_<id>_CREDENTIALS): the
// rate limit of one account holds its lane only; the phase falls back on
// the other account's lane, which gets its folder; two lanes on one
// account share its cooldown, so the fallback waits too.
func TestLaneAccountsKeyTheQuota(t *testing.T) {
	t.Parallel()
	lanes := func(second string) []Lane {
		return []Lane{
			{ID: "main", Cmd: "claude -p", SupervisorCmd: "claude -p", Slots: 1, Fallback: "work", Account: "/home/u/.claude"},
			{ID: "work", Cmd: "claude -p", SupervisorCmd: "claude -p", Slots: 1, Account: second},
		}
	}
	h := newHarness(t, manifestOf("[pending] **a** — a (lane: main)"), Config{Lanes: lanes("/home/u/.claude-work"), MaxSupervisorAttempts: 1})
	h.runner.on("a", state.Worker, step{Cooldown: time.Hour, Detail: "rate limited"})
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	js := h.runner.jobsOf("a", state.Worker)
	if len(js) != 2 || js[0].Account != "/home/u/.claude" || js[1].Lane != "work" || js[1].Account != "/home/u/.claude-work" {
		t.Fatalf("jobs %+v, want main's account, then work's", js)
	}
	if k := QuotaKey("claude -p", "/home/u/.claude"); k != "account /home/u/.claude" || QuotaKey("claude -p", "") != "claude -p" {
		t.Errorf("QuotaKey = %q", k)
	}
	// One account: the fallback is the same quota, so a cooldown of it
	// holds the phase on every lane it may run on.
	rm := parseRoadmap(t, manifestOf("[pending] **a** — a (lane: main)"))
	n := rm.Nodes[0]
	if got := LaneCmds(lanes("/home/u/.claude"), n, state.Worker); len(got) != 2 || got[0] != got[1] {
		t.Errorf("one account: quotas %q, want one", got)
	}
	if got := LaneCmds(lanes("/home/u/.claude-work"), n, state.Worker); len(got) != 2 || got[0] == got[1] {
		t.Errorf("two accounts: quotas %q, want two", got)
	}
}

// A poke by hand (.claudopilot/control/<id>.poke) stops the running
// worker and relaunches it in its session, at no attempt; a poke of a
// phase with no worker running changes nothing but says so.
func TestPokeByHand(t *testing.T) {
	t.Parallel()
	controls := make(chan Control)
	h := newHarness(t, manifestOf("[pending] **a** — a", "[pending] **b** — b (deps: a)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1, Controls: controls})
	h.runner.on("a", state.Worker, step{Wait: true, Usage: ledger.Usage{SessionID: "sess-a"}}, okStep)
	h.runner.entered = make(chan Job, 4)
	ch := h.start(context.Background())
	<-h.runner.entered
	controls <- Control{Poke: []string{"b"}}
	h.ev.wait(t, "poke of b ignored", isEv(EvWarn, "b"))
	controls <- Control{Poke: []string{"a"}}
	if j := <-h.runner.entered; j.ID != "a" || j.Attempt != 1 || j.Session != "sess-a" {
		t.Errorf("after the poke: %+v, want a's worker attempt 1 in session sess-a", j)
	}
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	if n := len(h.runner.jobsOf("a", state.Supervisor)); n != 0 {
		t.Errorf("%d supervisors after a poke", n)
	}
}

// A lane's ATTACH reaches the runner with each of its jobs, and only its.
func TestLaneAttachReachesTheJob(t *testing.T) {
	t.Parallel()
	lanes := []Lane{{ID: "tty", Cmd: "claude", Slots: 1, Attach: true}, {ID: "pipe", Cmd: "codex exec", Slots: 1}}
	h := newHarness(t, manifestOf("[pending] **a** — a (lane: tty)", "[pending] **b** — b (lane: pipe)"), Config{Lanes: lanes, MaxSupervisorAttempts: 1})
	h.runner.maxParallel = 2
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a, b := h.runner.jobsOf("a", state.Worker), h.runner.jobsOf("b", state.Worker); len(a) != 1 || !a[0].Attach || len(b) != 1 || b[0].Attach {
		t.Errorf("jobs a %+v b %+v, want a on a terminal only", a, b)
	}
}

// A job on a lane carries that lane's resume command (LANE_<id>_RESUME_CMD,
// or the claude preset's for a lane that runs it): the session it resumes
// is that lane's CLI's.
func TestLaneJobCarriesItsResumeCmd(t *testing.T) {
	t.Parallel()
	lanes := twoLanes(1, 1)
	lanes[0].ResumeCmd = "claude -p --resume {session}"
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (lane: claude)",
		"[pending] **b** — b (lane: codex)",
	), Config{Lanes: lanes, MaxSupervisorAttempts: 1})
	h.runner.maxParallel = 2
	h.runner.entered = make(chan Job, 2)
	if _, _, err := h.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for range 2 {
		j := <-h.runner.entered
		got[j.ID] = j.ResumeCmd
	}
	if got["a"] != "claude -p --resume {session}" || got["b"] != "" {
		t.Errorf("resume commands %q", got)
	}
}

// explain asks the loop's own lane rule (PickLane) over what the journal
// says (FileLaneLoads): while the loop holds a phase back for its lane's
// cap, explain names that lane; once the loop has free room there, so does
// explain. claude has 1 slot, codex 2: with a on claude and c on codex,
// b (lane: claude) waits although 2 of 3 slots in all are taken (what
// explain counted before: "eligible and will start").
func TestExplainLaneRuleAgreesWithLoop(t *testing.T) {
	t.Parallel()
	lanes := twoLanes(1, 2)
	lanes[0].Fallback = ""
	h := newHarness(t, manifestOf(
		"[pending] **a** — a (lane: claude)",
		"[pending] **b** — b (lane: claude)",
		"[pending] **c** — c (lane: codex)",
	), Config{Lanes: lanes, MaxSupervisorAttempts: 1})
	h.jn = openJournal(t)
	h.runner.maxParallel = 2
	holdA, holdC := make(chan struct{}), make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: holdA})
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: holdC})
	ch := h.start(context.Background())
	h.ev.wait(t, "launch a", isLaunch("a", state.Worker, 1))
	h.ev.wait(t, "launch c", isLaunch("c", state.Worker, 1))

	fileLoads := func() []LaneLoad {
		t.Helper()
		recs, err := state.ReadJournal(h.jn.Path())
		if err != nil {
			t.Fatal(err)
		}
		var rules state.Rules
		for _, r := range recs {
			if r.Event == "run" && r.Rules != nil {
				rules = *r.Rules
			}
		}
		hist, cool := state.History(recs)
		return FileLaneLoads(rules, hist, nil, cool, time.Now())
	}
	i, held := PickLane(fileLoads(), "claude")
	if i >= 0 || len(held) != 1 || held[0].ID != "claude" || held[0].Running != 1 || held[0].Slots != 1 {
		t.Errorf("explain's lane rule for b: %d, held %+v; want none, held by claude (1 of 1)", i, held)
	}
	if js := h.runner.jobsOf("b", state.Worker); len(js) != 0 {
		t.Errorf("the loop launched b while claude was full: %+v", js)
	}
	if i, _ := PickLane(fileLoads(), "codex"); i < 0 || lanes[i].ID != "codex" {
		t.Errorf("explain's lane rule for a codex phase: %d, want codex (1 of 2 taken)", i)
	}

	close(holdA)
	h.ev.wait(t, "launch b", isLaunch("b", state.Worker, 1))
	close(holdC)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	if js := h.runner.jobsOf("b", state.Worker); len(js) != 1 || js[0].Lane != "claude" {
		t.Errorf("b ran %+v, want once on claude", js)
	}
}

// fileLoads are the lanes as explain reads them from jn: the newest run's
// rules with the slots as it has them now, what runs on each, the
// cooldowns; and each phase's history.
func fileLoads(t *testing.T, jn *state.Journal) ([]LaneLoad, map[string]*state.PhaseHistory) {
	t.Helper()
	recs, err := state.ReadJournal(jn.Path())
	if err != nil {
		t.Fatal(err)
	}
	rules := state.LastRules(recs)
	if rules == nil {
		t.Fatal("no run record in the journal")
	}
	hist, cool := state.History(recs)
	return FileLaneLoads(*rules, hist, state.SideRuns(recs), cool, time.Now()), hist
}

// A phase retried in a live run keeps the lane it ran on (HomeLane), in
// the loop and in explain, and explain sees the slots the pacer set since
// the run started. b, bound to no lane, runs on codex (claude is full with
// a), fails, and is retried by hand while c holds codex; then the pacer
// gives claude a second slot. The loop holds b for codex; explain, over
// the journal, names codex (it used to say b would start: the journal's
// retry forgot the lane, and claude's slots were the run's start's).
func TestExplainRetriedLaneAgreesWithLoop(t *testing.T) {
	t.Parallel()
	lanes := twoLanes(1, 1)
	lanes[0].Fallback = ""
	controls := make(chan Control)
	h, edits := newEditHarness(t, manifestOf(
		"[pending] **a** — a (lane: claude)",
		"[pending] **b** — b",
		"[pending] **c** — c (lane: codex)",
	), Config{Lanes: lanes, KeepGoing: true, Controls: controls}, "a", "b", "c")
	h.jn = openJournal(t)
	h.s.jn = h.jn
	h.runner.maxParallel = 3
	holdA, holdC := make(chan struct{}), make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: holdA})
	h.runner.on("b", state.Worker, fail(state.ReasonGate))
	h.runner.on("c", state.Worker, step{OK: true, Wait: true, Hold: holdC})
	ch := h.start(context.Background())
	h.ev.wait(t, "b parked", isEv(EvBlocked, "b"))
	h.ev.wait(t, "launch c", isLaunch("c", state.Worker, 1))
	h.humanEdit(edits, "[blocked] **b**", "[pending] **b**")
	controls <- Control{Slots: map[string]int{"claude": 2, "codex": 1}}
	controls <- Control{} // taken once the loop has scheduled after the new slots

	if js := h.runner.jobsOf("b", state.Worker); len(js) != 1 || js[0].Lane != "codex" {
		t.Errorf("the loop ran b %+v, want once on codex (its retry waits for codex)", js)
	}
	loads, hist := fileLoads(t, h.jn)
	last, ran := hist["b"].LastLane()
	if home := HomeLane("", last, ran); home != "codex" {
		t.Errorf("explain's home lane for b: %q (last %q, %v), want codex", home, last, ran)
	}
	i, held := PickLane(loads, HomeLane("", last, ran))
	if i >= 0 || len(held) != 1 || held[0].ID != "codex" || held[0].Running != 1 {
		t.Errorf("explain's lane rule for b: %d, held %+v; want none, held by codex (1 of 1)", i, held)
	}
	if i, _ := PickLane(loads, "claude"); i != 0 || loads[0].Slots != 2 || loads[0].Running != 1 {
		t.Errorf("explain's lanes %+v: want claude 1 of the pacer's 2 slots taken", loads)
	}

	close(holdC)
	h.ev.wait(t, "retry of b", isLaunch("b", state.Worker, 1))
	close(holdA)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
	if js := h.runner.jobsOf("b", state.Worker); len(js) != 2 || js[1].Lane != "codex" {
		t.Errorf("b ran %+v, want its retry on codex", js)
	}
}

// A slot lent to a side run (a scanner) is journaled, so explain counts
// it as the loop does: with a on one of MAX_PARALLEL=2 slots and the
// other lent, a phase has none; once it is given back, one is free.
func TestExplainCountsSideRuns(t *testing.T) {
	t.Parallel()
	side := NewSide()
	h := newHarness(t, manifestOf("[pending] **a** — a"), Config{MaxParallel: 2, AgentCmd: "agent", Side: side})
	h.jn = openJournal(t)
	holdA := make(chan struct{})
	h.runner.on("a", state.Worker, step{OK: true, Wait: true, Hold: holdA})
	ch := h.start(context.Background())
	h.ev.wait(t, "a launched", isLaunch("a", state.Worker, 1))
	g := waitGrant(t, ask(t, side, "scanner bugs"))
	loads, _ := fileLoads(t, h.jn)
	if i, held := PickLane(loads, ""); i >= 0 || len(held) != 1 || held[0].Running != 2 {
		t.Errorf("explain's lanes while the scanner holds a slot: %d, %+v; want the one lane full (2 of 2)", i, held)
	}
	g.Release(0, "", "")
	h.ev.wait(t, "the scanner's end", func(e Event) bool { return e.Kind == EvSideEnd && e.Title == "scanner bugs" })
	loads, _ = fileLoads(t, h.jn)
	if i, _ := PickLane(loads, ""); i != 0 || loads[0].Running != 1 {
		t.Errorf("explain's lanes after the scanner: %+v, want 1 of 2 taken", loads)
	}
	close(holdA)
	if _, _, err := h.await(ch); err != nil {
		t.Fatal(err)
	}
}
