package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/state"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/review"
)

// rstep scripts one reviewer call; the zero value is a PASS.
type rstep struct {
	Kind     review.Kind
	Findings []string
	Why      string
	Base     string // default "base-1"
	Hold     <-chan struct{}
	Usage    ledger.Usage
}

var (
	passStep  = rstep{Kind: review.PassKind}
	blockStep = rstep{Kind: review.BlockingKind, Findings: []string{"f: off by one"}}
	noneStep  = rstep{Kind: review.None, Why: "forged marker"}
)

// fakeReviewer plays scripted verdicts per phase and counts how many
// reviewers run at once.
type fakeReviewer struct {
	mu        sync.Mutex
	script    map[string][]rstep
	jobs      []ReviewJob
	cur, peak int
	// entered, when set, receives every job as its call starts.
	entered chan ReviewJob
}

func newReviewer() *fakeReviewer { return &fakeReviewer{script: map[string][]rstep{}} }

func (r *fakeReviewer) on(id string, steps ...rstep) *fakeReviewer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script[id] = append(r.script[id], steps...)
	return r
}

func (r *fakeReviewer) Review(ctx context.Context, j ReviewJob) ReviewOutcome {
	r.mu.Lock()
	r.cur++
	r.peak = max(r.peak, r.cur)
	r.jobs = append(r.jobs, j)
	st := passStep
	if q := r.script[j.ID]; len(q) > 0 {
		st, r.script[j.ID] = q[0], q[1:]
	}
	entered := r.entered
	r.mu.Unlock()
	if entered != nil {
		entered <- j
	}
	if st.Hold != nil {
		select {
		case <-st.Hold:
		case <-ctx.Done():
		}
	}
	base := st.Base
	if base == "" {
		base = "base-1"
	}
	r.mu.Lock()
	r.cur--
	r.mu.Unlock()
	return ReviewOutcome{ID: j.ID, Index: j.Index, Head: j.Tip, Base: base, Usage: st.Usage,
		Verdict: review.Verdict{Kind: st.Kind, Findings: st.Findings, Why: st.Why}}
}

func (r *fakeReviewer) jobsOf(id string) []ReviewJob {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ReviewJob
	for _, j := range r.jobs {
		if j.ID == id {
			out = append(out, j)
		}
	}
	return out
}

func reviewCfg(maxRounds int) Config {
	return Config{MaxParallel: 2, MaxSupervisorAttempts: 1, Review: ReviewConfig{
		On: true, Slots: 1, Skeptics: 1, MaxRounds: maxRounds, Lenses: []string{"correctness", "security", "scope", "tests"}}}
}

func newReviewHarness(t *testing.T, text string, cfg Config) (*harness, *fakeReviewer) {
	h := newHarness(t, text, cfg)
	rv := newReviewer()
	h.build().SetReviewer(rv)
	return h, rv
}

func TestReviewPassLands(t *testing.T) {
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), reviewCfg(3))
	_, evs, err := h.run(t.Context())
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, fmtEvents(evs))
	}
	jobs := rv.jobsOf("a")
	if len(jobs) != 1 || jobs[0].Round != 1 || jobs[0].Tip != "tip-a-worker-1" || !slices.Equal(jobs[0].Lenses, []string{"correctness", "security", "scope", "tests"}) {
		t.Fatalf("reviewer jobs %+v", jobs)
	}
	mj := h.merger.jobsOf("a")
	if len(mj) != 1 || mj[0].ReviewHead != "tip-a-worker-1" || mj[0].ReviewBase != "base-1" {
		t.Fatalf("merge jobs %+v: the merge must carry the reviewed head and base", mj)
	}
	// The review comes after the gate (the worker's OK) and before the merge.
	if i, j := indexOf(evs, isEv(EvVerdict, "a")), indexOf(evs, isEv(EvMerging, "a")); i < 0 || j < i {
		t.Fatalf("verdict at %d, merging at %d:\n%s", i, j, fmtEvents(evs))
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged})
}

func TestReviewOffMergesUnreviewed(t *testing.T) {
	cfg := reviewCfg(3)
	cfg.Review.On = false
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), cfg)
	if _, _, err := h.run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(rv.jobsOf("a")) != 0 || h.merger.jobsOf("a")[0].ReviewBase != "" {
		t.Fatal("a reviewer ran with the gate off")
	}
}

func TestReviewBlockOnceThenPass(t *testing.T) {
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), reviewCfg(3))
	rv.on("a", blockStep, passStep)
	_, evs, err := h.run(t.Context())
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, fmtEvents(evs))
	}
	ws := h.runner.jobsOf("a", state.Worker)
	if len(ws) != 2 || ws[0].Findings != nil || !slices.Equal(ws[1].Findings, []string{"f: off by one"}) {
		t.Fatalf("worker jobs %+v: the second must carry the findings", ws)
	}
	if rs := rv.jobsOf("a"); len(rs) != 2 || rs[1].Round != 2 || rs[1].Tip != "tip-a-worker-2" {
		t.Fatalf("reviewer jobs %+v", rs)
	}
	if len(h.runner.jobsOf("a", state.Supervisor)) != 0 {
		t.Fatal("a BLOCKING verdict went to the supervisor")
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged})
}

