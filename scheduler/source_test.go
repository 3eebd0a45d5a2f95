package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
)

// fakeSource offers outside nodes and lands them by script. Unscripted
// landings merge.
type fakeSource struct {
	ch chan []OutsideNode

	mu      sync.Mutex
	script  map[string][]MergeOutcome
	lands   []MergeJob
	records []string // "id state reason"
	// hold, when set for an id, blocks its landing until closed.
	hold    map[string]chan struct{}
	landing chan string // told each landing's id as it starts (if set)
}

func newSource() *fakeSource {
	return &fakeSource{ch: make(chan []OutsideNode, 8), script: map[string][]MergeOutcome{}, hold: map[string]chan struct{}{}}
}

func (f *fakeSource) Nodes() <-chan []OutsideNode { return f.ch }

func (f *fakeSource) Land(ctx context.Context, j MergeJob) MergeOutcome {
	f.mu.Lock()
	f.lands = append(f.lands, j)
	m := MergeOutcome{ID: j.ID, OK: true, Commit: "landed-" + j.Tip}
	if q := f.script[j.ID]; len(q) > 0 {
		m, f.script[j.ID] = q[0], q[1:]
		m.ID = j.ID
	}
	hold, tell := f.hold[j.ID], f.landing
	f.mu.Unlock()
	if tell != nil {
		tell <- j.ID
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return MergeOutcome{ID: j.ID, Reason: state.ReasonMerge, Detail: "interrupted"}
		}
	}
	return m
}

func (f *fakeSource) Record(id string, st manifest.State, n Note) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, fmt.Sprintf("%s %s %s", id, st, n.Reason))
}

func (f *fakeSource) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.records...)
}

func (f *fakeSource) landsOf(id string) []MergeJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []MergeJob
	for _, j := range f.lands {
		if j.ID == id {
			out = append(out, j)
		}
	}
	return out
}

func issueNode(n int, deps ...string) OutsideNode {
	id := fmt.Sprintf("#%d", n)
	return OutsideNode{ID: id, Title: "issue " + id, Deps: deps, Work: OutsideWork{
		Branch: fmt.Sprintf("claudopilot/issue-%d", n), From: "refs/remotes/origin/main", Base: "main",
		DocRel: fmt.Sprintf(".claudopilot/issue-%d.md", n), Number: n, Prompt: "issue-",
	}}
}

// sourceHarness is a harness whose roadmap accepts issue deps and whose
// scheduler has src as its Source.
func sourceHarness(t *testing.T, text string, cfg Config, src *fakeSource) *harness {
	t.Helper()
	rm, err := roadmap.Parse("/rm", []byte(text), nil, roadmap.Options{External: roadmap.IsIssueRef})
	if err != nil {
		t.Fatal(err)
	}
	store := newMemStore(text)
	h := &harness{t: t, cfg: cfg, rm: rm, store: store, runner: newRunner(max(cfg.MaxParallel, 1)), merger: newMerger(store)}
	h.build().SetSource(src)
	return h
}

func TestOutsideNodesAreScheduledWithPhases(t *testing.T) {
	text := manifestOf(
		"[pending] **a** — A (deps: none)",
		"[pending] **b** — B (deps: #1)",
	)
	src := newSource()
	h := sourceHarness(t, text, Config{MaxParallel: 2}, src)
	// #1 waits on phase a; phase b waits on #1: one graph.
	src.ch <- []OutsideNode{issueNode(1, "a"), issueNode(2)}
	close(src.ch)
	sum, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	for _, id := range []string{"a", "b", "#1", "#2"} {
		if st := phaseSummary(t, sum, id).State; st != "merged" {
			t.Errorf("%s is %s, want merged", id, st)
		}
	}
	order := func(pred func(Event) bool) int { return indexOf(evs, pred) }
	if !(order(isEv(EvMerged, "a")) < order(isLaunch("#1", state.Worker, 1)) && order(isEv(EvMerged, "#1")) < order(isLaunch("b", state.Worker, 1))) {
		t.Errorf("launches ignore the edges a -> #1 -> b:\n%s", fmtEvents(evs))
	}
	if len(h.merger.jobsOf("#1")) != 0 || len(src.landsOf("#1")) != 1 {
		t.Errorf("#1 must land through its source, not the merge owner")
	}
	if j := h.runner.jobsOf("#1", state.Worker); len(j) != 1 || j[0].Outside == nil || j[0].Outside.Branch != "claudopilot/issue-1" {
		t.Errorf("the runner did not get #1's outside work: %+v", j)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged})
	want := []string{"#1 running ", "#1 merged ", "#2 running ", "#2 merged "}
	got := src.recorded()
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("records %q lack %q", got, w)
		}
	}
}

