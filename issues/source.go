package issues

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// Source is the queue as a source of the one scheduler's nodes: it polls
// GitHub and offers each eligible issue as a node "#N"; the scheduler runs
// it with the same slots, runner, journal and supervisor as a phase, and
// hands it back to Land (outside.go) once its agent's work is gated. The
// claim is taken when the scheduler first launches the issue (Runner), so
// an issue waiting for a slot stays free for other instances.
type Source struct {
	q    *Queue
	ch   chan []scheduler.OutsideNode
	kick chan struct{}
	done chan struct{} // closed when polling has ended

	mu      sync.Mutex
	held    map[int]int64    // claimed by this driver and not yet ended: the round
	mine    map[int]bool     // claimed, tried or resumed in this run
	blocked map[int]bool     // ended blocked in this run: offered again only as a retry
	ended   map[int]bool     // ended by this driver, still held until that is on GitHub
	err     error            // why polling gave up (--once)
	asks    map[int]*openAsk // open questions of its issues' agents (ask.go)
}

var _ scheduler.Source = (*Source)(nil)

// Source starts polling (every Poll, and at once after an issue ends) and
// returns the source. It first prepares the repository (Start), waiting
// for a GitHub that is unavailable unless Once. With Once it closes its
// nodes when a poll finds nothing to offer and nothing it claimed is still
// worked on.
func (q *Queue) Source(ctx context.Context) *Source {
	s := &Source{q: q, ch: make(chan []scheduler.OutsideNode), kick: make(chan struct{}, 1), done: make(chan struct{}), held: map[int]int64{}, mine: map[int]bool{}, blocked: map[int]bool{}, ended: map[int]bool{}}
	go s.run(ctx)
	return s
}

// Nodes implements scheduler.Source.
func (s *Source) Nodes() <-chan []scheduler.OutsideNode { return s.ch }

// Land implements scheduler.Source (see Queue.Land).
func (s *Source) Land(ctx context.Context, j scheduler.MergeJob) scheduler.MergeOutcome {
	m := s.q.Land(ctx, j)
	if m.Away {
		s.end(j.ID, false)
	}
	return m
}

// Record implements scheduler.Source (see Queue.Record).
func (s *Source) Record(id string, st manifest.State, n scheduler.Note) {
	switch st {
	case manifest.Merged, manifest.Blocked, manifest.Failed:
		s.ending(id) // before the landing is forgotten: checkHeld skips it
	}
	s.q.Record(id, st, n)
	switch st {
	case manifest.Merged:
		s.end(id, false)
	case manifest.Blocked, manifest.Failed:
		s.end(id, true)
	}
}

// Working is true while the source polls: an issue not yet done may
// still be worked.
func (s *Source) Working() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Done is closed when polling has ended.
func (s *Source) Done() <-chan struct{} { return s.done }

// Err is why polling gave up, if it did.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// end books that this driver is done with issue id. The issue stays held
// until what Record queued for it is on GitHub (the bookkeeping runs its
// tasks in order): a poll in between would take our own claim for a
// stale one. Then it polls again.
func (s *Source) end(id string, blocked bool) {
	n, ok := ParseIssueID(id)
	if !ok {
		return
	}
	s.ending(id)
	s.mu.Lock()
	delete(s.asks, n)
	s.mu.Unlock()
	s.q.keep(n, "the end of the claim", func(context.Context) error {
		s.mu.Lock()
		delete(s.held, n)
		delete(s.ended, n)
		if blocked {
			s.blocked[n] = true
		}
		s.mu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return nil
	})
}

// ending marks issue id as ended by this driver, before its end is on
// GitHub: checkHeld leaves it alone (our own merge closes it).
func (s *Source) ending(id string) {
	if n, ok := ParseIssueID(id); ok {
		s.mu.Lock()
		s.ended[n] = true
		s.mu.Unlock()
	}
}

func (s *Source) isEnding(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[n]
}

func (s *Source) holds(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[n]
	return ok
}

func (s *Source) isMine(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mine[n]
}

// adopt takes back issue n, which an earlier run of this clone claimed in
// round and never ended (it was killed): held with that round, so the
// runner takes no new claim, and the heartbeat and the end comment name
// the earlier run's round. False if this run has it already.
func (s *Source) adopt(ctx context.Context, n int, round int64) bool {
	s.mu.Lock()
	if _, ok := s.held[n]; ok || s.mine[n] {
		s.mu.Unlock()
		return false
	}
	s.held[n], s.mine[n] = round, true
	s.mu.Unlock()
	s.q.Claimed(ctx, IssueID(n), round)
	return true
}

