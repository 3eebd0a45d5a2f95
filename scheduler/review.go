package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/review"
	"github.com/claudopilot/claudopilot/state"
)

// Event kinds of the review gate.
const (
	EvReview  = "review"  // a reviewer started (Attempt: its run number, Detail: lenses)
	EvVerdict = "verdict" // a review round was decided (Detail says how)
)

// ReviewConfig turns on the independent review gate (REVIEW_CMD) and
// shapes it.
type ReviewConfig struct {
	On        bool
	Slots     int      // REVIEW_SLOTS: reviewers at once, never lent to workers
	Skeptics  int      // REVIEW_SKEPTICS: reviewers per round
	MaxRounds int      // REVIEW_MAX_ROUNDS
	Lenses    []string // REVIEW_LENSES
}

// Verdict is the review gate's decision on an outside node, which its
// source records (a verdict comment, as the driver's own identity, for
// exactly the tree reviewed) and acts on: PASS lands the node; BLOCKING
// sends a worker with the findings, or, with Last, ends it.
type Verdict struct {
	Pass     bool
	Round    int
	Last     bool // BLOCKING with no round left
	Findings []string
	// Head, Base and Fingerprint are the tree the reviewers read (as they
	// ended); Fingerprint is "" when no reviewer could read it.
	Head, Base, Fingerprint string
}

// ReviewJob asks a Reviewer for one reviewer's verdict on a phase whose
// branch passed the gate.
type ReviewJob struct {
	ID, Title, Doc string
	Gate           string
	Tip            string // the gated tip
	Round          int    // 1-based
	Index, Of      int    // this reviewer among the round's (1-based)
	Lenses         []string
}

// ReviewOutcome is one reviewer's verdict, bound to the head and base the
// driver recomputed when it accepted it.
type ReviewOutcome struct {
	ID          string
	Index       int
	Verdict     review.Verdict
	Head, Base  string
	Fingerprint string
	LogPath     string
	Run         int // the reviewer run's number (numbers its log)
	Err         error
	// Usage is what the reviewer reported spending (the ledger).
	Usage ledger.Usage
}

// Reviewer runs one reviewer and judges its output. It blocks; the
// scheduler calls it from a goroutine and gets the result over a channel.
type Reviewer interface {
	Review(ctx context.Context, j ReviewJob) ReviewOutcome
}

// SetReviewer installs the reviewer the gate uses when cfg.Review.On.
func (s *Scheduler) SetReviewer(r Reviewer) { s.rev.r = r }

// reviewGate is the loop's review state. Only the loop touches it.
type reviewGate struct {
	r       Reviewer
	results chan ReviewOutcome
	queue   []ReviewJob // reviewers waiting for a review slot, in order
	running int         // reviewers in flight
	ph      map[string]*reviewPhase
}

// reviewPhase is one phase's review.
type reviewPhase struct {
	round    int  // the round under way or next, 1-based
	reran    bool // this round was run again once already
	waiting  int  // reviewers of this round queued or running
	outcomes []ReviewOutcome
	// overBudget: a reviewer's spend took the phase over
	// PHASE_MAX_COST_USD.
	overBudget bool
	// head and base the landing must still find: the review holds for
	// exactly those.
	head, base string
	// verdict is an outside node's decision, waiting for its source's
	// landing to record it (startLand hands it over).
	verdict *Verdict
}

func (s *Scheduler) reviewOn() bool { return s.cfg.Review.On && s.rev.r != nil }

func (s *Scheduler) revPhase(p *phase) *reviewPhase {
	if s.rev.ph == nil {
		s.rev.ph = map[string]*reviewPhase{}
	}
	rp := s.rev.ph[p.n.ID]
	if rp == nil {
		rp = &reviewPhase{round: 1}
		s.rev.ph[p.n.ID] = rp
	}
	return rp
}