func TestOutsideRedChecksGoToTheSupervisor(t *testing.T) {
	src := newSource()
	src.script["#1"] = []MergeOutcome{{Reason: state.ReasonChecks, Detail: "failing checks: ci", Checks: []string{"ci"}, Commit: "red-sha", LogPath: "/logs/#1/checks-1.log"}}
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1, MaxSupervisorAttempts: 1}, src)
	src.ch <- []OutsideNode{issueNode(1)}
	close(src.ch)
	sum, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	if st := phaseSummary(t, sum, "#1").State; st != "merged" {
		t.Fatalf("#1 is %s, want merged\n%s", st, fmtEvents(evs))
	}
	sv := h.runner.jobsOf("#1", state.Supervisor)
	if len(sv) != 1 || sv[0].Failure != state.ReasonChecks || sv[0].Since != "red-sha" || len(sv[0].Checks) != 1 || sv[0].FailureLog != "/logs/#1/checks-1.log" {
		t.Fatalf("supervisor jobs = %+v, want one checks repair beyond red-sha", sv)
	}
	if l := src.landsOf("#1"); len(l) != 2 || l[1].Tip != "tip-#1-supervisor-1" {
		t.Fatalf("lands = %+v, want the repaired tip landed again", l)
	}
}

func TestOutsideLandingHoldsNoSlot(t *testing.T) {
	src := newSource()
	hold := make(chan struct{})
	src.hold["#1"] = hold
	src.landing = make(chan string, 4)
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1}, src)
	src.ch <- []OutsideNode{issueNode(1)}
	done := h.start(context.Background())
	// While #1 waits on its checks, #2's agent gets the only slot.
	<-src.landing
	src.ch <- []OutsideNode{issueNode(1), issueNode(2)}
	h.ev.wait(t, "#2 launched while #1 waits on its checks", isLaunch("#2", state.Worker, 1))
	close(hold)
	close(src.ch)
	sum, evs, err := h.await(done)
	if err != nil || phaseSummary(t, sum, "#1").State != "merged" || phaseSummary(t, sum, "#2").State != "merged" {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
}

func TestOutsideAwayIsDropped(t *testing.T) {
	src := newSource()
	src.script["#2"] = []MergeOutcome{{Away: true, Detail: "handed to a human for review"}}
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 2}, src)
	h.runner.on("#1", state.Worker, step{})
	// A claim lost: the runner reports Away.
	h.runner.onRun = nil
	src.ch <- []OutsideNode{issueNode(1), issueNode(2)}
	close(src.ch)
	awayRunner := &awayOn{fakeRunner: h.runner, id: "#1"}
	h.s.runner = awayRunner
	sum, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	for _, p := range sum.Phases {
		if p.ID == "#1" || p.ID == "#2" {
			t.Errorf("%s is still in the graph (%s) after it went away", p.ID, p.State)
		}
	}
	mustFind(t, evs, isEv(EvAway, "#1"))
	mustFind(t, evs, isEv(EvAway, "#2"))
}

// awayOn reports Away for one id (a claim another instance holds).
type awayOn struct {
	*fakeRunner
	id string
}

func (a *awayOn) Run(ctx context.Context, j Job, started func(pgid int)) Outcome {
	if j.ID == a.id {
		return Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, Away: true, Detail: "claimed by another instance"}
	}
	return a.fakeRunner.Run(ctx, j, started)
}

