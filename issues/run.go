package issues

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// Run works the queue alone, through the one scheduler with no phases:
// it polls every Poll (and at once whenever an issue ends), and the
// scheduler claims and works every eligible issue, up to MaxParallel
// agents at once (a pull request waiting on its checks holds none). With
// Once it returns when nothing more can start and nothing runs. GitHub
// faults are logged and tried again at the next poll. When ctx is done,
// running agents stop, this instance's claims are released, and Run
// returns an error wrapping ctx's.
func (q *Queue) Run(ctx context.Context) (Summary, error) {
	return q.RunWith(ctx, Wiring{})
}

// Wiring is what a composition outside this package adds to a queue run
// (engine: the journal, the event stream and the pause/drain switches).
type Wiring struct {
	Journal *state.Journal
	// Events, when set, receives the scheduler's events instead of the
	// queue's log (the caller renders them, with Render, and may feed
	// the web page); the caller closes it after RunWith returns.
	Events chan<- scheduler.Event
	// Lanes, Controls, Paused and GateState are the scheduler's
	// (scheduler.Config): LANES with the pacer's concurrency (without
	// Lanes, one implicit lane of AGENT_CMD and MaxParallel), and the
	// switches of control.json (pause, resume, drain, lane off).
	Lanes     []scheduler.Lane
	Controls  <-chan scheduler.Control
	Paused    bool
	GateState func(red bool)
}

// RunWith is Run with the journal and the events of w.
func (q *Queue) RunWith(ctx context.Context, w Wiring) (Summary, error) {
	// The bookkeeping outlives an interrupt: what the scheduler recorded
	// is written to GitHub before Run returns.
	bctx, endBooks := context.WithCancel(context.WithoutCancel(ctx))
	defer endBooks()
	booked := q.Bookkeep(bctx)
	src := q.Source(ctx)
	runner := q.IssueRunner(nil)
	cfg := q.SchedulerConfig()
	cfg.Lanes, cfg.Controls, cfg.Paused, cfg.GateState = w.Lanes, w.Controls, w.Paused, w.GateState
	events := w.Events
	rendered := make(chan struct{})
	var own chan scheduler.Event
	if events == nil {
		own = make(chan scheduler.Event, 64)
		events = own
		go func() { defer close(rendered); q.Render(own) }()
	} else {
		close(rendered)
	}
	s := scheduler.New(cfg, roadmap.Empty(q.git.Dir), noManifest{}, src.Runner(runner, runner), nil, w.Journal, events)
	s.SetSource(src)
	_, err := s.Run(ctx)
	if own != nil {
		close(own)
	}
	<-rendered
	if ctx.Err() != nil {
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
	case errors.Is(err, scheduler.ErrParked):
		return sum, nil // blocked issues are recorded on GitHub; the queue worked
	}
	return sum, err
}

// startWaiting runs Start; a GitHub that keeps failing is waited for,
// unless Once.
func (q *Queue) startWaiting(ctx context.Context) error {
	for {
		err := q.Start(ctx)
		if err == nil {
			return nil
		}
		if q.cfg.Once || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		q.logf("start: %v; trying again in %s", err, q.cfg.Poll)
		if err := (RealClock{}).Sleep(ctx, q.cfg.Poll); err != nil {
			return fmt.Errorf("queue: %w", context.Cause(ctx))
		}
	}
}

// IssueRunner is the runner of the queue's issues: the one worker runner
// (package work) with the queue's settings and an environment without the
// token. base, when given, lends its shared settings (a roadmap run's).
func (q *Queue) IssueRunner(base *work.Runner) *work.Runner {
	r := &work.Runner{}
	if base != nil {
		*r = *base
	} else {
		r.Agent, r.Super, r.Prepare = q.cfg.Agent, q.cfg.Supervisor, q.cfg.Prepare
		r.StuckTimeout, r.AgentTimeout, r.LogCap, r.KillGrace = q.cfg.StuckTimeout, q.cfg.AgentTimeout, q.cfg.LogCap, q.cfg.KillGrace
		r.DefaultCooldown, r.Slots, r.Sandbox, r.Stray = q.cfg.RateLimitSleep, q.cfg.Slots, q.cfg.Sandbox, q.cfg.Stray
		r.Layout = state.Layout{Top: q.git.Dir, Base: q.cfg.Base}
	}
	r.Git = q.git
	r.Env = q.agentEnv
	r.Prompts = prompts.Set{Dirs: q.cfg.PromptDirs}
	return r
}

// SchedulerConfig is the scheduler's configuration for a queue alone: an
// issue never halts the run, and one supervisor policy covers local
// failures and red checks (the larger of MAX_SUPERVISOR_ATTEMPTS and
// CHECK_ROUNDS). Lanes come with the Wiring (LANES): an issue labelled
// lane:<id> is pinned to that lane, its slots and its cooldown.
func (q *Queue) SchedulerConfig() scheduler.Config {
	c := q.cfg
	cfg := scheduler.Config{
		MaxParallel: c.MaxParallel, KeepGoing: true, MaxSupervisorAttempts: max(c.MaxSupervisorAttempts, c.CheckRounds),
		Gate: c.Gate, AgentCmd: c.Agent, SupervisorCmd: c.Supervisor, Poll: c.Poll, TransientMaxRetries: 3,
	}
	return cfg
}

// Render writes the scheduler's events about issues as the queue's log
// lines, until ch is closed.
func (q *Queue) Render(ch <-chan scheduler.Event) {
	for e := range ch {
		switch e.Kind {
		case scheduler.EvLaunch:
			q.logf("%s: %s %d started", e.Phase, e.Role, e.Attempt)
		case scheduler.EvExit:
			switch {
			case e.Reason == "":
			case e.Role == "":
				q.logf("%s: landing: %s: %s", e.Phase, e.Reason, e.Detail)
			default:
				q.logf("%s: %s %d: %s: %s", e.Phase, e.Role, e.Attempt, e.Reason, e.Detail)
			}
		case scheduler.EvMerged:
			q.logf("%s: merged at %s", e.Phase, short(e.Detail))
		case scheduler.EvCooldown:
			q.logf("%s: rate limited; no launches on its agent until %s", e.Phase, e.Until.Format(time.TimeOnly))
		case scheduler.EvWarn:
			q.logf("warning: %s%s", prefix(e.Phase), e.Detail)
		case scheduler.EvPaused:
			q.logf("paused: no new launches until resumed")
		case scheduler.EvResumed:
			q.logf("resumed")
		case scheduler.EvDrain:
			q.logf("draining: what runs finishes, nothing new starts")
		case scheduler.EvEnd:
			if strings.HasPrefix(e.Detail, "drained") {
				q.logf("%s", e.Detail)
			}
		}
	}
}

func prefix(id string) string {
	if id == "" {
		return ""
	}
	return id + ": "
}

// noManifest is the store of a run without a roadmap: no phase has a
// state to write.
type noManifest struct{}

func (noManifest) SetState(id string, _ manifest.State) error {
	return fmt.Errorf("%w: %s", manifest.ErrUnknownPhase, id)
}
func (noManifest) Read() (*manifest.Manifest, error) { return &manifest.Manifest{}, nil }
func (noManifest) Source() ([]byte, error)           { return nil, nil }