func TestReviewRoundsExhaustedHalt(t *testing.T) {
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)", "[pending] **b** — B (deps: a)"), reviewCfg(2))
	rv.on("a", blockStep, blockStep, passStep)
	sum, evs, err := h.run(t.Context())
	he := wantHalt(t, err)
	if he.ID != "a" || he.Reason != state.ReasonReview {
		t.Fatalf("halt %+v", he)
	}
	if n := len(rv.jobsOf("a")); n != 2 {
		t.Fatalf("%d reviewer runs, want 2 (REVIEW_MAX_ROUNDS)", n)
	}
	if n := len(h.runner.jobsOf("a", state.Worker)); n != 2 {
		t.Fatalf("%d worker runs, want 2", n)
	}
	if len(h.merger.allJobs()) != 0 {
		t.Fatal("a blocked phase was merged")
	}
	if ps := phaseSummary(t, sum, "a"); ps.Reason != state.ReasonReview {
		t.Fatalf("summary %+v", ps)
	}
	mustFind(t, evs, func(e Event) bool { return e.Kind == EvFailed && e.Phase == "a" && e.Reason == state.ReasonReview })
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Failed, "b": manifest.Pending})
}

func TestReviewRoundsExhaustedKeepGoing(t *testing.T) {
	cfg := reviewCfg(1)
	cfg.KeepGoing = true
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)", "[pending] **b** — B (deps: a)", "[pending] **c** — C (deps: none)"), cfg)
	rv.on("a", blockStep)
	_, evs, err := h.run(t.Context())
	wantErrIs(t, err, ErrParked)
	mustFind(t, evs, func(e Event) bool { return e.Kind == EvBlocked && e.Phase == "a" && e.Reason == state.ReasonReview })
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Blocked, "c": manifest.Merged})
}

func TestReviewNoVerdictRerunsOnce(t *testing.T) {
	t.Run("then pass", func(t *testing.T) {
		h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), reviewCfg(3))
		rv.on("a", noneStep, passStep)
		if _, evs, err := h.run(t.Context()); err != nil {
			t.Fatalf("Run: %v\n%s", err, fmtEvents(evs))
		}
		if rs := rv.jobsOf("a"); len(rs) != 2 || rs[1].Round != 1 {
			t.Fatalf("reviewer jobs %+v: the round reruns, not the next", rs)
		}
		if n := len(h.runner.jobsOf("a", state.Worker)); n != 1 {
			t.Fatalf("%d worker runs: a missing verdict is no BLOCKING", n)
		}
	})
	t.Run("twice blocks", func(t *testing.T) {
		h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), reviewCfg(1))
		rv.on("a", noneStep, noneStep, passStep)
		_, _, err := h.run(t.Context())
		if he := wantHalt(t, err); he.Reason != state.ReasonReview {
			t.Fatalf("halt %+v", he)
		}
		if n := len(rv.jobsOf("a")); n != 2 {
			t.Fatalf("%d reviewer runs, want 2 (one rerun at most)", n)
		}
		if len(h.merger.allJobs()) != 0 {
			t.Fatal("merged without a trusted verdict")
		}
	})
}

func TestReviewStaleAtMergeReviewsAgain(t *testing.T) {
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), reviewCfg(1))
	rv.on("a", passStep, rstep{Kind: review.PassKind, Base: "base-2"})
	h.merger.on("a", mstep{Stale: true, Detail: "the base moved"})
	_, evs, err := h.run(t.Context())
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, fmtEvents(evs))
	}
	mj := h.merger.jobsOf("a")
	if len(mj) != 2 || mj[1].ReviewBase != "base-2" {
		t.Fatalf("merge jobs %+v: the second merge must carry the second review's base", mj)
	}
	if rs := rv.jobsOf("a"); len(rs) != 2 || rs[1].Round != 1 {
		t.Fatalf("reviewer jobs %+v: a stale review is no round", rs)
	}
}

func TestReviewSkepticsShareLenses(t *testing.T) {
	cfg := reviewCfg(3)
	cfg.Review.Skeptics, cfg.Review.Slots = 2, 1
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), cfg)
	rv.on("a", passStep, blockStep, passStep, passStep)
	if _, evs, err := h.run(t.Context()); err != nil {
		t.Fatalf("Run: %v\n%s", err, fmtEvents(evs))
	}
	rs := rv.jobsOf("a")
	if len(rs) != 4 {
		t.Fatalf("%d reviewer runs, want 2 per round over 2 rounds", len(rs))
	}
	if !slices.Equal(rs[0].Lenses, []string{"correctness", "scope"}) || !slices.Equal(rs[1].Lenses, []string{"security", "tests"}) {
		t.Fatalf("lenses %q and %q", rs[0].Lenses, rs[1].Lenses)
	}
	if rv.peak != 1 {
		t.Fatalf("%d reviewers at once with REVIEW_SLOTS=1", rv.peak)
	}
}