// run polls until ctx ends or, with Once, the queue is worked.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	defer close(s.ch)
	q := s.q
	if err := q.startWaiting(ctx); err != nil {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		return
	}
	q.logf("queue %s: base %s, instance %s, %s", q.gh.Repo(), q.cfg.Base, q.instance, map[bool]string{true: "once", false: fmt.Sprintf("polling every %s", q.cfg.Poll)}[q.cfg.Once])
	st := &pollState{skipLogged: map[int]string{}, waitLogged: map[int]string{}}
	t := time.NewTicker(q.cfg.Poll)
	defer t.Stop()
	failures := 0
	for {
		before := s.heldNow()
		nodes, err := q.poll(ctx, st, pollHooks{
			held:  func(n int) bool { _, ok := before[n]; return ok },
			live:  s.holds,
			mine:  s.isMine,
			adopt: s.adopt,
		})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			failures++
			q.logf("poll: %v", err)
			if q.cfg.Once && failures >= 3 && len(s.heldNow()) == 0 {
				s.mu.Lock()
				s.err = fmt.Errorf("queue: %d polls in a row failed: %w", failures, err)
				s.mu.Unlock()
				return
			}
		default:
			failures = 0
			q.refill(ctx, st, s.holds)
		}
		gone := append(s.checkHeld(ctx, before), s.answers(ctx)...)
		if err == nil || len(nodes) > 0 || len(gone) > 0 {
			s.retries(nodes)
			for _, nd := range nodes {
				if n, ok := ParseIssueID(nd.ID); ok {
					q.clearAway(n) // queued again: a new round
				}
			}
			nodes = append(nodes, gone...)
			select {
			case s.ch <- nodes:
			case <-ctx.Done():
				return
			}
		}
		// Done only if nothing was held before the poll either: an issue
		// held then was not offered, and may be free again now (a claim
		// that failed).
		if err == nil && q.cfg.Once && len(nodes) == 0 && len(before) == 0 && len(s.heldNow()) == 0 {
			sum := q.Summary()
			q.logf("queue worked: %d merged, %d for review, %d blocked", sum.Count(Merged), sum.Count(Review), sum.Count(Blocked))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
	}
}

// checkHeld reads the state of every issue this driver held when the poll
// began (one conditional request each) and withdraws, from the
// scheduler, those that went away meanwhile: closed, transferred (301, or
// 404 where the token cannot read the target), or taken out of the queue
// by a maintainer. Their agents are stopped, nothing of theirs is pushed,
// and an open pull request is closed (Queue.goneAway).
func (s *Source) checkHeld(ctx context.Context, held map[int]int64) []scheduler.OutsideNode {
	q := s.q
	var out []scheduler.OutsideNode
	for _, n := range slices.Sorted(maps.Keys(held)) {
		if !s.holds(n) || s.isEnding(n) || q.awayWhy(n) != "" || q.landingNow(n) {
			continue // ended meanwhile, withdrawn already, or its landing watches it
		}
		why := ""
		is, err := q.gh.Issue(ctx, n)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			why = goneWhy(err) // any other error: unknown, read again next poll
		default:
			why = q.goneState(is)
		}
		if why == "" || !s.holds(n) || s.isEnding(n) || q.landingNow(n) {
			continue
		}
		q.goneAway(n, why)
		out = append(out, scheduler.OutsideNode{ID: IssueID(n), Away: why})
		s.end(IssueID(n), false)
	}
	return out
}

// retries marks the offered issues this run ended blocked: a human
// relabelled them ready, so they start over.
func (s *Source) retries(nodes []scheduler.OutsideNode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range nodes {
		n, _ := ParseIssueID(nodes[i].ID)
		if s.blocked[n] {
			nodes[i].Retry = true
			delete(s.blocked, n)
		}
	}
}

// heldNow lists the issues this driver holds, with their rounds.
func (s *Source) heldNow() map[int]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]int64, len(s.held))
	for n, r := range s.held {
		out[n] = r
	}
	return out
}