// inReview is true while p waits for a review slot (a running reviewer
// marks the phase busy).
func (s *Scheduler) inReview(p *phase) bool {
	for _, j := range s.rev.queue {
		if j.ID == p.n.ID {
			return true
		}
	}
	return false
}

// reviewBusy is true while a reviewer runs or waits for a slot.
func (s *Scheduler) reviewBusy() bool { return s.rev.running > 0 || len(s.rev.queue) > 0 }

// landOrReview sends a phase whose branch passed the gate to the merge
// queue, or first to its reviewers when the gate is on. A phase waiting
// for review holds no worker slot.
func (s *Scheduler) landOrReview(p *phase) {
	if p.n.Outside {
		// Its source lands it; with the gate on, the source hands a
		// green head back for the same reviewers (onLanded).
		s.out.queue = append(s.out.queue, p)
		return
	}
	if !s.reviewOn() {
		p.queuedAt = s.now()
		s.mergeQ = append(s.mergeQ, p)
		return
	}
	s.startRound(p)
}

// startRound queues the reviewers of p's current round.
func (s *Scheduler) startRound(p *phase) {
	rp := s.revPhase(p)
	rp.outcomes = nil
	rp.head, rp.base = "", ""
	shares := review.Share(s.cfg.Review.Lenses, s.cfg.Review.Skeptics)
	rp.waiting = len(shares)
	for i, lenses := range shares {
		s.rev.queue = append(s.rev.queue, ReviewJob{
			ID: p.n.ID, Title: p.n.Title, Doc: p.n.Doc, Gate: s.gateOf(p), Tip: p.tip,
			Round: rp.round, Index: i + 1, Of: len(shares), Lenses: lenses,
		})
	}
}

// dispatchReviews starts queued reviewers in the reserved review slots.
func (s *Scheduler) dispatchReviews(ctx context.Context) {
	slots := max(s.cfg.Review.Slots, 1)
	for s.rev.running < slots && len(s.rev.queue) > 0 {
		j := s.rev.queue[0]
		s.rev.queue = s.rev.queue[1:]
		s.rev.running++
		s.byID[j.ID].busy = true
		s.emit(Event{Kind: EvReview, Phase: j.ID, Role: state.ReviewerRole, Attempt: j.Round,
			Detail: fmt.Sprintf("round %d, reviewer %d of %d: %s", j.Round, j.Index, j.Of, strings.Join(j.Lenses, ","))})
		go func() {
			o := s.rev.r.Review(ctx, j)
			o.ID, o.Index = j.ID, j.Index
			s.rev.results <- o
		}()
	}
}

