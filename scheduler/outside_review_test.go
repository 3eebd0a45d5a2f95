package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/state"
)

// reviewingSource lands as the issue queue does with the review gate on:
// a green head goes back to the loop's reviewers (Review), and a verdict
// is recorded and acted on: PASS merges, BLOCKING with rounds left goes
// back to a worker beyond the reviewed head, the last BLOCKING ends the
// node. stale, when set, makes the first verdict find the tree moved.
type reviewingSource struct {
	*fakeSource
	stale bool
}

func (f *reviewingSource) Land(ctx context.Context, j MergeJob) MergeOutcome {
	v := j.Verdict
	f.mu.Lock()
	f.lands = append(f.lands, j)
	stale := f.stale && v != nil
	if stale {
		f.stale = false
	}
	handed := f.landing
	f.mu.Unlock()
	head := "green-" + j.Tip
	if handed != nil && v == nil && j.ReviewFirst {
		defer func() { handed <- j.ID }()
	}
	switch {
	case v == nil && j.ReviewFirst:
		return MergeOutcome{ID: j.ID, Review: true, Commit: head}
	case v == nil || v.Pass:
		return MergeOutcome{ID: j.ID, OK: true, Commit: "merged-" + j.Tip}
	case stale:
		return MergeOutcome{ID: j.ID, Stale: true, Commit: j.Tip, Detail: "the base moved"}
	case v.Last:
		return MergeOutcome{ID: j.ID, Reason: state.ReasonReview, Detail: fmt.Sprintf("still BLOCKING after %d round(s): %s", v.Round, strings.Join(v.Findings, "; "))}
	}
	return MergeOutcome{ID: j.ID, Reason: state.ReasonReview, Commit: v.Head, Checks: v.Findings, Detail: "BLOCKING"}
}

func outsideReviewHarness(t *testing.T, text string, cfg Config, src *reviewingSource) (*harness, *fakeReviewer) {
	t.Helper()
	h := sourceHarness(t, text, cfg, src.fakeSource)
	h.s.SetSource(src)
	rv := newReviewer()
	h.s.SetReviewer(rv)
	return h, rv
}

// The loop's review gate reviews issues too, with the same REVIEW_SLOTS
// pool as phases: a phase and an issue green at once are reviewed one
// after the other (REVIEW_SLOTS=1), the issue's source gets the PASS to
// record before it merges. The queue used to review its issues itself,
// beside the loop's reviewers, with a pool of its own.
func TestOutsideReviewedByTheLoop(t *testing.T) {
	t.Parallel()
	src := &reviewingSource{fakeSource: newSource()}
	h, rv := outsideReviewHarness(t, manifestOf("[pending] **a** — A (deps: none)"), reviewCfg(3), src)
	// a's reviewer runs until #1's green head has been handed back.
	hold := make(chan struct{})
	rv.on("a", rstep{Kind: review.PassKind, Hold: hold})
	src.landing = make(chan string, 4)
	src.ch <- []OutsideNode{issueNode(1)}
	close(src.ch)
	done := h.start(context.Background())
	h.ev.wait(t, "a under review", isEv(EvReview, "a"))
	<-src.landing
	close(hold)
	sum, evs, err := h.await(done)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	if rv.peak != 1 {
		t.Errorf("%d reviewers at once, REVIEW_SLOTS is 1", rv.peak)
	}
	if j := rv.jobsOf("#1"); len(j) != 1 || j[0].Tip != "green-tip-#1-worker-1" || j[0].Round != 1 {
		t.Fatalf("reviewer jobs for #1: %+v (the loop must review the issue's green head)", j)
	}
	l := src.landsOf("#1")
	if len(l) != 2 || !l[0].ReviewFirst || l[0].Verdict != nil || l[1].Verdict == nil || !l[1].Verdict.Pass || l[1].Verdict.Round != 1 {
		t.Fatalf("lands %+v: want the green head handed back, then the PASS to record", l)
	}
	for _, id := range []string{"a", "#1"} {
		if st := phaseSummary(t, sum, id).State; st != "merged" {
			t.Errorf("%s is %s\n%s", id, st, fmtEvents(evs))
		}
	}
}

// A BLOCKING verdict on an issue: the source records it, the worker takes
// the findings beyond the reviewed head, and the next round is counted
// once it was recorded; the last round's BLOCKING ends the issue (parked,
// never halting the run). A stale verdict (the tree moved under the
// reviewers) spends no round.
func TestOutsideReviewRounds(t *testing.T) {
	t.Parallel()
	src := &reviewingSource{fakeSource: newSource(), stale: true}
	h, rv := outsideReviewHarness(t, manifestOf("[merged] **a** — A (deps: none)"), reviewCfg(2), src)
	rv.on("#1", blockStep, blockStep, blockStep)
	src.ch <- []OutsideNode{issueNode(1)}
	close(src.ch)
	sum, evs, err := h.run(context.Background())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, fmtEvents(evs))
	}
	if st := phaseSummary(t, sum, "#1").State; st != string(manifest.Blocked) {
		t.Fatalf("#1 is %s, want blocked\n%s", st, fmtEvents(evs))
	}
	var rounds []int
	for _, j := range rv.jobsOf("#1") {
		rounds = append(rounds, j.Round)
	}
	// Round 1 (stale: reviewed again, still round 1), round 1, round 2.
	if !slices.Equal(rounds, []int{1, 1, 2}) {
		t.Errorf("review rounds %v, want [1 1 2]", rounds)
	}
	w := h.runner.jobsOf("#1", state.Worker)
	if len(w) != 2 || !slices.Equal(w[1].Findings, []string{"f: off by one"}) || w[1].Since != "green-tip-#1-worker-1" {
		t.Fatalf("workers %+v: want the second with the findings, beyond the reviewed head", w)
	}
	l := src.landsOf("#1")
	last := l[len(l)-1]
	if last.Verdict == nil || last.Verdict.Pass || !last.Verdict.Last || last.Verdict.Round != 2 {
		t.Fatalf("last land %+v: want the last BLOCKING to record", last)
	}
	if got := src.recorded(); !slices.Contains(got, "#1 blocked review") {
		t.Errorf("records %q: want #1 blocked for review", got)
	}
}