// Release gives back every claim this driver still holds (after an
// interrupt), through the bookkeeping (Queue.Release): a release comment
// and the labels back to READY_LABEL.
func (s *Source) Release(why string) {
	held := s.heldNow()
	ns := make([]int, 0, len(held))
	for n := range held {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	for _, n := range ns {
		s.q.Release(IssueID(n), why)
	}
}

// node is issue is as the scheduler's node; deps are its edges.
func (q *Queue) node(is *Issue, deps []string) scheduler.OutsideNode {
	n := is.Number
	nd := scheduler.OutsideNode{ID: IssueID(n), Title: is.Title, Deps: deps, Work: scheduler.OutsideWork{
		Branch: Branch(n),
		From:   "refs/remotes/" + q.cfg.Remote + "/" + q.cfg.Base,
		Base:   q.cfg.Base,
		DocRel: filepath.ToSlash(filepath.Join(".claudopilot", fmt.Sprintf("issue-%d.md", n))),
		Doc:    []byte(fmt.Sprintf("# %s: %s\n\n%s\n", IssueID(n), is.Title, strings.TrimSpace(is.Body))),
		Prompt: "issue-",
		Number: n,
		URL:    is.URL,
	}}
	if lane, _, ok := q.cfg.laneOf(is); ok {
		nd.Lane = lane
	} else if lane != "" {
		q.logIssue(n, "label %s%s names no lane in LANES: any lane runs it", LaneLabel, lane)
	}
	return nd
}

func (q *Queue) noteReleased(n int) {
	q.sumMu.Lock()
	defer q.sumMu.Unlock()
	q.sum.Released = append(q.sum.Released, n)
}

func (q *Queue) noteSkipped(n int) {
	q.sumMu.Lock()
	defer q.sumMu.Unlock()
	q.sum.Skipped = append(q.sum.Skipped, n)
}

// Runner runs the scheduler's jobs: a phase's with phases, an issue's with
// issues (whose environment is without the token), after taking the
// issue's claim at its first launch and bringing the base and the
// issue's remote branch (another machine's attempt) in.
func (s *Source) Runner(phases, issues scheduler.Runner) scheduler.Runner {
	return &claimRunner{s: s, phases: phases, issues: issues}
}

type claimRunner struct {
	s              *Source
	phases, issues scheduler.Runner
}

func (r *claimRunner) Run(ctx context.Context, j scheduler.Job, started func(pgid int)) scheduler.Outcome {
	if j.Outside == nil {
		return r.phases.Run(ctx, j, started)
	}
	o := scheduler.Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, Started: time.Now()}
	n, ok := ParseIssueID(j.ID)
	if !ok {
		o.Reason, o.Detail, o.Ended = state.ReasonWorktree, "not an issue id: "+j.ID, time.Now()
		return o
	}
	if why := r.s.q.awayWhy(n); why != "" {
		o.Away, o.Detail, o.Ended = true, why, time.Now()
		return o
	}
	if !r.s.holds(n) {
		if away := r.s.claim(ctx, n); away != "" {
			o.Away, o.Detail, o.Ended = true, away, time.Now()
			return o
		}
	}
	if err := r.s.q.bringIn(ctx, n); err != nil {
		o.Reason, o.Detail, o.Ended = state.ReasonWorktree, err.Error(), time.Now()
		return o
	}
	return r.issues.Run(ctx, j, started)
}

// claim takes issue n's claim; it returns why not ("" when taken).
func (s *Source) claim(ctx context.Context, n int) string {
	q := s.q
	// Held while the claim is taken: a poll meanwhile sees the claim
	// label and must neither offer the issue nor end a --once run.
	s.mu.Lock()
	s.held[n] = 0
	s.mine[n] = true
	s.mu.Unlock()
	won, round, why, err := q.claim(ctx, n)
	if !won || err != nil || ctx.Err() != nil {
		s.mu.Lock()
		delete(s.held, n)
		s.mu.Unlock()
	}
	switch {
	case ctx.Err() != nil:
		if won {
			q.release(ctx, n, round, "interrupted")
		}
		return "interrupted"
	case errors.Is(err, ErrNotFound):
		q.logIssue(n, "vanished; dropped")
		return "the issue vanished"
	case err != nil:
		// Tried again at a later poll, which offers it again.
		q.logIssue(n, "claim failed: %v", err)
		q.addResult(Result{Number: n, Kind: Errored, Reason: err.Error()})
		return "the claim failed: " + err.Error()
	case !won:
		q.logIssue(n, "not claimed: %s", why)
		q.addResult(Result{Number: n, Kind: Lost, Reason: why})
		return "claimed by another instance: " + why
	}
	q.logIssue(n, "claimed by %s", q.instance)
	s.mu.Lock()
	s.held[n] = round
	s.mu.Unlock()
	q.Claimed(ctx, IssueID(n), round)
	return ""
}

// bringIn fetches the base, and the issue's branch where GitHub has it
// (another machine's attempt), each only when it moved (sync asks GitHub
// for both tips): a branch this clone lacks is made from it. A worktree
// where older versions put it is moved to the layout's.
func (q *Queue) bringIn(ctx context.Context, n int) error {
	branch := Branch(n)
	tips, err := q.sync(ctx, q.cfg.Base, branch)
	if err != nil {
		return err
	}
	if tips[q.cfg.Base] == "" {
		return fmt.Errorf("GitHub has no branch %s", q.cfg.Base)
	}
	if tips[branch] != "" {
		local, err := q.git.BranchExists(ctx, branch)
		if err != nil {
			return err
		}
		if !local {
			tip, err := q.git.RevParse(ctx, "refs/remotes/"+q.cfg.Remote+"/"+branch)
			if err != nil {
				return err
			}
			if err := q.git.UpdateRef(ctx, "refs/heads/"+branch, tip, strings.Repeat("0", len(tip))); err != nil {
				return fmt.Errorf("make %s from %s's: %w", branch, q.cfg.Remote, err)
			}
		}
	}
	w := &worker{q: q, n: n, id: IssueID(n), branch: branch, wt: q.WorktreePath(n)}
	if _, err := os.Stat(q.oldWorktreePath(n)); err == nil {
		return q.moveOldWorktree(ctx, w)
	}
	return nil
}

// PhasesAreNodes tells the queue that the roadmap's phases are nodes of
// the scheduler it feeds (run --issues): an issue's "Depends on phase-02"
// becomes an edge of the one graph rather than a wait in the poll.
func (q *Queue) PhasesAreNodes() { q.phaseNodes = true }