// onReview books one reviewer's verdict; when the round is complete it
// decides: land, rework with the findings, run the round again, or give up.
func (s *Scheduler) onReview(o ReviewOutcome) {
	s.rev.running--
	p := s.byID[o.ID]
	rp := s.revPhase(p)
	rp.waiting--
	rp.outcomes = append(rp.outcomes, o)
	s.record(state.Record{Phase: o.ID, Event: "review", Role: state.ReviewerRole, Attempt: rp.round, Detail: o.Verdict.Kind.String() + " " + o.Verdict.Why, Tip: o.Head, Commit: o.Base, Log: o.LogPath})
	// Reviewers' spend goes to the ledger and the budgets like any
	// agent's.
	if s.book(p, Outcome{ID: o.ID, Role: state.ReviewerRole, Attempt: o.Run, Usage: o.Usage, LogPath: o.LogPath}) {
		rp.overBudget = true
	}
	if rp.waiting > 0 {
		return
	}
	p.busy = false
	// A reviewer that could not run at all gives no verdict; the round
	// reruns once and then blocks, as for any other missing one.
	var vs []review.Verdict
	heads := map[[2]string]bool{}
	for _, x := range rp.outcomes {
		v := x.Verdict
		if x.Err != nil && v.Kind == review.None && v.Why == "" {
			v.Why = x.Err.Error()
		}
		vs = append(vs, v)
		if v.Kind == review.PassKind {
			heads[[2]string{x.Head, x.Base}] = true
		}
	}
	d := review.Decide(review.Round{N: rp.round, MaxRounds: s.cfg.Review.MaxRounds, Reran: rp.reran}, vs)
	if rp.overBudget && d.Action != review.Land {
		// Another round would spend more than PHASE_MAX_COST_USD allows.
		rp.overBudget = false
		s.overBudget(p, Outcome{ID: p.n.ID, Role: state.ReviewerRole, LogPath: o.LogPath})
		return
	}
	if d.Action == review.Land && len(heads) != 1 {
		// The reviewers passed different trees (the base moved between
		// them): none of the passes covers what would land.
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: "the reviewers read different heads or bases; reviewing again"})
		s.startRound(p)
		return
	}
	if p.n.Outside && d.Action != review.Rerun {
		s.handBack(p, rp, d)
		return
	}
	switch d.Action {
	case review.Land:
		for k := range heads {
			rp.head, rp.base = k[0], k[1]
		}
		p.tip = rp.head
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: fmt.Sprintf("PASS in round %d (head %s, base %s)", rp.round, short(rp.head), short(rp.base))})
		s.mergeQ = append(s.mergeQ, p)
	case review.Rerun:
		rp.reran = true
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: fmt.Sprintf("no trusted verdict in round %d (%s); running the round again", rp.round, whyNone(rp.outcomes))})
		s.startRound(p)
	case review.Rework:
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: fmt.Sprintf("BLOCKING in round %d: %s", rp.round, strings.Join(d.Findings, "; "))})
		rp.round++
		rp.reran = false
		s.record(state.Record{Phase: p.n.ID, Event: "review-round", Role: state.ReviewerRole, Attempt: rp.round})
		p.reason, p.detail = state.ReasonReview, strings.Join(d.Findings, "; ")
		p.next = &Job{Role: state.Worker, Findings: d.Findings}
	case review.Exhausted:
		detail := fmt.Sprintf("still BLOCKING after %d round(s): %s", rp.round, strings.Join(d.Findings, "; "))
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: detail})
		if o.LogPath != "" {
			p.logPath = o.LogPath
		}
		s.record(state.Record{Phase: p.n.ID, Event: "fail", Reason: state.ReasonReview, Detail: detail, Log: p.logPath})
		s.giveUp(p, state.ReasonReview, detail)
	}
}

// handBack gives an outside node's review decision to its source's
// landing, which records the verdict on the pull request and then lands
// the node, sends it back to a worker or ends it (onLanded). The round
// counts once the source has recorded it.
func (s *Scheduler) handBack(p *phase, rp *reviewPhase, d review.Decision) {
	v := &Verdict{Pass: d.Action == review.Land, Round: rp.round, Last: d.Action == review.Exhausted, Findings: d.Findings}
	want := review.BlockingKind
	if v.Pass {
		want = review.PassKind
	}
	// The tree the verdict is on: a reviewer's who gave that verdict,
	// else any reviewer's that read one.
	for _, x := range rp.outcomes {
		if x.Head != "" && (v.Head == "" || x.Verdict.Kind == want) {
			v.Head, v.Base, v.Fingerprint = x.Head, x.Base, x.Fingerprint
		}
	}
	switch d.Action {
	case review.Land:
		p.tip = v.Head
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: fmt.Sprintf("PASS in round %d (head %s, base %s)", rp.round, short(v.Head), short(v.Base))})
	case review.Rework:
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: fmt.Sprintf("BLOCKING in round %d: %s", rp.round, strings.Join(d.Findings, "; "))})
	case review.Exhausted:
		s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: fmt.Sprintf("still BLOCKING after %d round(s): %s", rp.round, strings.Join(d.Findings, "; "))})
	}
	rp.verdict = v
	s.out.queue = append(s.out.queue, p)
}