func TestOutsideFailureParksWithoutHalting(t *testing.T) {
	src := newSource()
	src.script["#1"] = []MergeOutcome{{Reason: state.ReasonPR, Detail: "pull request #9 was closed without merging"}}
	text := manifestOf("[pending] **a** — A (deps: none)", "[pending] **b** — B (deps: #1)")
	h := sourceHarness(t, text, Config{MaxParallel: 2, MaxSupervisorAttempts: 2}, src)
	src.ch <- []OutsideNode{issueNode(1)}
	close(src.ch)
	sum, evs, err := h.run(context.Background())
	// Without KEEP_GOING a failed phase halts; a failed issue does not,
	// but what waits on it is parked with it.
	if err == nil || phaseSummary(t, sum, "a").State != "merged" {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	if st := phaseSummary(t, sum, "#1").State; st != "blocked" {
		t.Errorf("#1 is %s, want blocked", st)
	}
	if got := src.recorded(); got[len(got)-1] != "#1 blocked pull request" {
		t.Errorf("records = %q, want #1 blocked with its reason", got)
	}
	if len(h.runner.jobsOf("#1", state.Supervisor)) != 0 {
		t.Error("a supervisor was sent to a closed pull request")
	}
}

// What the loop journals for outside nodes folds (state.History) to the
// states status and explain show them in: merged, away with why, blocked
// with its reason, and a phase parked behind an issue waits on it.
func TestOutsideJournalFoldsToTheirStates(t *testing.T) {
	src := newSource()
	src.script["#2"] = []MergeOutcome{{Away: true, Detail: "handed to a human for review"}}
	src.script["#3"] = []MergeOutcome{{Reason: state.ReasonPR, Detail: "pull request #9 was closed without merging"}}
	text := manifestOf("[pending] **a** — A (deps: none)", "[pending] **b** — B (deps: #3)")
	h := sourceHarness(t, text, Config{MaxParallel: 2, KeepGoing: true}, src)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	jn, err := state.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer jn.Close()
	h.s.jn = jn
	src.ch <- []OutsideNode{issueNode(1), issueNode(2), issueNode(3)}
	close(src.ch)
	if _, evs, err := h.run(context.Background()); err == nil {
		t.Fatalf("run ended well with #3 and b parked\n%s", fmtEvents(evs))
	}
	recs, err := state.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := state.History(recs)
	for id, want := range map[string]manifest.State{"#1": manifest.Merged, "#2": state.Away, "#3": manifest.Blocked} {
		if hist[id] == nil {
			t.Errorf("%s: no journal records", id)
			continue
		}
		if got := hist[id].OutsideState(); got != want || hist[id].WorkerRuns != 1 {
			t.Errorf("%s: %s after %d attempts, want %s after 1", id, got, hist[id].WorkerRuns, want)
		}
	}
	if d := hist["#2"].Detail; d != "handed to a human for review" {
		t.Errorf("#2's detail %q", d)
	}
	if r := hist["#3"].Reason; r != state.ReasonPR {
		t.Errorf("#3's reason %q", r)
	}
	if w := hist["b"].WaitsOn; w != "#3" || state.Culprit(hist, "b") != "#3" {
		t.Errorf("b waits on %q, want #3 (the issue to retry)", w)
	}
}

// TestOutsideResumeTakesItsCounts: an outside node offered with Resume
// (its driver was killed while it ran) gets its attempt counts back from
// the journal, counted since it last ended: an earlier round that ended
// blocked does not count.
func TestOutsideResumeTakesItsCounts(t *testing.T) {
	src := newSource()
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1}, src)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	jn, err := state.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer jn.Close()
	for _, r := range []state.Record{
		// An earlier round: four attempts, then blocked.
		{Phase: "#1", Event: "launch", Role: state.Worker, Attempt: 4},
		{Phase: "#1", Event: "fail", Role: state.Worker, Attempt: 4, Reason: state.ReasonNoDone},
		{Phase: "#1", Event: "blocked", Reason: state.ReasonNoDone},
		// This round, queued again: two attempts, the driver killed in
		// the second.
		{Phase: "#1", Event: "launch", Role: state.Worker, Attempt: 1},
		{Phase: "#1", Event: "fail", Role: state.Worker, Attempt: 1, Reason: state.ReasonNoDone},
		{Phase: "#1", Event: "launch", Role: state.Worker, Attempt: 2},
	} {
		if err := jn.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	h.s.jn = jn
	n := issueNode(1)
	n.Resume = true
	src.ch <- []OutsideNode{n, issueNode(2)}
	close(src.ch)
	if _, evs, err := h.run(context.Background()); err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	if js := h.runner.jobsOf("#1", state.Worker); len(js) != 1 || !js[0].Resume || js[0].Attempt != 3 {
		t.Errorf("#1's jobs %+v, want one, resumed, attempt 3", js)
	}
	if js := h.runner.jobsOf("#2", state.Worker); len(js) != 1 || js[0].Resume || js[0].Attempt != 1 {
		t.Errorf("#2's jobs %+v, want one, fresh, attempt 1", js)
	}
}