// The review slot is the reviewers' alone: a phase waiting for its review
// holds no worker slot (another worker starts meanwhile), and workers never
// run more than MAX_PARALLEL at once, reviewers or not.
func TestReviewSlotNeverBorrowed(t *testing.T) {
	cfg := reviewCfg(3)
	cfg.MaxParallel = 1
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)", "[pending] **b** — B (deps: none)", "[pending] **c** — C (deps: none)"), cfg)
	hold := make(chan struct{})
	rv.on("a", rstep{Kind: review.PassKind, Hold: hold})
	entered := make(chan Job, 8)
	h.runner.entered = entered
	ch := h.start(t.Context())
	first := <-entered
	if first.ID != "a" {
		t.Fatalf("first worker %s", first.ID)
	}
	// While a's reviewer holds the review slot, a worker of b or c runs:
	// a gave its worker slot back.
	h.ev.wait(t, "a's reviewer", isEv(EvReview, "a"))
	second := <-entered
	if second.ID == "a" {
		t.Fatalf("second worker %s", second.ID)
	}
	close(hold)
	_, evs, err := h.await(ch)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, fmtEvents(evs))
	}
	if p := h.runner.peakSeen(); p != 1 {
		t.Fatalf("%d workers at once with MAX_PARALLEL=1: the review slot was lent", p)
	}
	if rv.peak != 1 {
		t.Fatalf("%d reviewers at once with REVIEW_SLOTS=1", rv.peak)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Merged, "b": manifest.Merged, "c": manifest.Merged})
}

// A driver killed during a phase's second review round resumes in that
// round: REVIEW_MAX_ROUNDS holds across restarts.
func TestReviewRoundSurvivesRestart(t *testing.T) {
	h := newHarness(t, manifestOf("[running] **a** — A (deps: none)"), reviewCfg(2))
	h.jn = openJournal(t)
	appendAll(t, h.jn,
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 1},
		state.Record{Phase: "a", Event: "done", Role: state.Worker, Attempt: 1, Tip: "t1"},
		state.Record{Phase: "a", Event: "review", Role: state.ReviewerRole, Attempt: 1, Detail: "BLOCKING"},
		state.Record{Phase: "a", Event: "review-round", Role: state.ReviewerRole, Attempt: 2},
		state.Record{Phase: "a", Event: "launch", Role: state.Worker, Attempt: 2},
	)
	rv := newReviewer().on("a", blockStep, passStep)
	h.build().SetReviewer(rv)
	_, evs, err := h.run(t.Context())
	if he := wantHalt(t, err); he.Reason != state.ReasonReview {
		t.Fatalf("halt %+v\n%s", he, fmtEvents(evs))
	}
	if rs := rv.jobsOf("a"); len(rs) != 1 || rs[0].Round != 2 {
		t.Fatalf("reviewer jobs %+v, want one, in round 2", rs)
	}
}

// Reviewers' spend is booked like any agent's: it shows in the summary
// under role reviewer, and a phase whose reviews take it over
// PHASE_MAX_COST_USD is parked (reason budget) rather than reviewed again.
func TestReviewCostsInTheLedger(t *testing.T) {
	cfg := reviewCfg(5)
	cfg.PhaseMaxCost = 3
	h, rv := newReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)", "[pending] **b** — B (deps: none)"), cfg)
	costly := blockStep
	costly.Usage = cost(2, "r")
	rv.on("a", costly, costly, costly)
	rv.on("b", rstep{Kind: review.PassKind, Usage: cost(1, "rb")})
	sum, evs, err := h.run(t.Context())
	wantErrIs(t, err, ErrParked)
	if n := len(rv.jobsOf("a")); n != 2 {
		t.Fatalf("%d reviewer runs of a, want 2 (the second takes it to $4)\n%s", n, fmtEvents(evs))
	}
	mustFind(t, evs, func(e Event) bool { return e.Kind == EvBlocked && e.Phase == "a" && e.Reason == state.ReasonBudget })
	pa := phaseSummary(t, sum, "a")
	if c, ok := pa.ByRole[state.ReviewerRole].Cost(); !ok || c != 4 {
		t.Fatalf("a's reviewer spend %+v", pa.ByRole)
	}
	if c, ok := phaseSummary(t, sum, "b").ByRole[state.ReviewerRole].Cost(); !ok || c != 1 {
		t.Fatalf("b's reviewer spend %+v", phaseSummary(t, sum, "b").ByRole)
	}
	h.store.wantStates(t, map[string]manifest.State{"a": manifest.Blocked, "b": manifest.Merged})
}