// reviewedAgain books a review round an outside node's source recorded
// as BLOCKING with rounds left: the next round, and a worker with the
// findings.
func (s *Scheduler) reviewedAgain(p *phase, findings []string) {
	rp := s.revPhase(p)
	rp.round++
	rp.reran = false
	s.record(state.Record{Phase: p.n.ID, Event: "review-round", Role: state.ReviewerRole, Attempt: rp.round})
	p.reason, p.detail = state.ReasonReview, strings.Join(findings, "; ")
	p.next = &Job{Role: state.Worker, Findings: findings}
	p.notBefore = time.Time{}
}

// forgetReview drops a node's review state: it starts over (retried, or
// gone from the graph).
func (s *Scheduler) forgetReview(p *phase) { delete(s.rev.ph, p.n.ID) }

// reviewStale sends a phase back to its reviewers: the base or branch
// moved after the review, so it no longer covers what would land. This
// round is not spent.
func (s *Scheduler) reviewStale(p *phase, detail string) {
	rp := s.revPhase(p)
	rp.reran = false
	s.emit(Event{Kind: EvVerdict, Phase: p.n.ID, Detail: "the review is stale (" + detail + "); reviewing again"})
	s.startRound(p)
}

// reviewed is the head and base the review of p passed, for the merge.
func (s *Scheduler) reviewed(p *phase) (head, base string) {
	if !s.reviewOn() {
		return "", ""
	}
	rp := s.revPhase(p)
	return rp.head, rp.base
}

// drainReviews waits for reviewers in flight after a cancel.
func (s *Scheduler) drainReviews() {
	s.rev.queue = nil
	for s.rev.running > 0 {
		o := <-s.rev.results
		s.rev.running--
		if p := s.byID[o.ID]; p != nil {
			p.busy = false
		}
	}
}

// giveUp fails a phase for good: parked under keep-going, else [failed]
// and the run halts.
func (s *Scheduler) giveUp(p *phase, r state.Reason, detail string) {
	p.reason, p.detail = r, detail
	if s.cfg.KeepGoing || p.n.Outside {
		// An outside node never halts the run: its source records why
		// it stopped, as the queue always has.
		s.park(p)
		return
	}
	if err := s.setState(p, manifest.Failed); err != nil {
		s.fatal = err
	}
	s.record(state.Record{Phase: p.n.ID, Event: "failed", Reason: r})
	s.emit(Event{Kind: EvFailed, Phase: p.n.ID, State: string(manifest.Failed), Reason: r, Detail: detail, LogPath: p.logPath})
	if s.halt == nil {
		s.halt = &HaltError{ID: p.n.ID, Reason: r, LogPath: p.logPath, NoDone: p.noDone}
		s.emit(Event{Kind: EvHalt, Phase: p.n.ID, Reason: r, Detail: "no new launches; running phases finish and merge"})
	}
}

func whyNone(os []ReviewOutcome) string {
	var why []string
	for _, o := range os {
		if o.Verdict.Kind == review.None {
			w := o.Verdict.Why
			if w == "" && o.Err != nil {
				w = o.Err.Error()
			}
			if !slices.Contains(why, w) {
				why = append(why, w)
			}
		}
	}
	return strings.Join(why, "; ")
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// restoreReviews brings back the review round of a phase the driver died
// during, so REVIEW_MAX_ROUNDS holds across restarts. A phase that landed,
// failed, was parked or was flipped back by a human starts over.
func (s *Scheduler) restoreReviews(recs []state.Record) {
	rounds := map[string]int{}
	for _, r := range recs {
		switch r.Event {
		case "review-round":
			rounds[r.Phase] = r.Attempt
		case "merged", "failed", "blocked", "retry":
			delete(rounds, r.Phase)
		}
	}
	for id, n := range rounds {
		if p := s.byID[id]; p != nil && p.state == manifest.Running && n > 1 {
			s.revPhase(p).round = n
		}
	}
}