// A drained queue's end line counts its issues: a merged one is merged,
// one not started is not.
func TestOutsideDrainCountsIssues(t *testing.T) {
	controls := make(chan Control)
	src := newSource()
	hold := make(chan struct{})
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1, Controls: controls}, src)
	h.runner.on("#1", state.Worker, step{OK: true, Wait: true, Hold: hold})
	h.runner.entered = make(chan Job, 2)
	src.ch <- []OutsideNode{issueNode(1), issueNode(2)}
	ch := h.start(context.Background())
	<-h.runner.entered
	controls <- Control{Drain: true}
	h.ev.wait(t, "drain", isEv(EvDrain, ""))
	close(hold)
	_, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("drain ended with %v", err)
	}
	if end := evs[len(evs)-1]; end.Kind != EvEnd || end.Detail != "drained: 2 merged, 1 not merged" {
		t.Errorf("end %q, want a and #1 merged, #2 not", end.Detail)
	}
}

// TestOutsideWithdrawnStopsItsAgent: the source withdraws a node whose
// agent runs (an issue closed mid-run): the agent is stopped through its
// context, the node is dropped with the source's reason, and it is never
// landed.
func TestOutsideWithdrawnStopsItsAgent(t *testing.T) {
	src := newSource()
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 2}, src)
	started := make(chan struct{})
	h.s.runner = &blockOn{fakeRunner: h.runner, id: "#1", started: started}
	src.ch <- []OutsideNode{issueNode(1)}
	ch := h.start(context.Background())
	<-started
	gone := issueNode(1)
	gone.Away = "the issue was closed (not planned)"
	src.ch <- []OutsideNode{gone}
	close(src.ch)
	sum, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	for _, p := range sum.Phases {
		if p.ID == "#1" {
			t.Errorf("#1 is still in the graph (%s) after it was withdrawn", p.State)
		}
	}
	e := mustFind(t, evs, isEv(EvAway, "#1"))
	if e.Detail != gone.Away {
		t.Errorf("away detail %q, want %q", e.Detail, gone.Away)
	}
	if n := len(src.landsOf("#1")); n != 0 {
		t.Errorf("#1 was landed %d times after it was withdrawn", n)
	}
}

// blockOn runs id's agent until its context is cancelled.
type blockOn struct {
	*fakeRunner
	id      string
	started chan struct{}
}

func (b *blockOn) Run(ctx context.Context, j Job, started func(pgid int)) Outcome {
	if j.ID != b.id {
		return b.fakeRunner.Run(ctx, j, started)
	}
	close(b.started)
	<-ctx.Done()
	return Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, Reason: state.ReasonExit, Detail: "killed"}
}

// An outside node's title and deps are told (EvNode) and journaled when
// it joins the graph and when they change; an offer that changes nothing
// says nothing. A gate's start is journaled for the timeline.
func TestOutsideNodesTold(t *testing.T) {
	src := newSource()
	text := manifestOf("[pending] **a** — A (deps: none)")
	h := sourceHarness(t, text, Config{MaxParallel: 1}, src)
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	jn, err := state.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	defer jn.Close()
	h.s.jn = jn
	renamed := issueNode(1, "a")
	renamed.Title = "issue #1, renamed"
	src.ch <- []OutsideNode{issueNode(1, "a")}
	src.ch <- []OutsideNode{issueNode(1, "a")}
	src.ch <- []OutsideNode{renamed}
	close(src.ch)
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	var told []string
	for _, e := range evs {
		if e.Kind == EvNode {
			told = append(told, e.Phase+" "+e.Title+" "+fmt.Sprint(e.Deps))
		}
	}
	if fmt.Sprint(told) != "[#1 issue #1 [a] #1 issue #1, renamed [a]]" {
		t.Errorf("told %q", told)
	}
	recs, err := state.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := state.History(recs)
	if h := hist["#1"]; h == nil || h.Title != "issue #1, renamed" || fmt.Sprint(h.Deps) != "[a]" || h.Last != "merged" {
		t.Errorf("#1's history: %+v", hist["#1"])
	}
}

// A node of higher priority (a campaign's issue) starts before the
// others, whatever their order and their remaining paths: with one slot,
// #3 (priority 1) goes before #1, which has a dependent, and #2.
func TestOutsidePriorityGoesFirst(t *testing.T) {
	src := newSource()
	h := sourceHarness(t, manifestOf("[merged] **a** — A (deps: none)"), Config{MaxParallel: 1}, src)
	camp := issueNode(3)
	camp.Priority = 1
	src.ch <- []OutsideNode{issueNode(1), issueNode(2), camp, issueNode(4, "#1")}
	close(src.ch)
	_, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	first := indexOf(evs, func(ev Event) bool { return ev.Kind == EvLaunch })
	if first < 0 || evs[first].Phase != "#3" {
		t.Errorf("first launch is not the campaign's #3:\n%s", fmtEvents(evs))
	}
}
