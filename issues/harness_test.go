package issues

import (
	"cmp"
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// harness is what these tests add to a queue run, as engine.Open does for
// `queue` alone: the scheduler's slots and retry policy (MAX_PARALLEL,
// 0: 2; MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, 0: its default, 2), its lanes
// (LANES; none: one implicit lane of AGENT_CMD and maxParallel) and its
// review gate (REVIEW_CMD).
type harness struct {
	maxParallel, maxSuper int
	lanes                 []scheduler.Lane
	// reviewCmd turns the loop's review gate on; skeptics and maxRounds
	// are REVIEW_SKEPTICS and REVIEW_MAX_ROUNDS (0: the defaults, 1 and 3).
	reviewCmd           string
	skeptics, maxRounds int
	// side lends the loop's slots to scanners (scheduler.Side).
	side *scheduler.Side
	// journal is the run's journal (nil: none). kill ends the run when
	// its context ends as a kill would: its claims are not released.
	journal *state.Journal
	kill    bool
}

// reviewGate is the scheduler's review gate of h, with REVIEW_SLOTS 1
// and the default lenses.
func (h harness) reviewGate() scheduler.ReviewConfig {
	if h.reviewCmd == "" {
		return scheduler.ReviewConfig{}
	}
	return scheduler.ReviewConfig{On: true, Slots: 1, Skeptics: max(h.skeptics, 1), MaxRounds: cmp.Or(h.maxRounds, 3),
		Lenses: []string{"correctness", "security", "scope", "tests"}}
}

// runQueue works q alone through the one scheduler, composed as
// engine.Open composes `queue` without a roadmap (an empty roadmap, no
// local merger), reduced to what these tests need: the queue's own
// runner settings stand in for the run's, and the log renders the events.
// With Once it returns when nothing more can start and nothing runs; when
// ctx is done, running agents stop, this instance's claims are released,
// and it returns an error wrapping ctx's.
func runQueue(ctx context.Context, q *Queue, h harness) (Summary, error) {
	// The run keeps its long-lived git cat-file from start to end, as
	// engine.Run does.
	q.git.KeepResolvers(true)
	defer func() {
		q.git.KeepResolvers(false)
		q.git.Close()
	}()
	bctx, endBooks := context.WithCancel(context.WithoutCancel(ctx))
	defer endBooks()
	booked := q.Bookkeep(bctx)
	src := q.Source(ctx)
	runner := q.IssueRunner(q.testRunner())
	c := q.cfg
	cfg := scheduler.Config{
		MaxParallel: cmp.Or(h.maxParallel, 2), KeepGoing: true, MaxSupervisorAttempts: cmp.Or(h.maxSuper, 2),
		Gate: c.Gate, AgentCmd: c.Agent, SupervisorCmd: c.Supervisor, Poll: c.Poll, TransientMaxRetries: 10, Lanes: h.lanes,
		Review: h.reviewGate(), Side: h.side,
	}
	events := make(chan scheduler.Event, 64)
	rendered := make(chan struct{})
	go func() { defer close(rendered); q.Render(events) }()
	s := scheduler.New(cfg, roadmap.Empty(q.git.Dir), noManifest{}, src.Runner(runner, runner), nil, h.journal, events)
	s.SetSource(src)
	if h.reviewCmd != "" {
		base := &work.Reviewer{Git: q.git, Layout: runner.Layout, Cmd: h.reviewCmd, Env: q.agentEnv, Prompts: runner.Prompts,
			StuckTimeout: c.StuckTimeout, Timeout: c.AgentTimeout, LogCap: c.LogCap, KillGrace: c.KillGrace}
		s.SetReviewer(src.Reviewer(base, q.IssueReviewer(base)))
	}
	_, err := s.Run(ctx)
	close(events)
	<-rendered
	if ctx.Err() != nil && !h.kill {
		src.Release("interrupted")
	}
	endBooks()
	<-booked
	sum := q.Summary()
	switch {
	case ctx.Err() != nil:
		return sum, fmt.Errorf("queue: %w", context.Cause(ctx))
	case src.Err() != nil:
		return sum, src.Err()
	}
	return sum, err
}

// testRunner is the worker runner the run's settings would make, from the
// queue's config.
func (q *Queue) testRunner() *work.Runner {
	c := q.cfg
	return &work.Runner{
		Agent: c.Agent, Super: c.Supervisor, Prepare: c.Prepare,
		StuckTimeout: c.StuckTimeout, AgentTimeout: c.AgentTimeout, LogCap: c.LogCap, KillGrace: c.KillGrace,
		DefaultCooldown: c.RateLimitSleep,
		Layout:          state.Layout{Top: q.git.Dir, Base: c.Base},
	}
}

// noManifest is the store of a run without a roadmap.
type noManifest struct{}

func (noManifest) SetState(id string, _ manifest.State) error {
	return fmt.Errorf("%w: %s", manifest.ErrUnknownPhase, id)
}
func (noManifest) Read() (*manifest.Manifest, error) { return &manifest.Manifest{}, nil }
func (noManifest) Source() ([]byte, error)           { return nil, nil }
