package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/notify"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Options say what to run and how the caller's side is reached.
type Options struct {
	// Dir is the roadmap folder (it holds the manifest).
	Dir string
	// Env is the driver's environment, for git and for agents.
	Env []string
	// Log receives notes and warnings, one line each.
	Log io.Writer
	// Rel shows a path to the user (relative to where they are).
	Rel func(string) string

	// Resolve resolves the run's settings once the repository is open
	// and the roadmap loaded (the manifest's **Gate:** and **Prepare:**
	// lines are among the sources).
	Resolve func(ctx context.Context, git *worktree.Client, rm *roadmap.Roadmap) (Settings, error)

	// Issues adds the GitHub issue queue (run --issues, or queue with a
	// roadmap). Queue is its resolved setup; when nil, ResolveQueue
	// makes it once the repository is open.
	Issues       bool
	Queue        *QueueSetup
	ResolveQueue func(ctx context.Context, git *worktree.Client) (*QueueSetup, error)
	// Once: work the current issue queue, then stop polling it.
	Once bool

	// Listeners see every event before the caller's stream does; they
	// must not block.
	Listeners []func(scheduler.Event)
}

// Engine is one composed run, ready to Run.
type Engine struct {
	Git      *worktree.Client
	Roadmap  *roadmap.Roadmap
	Layout   state.Layout
	Settings Settings

	sched   *scheduler.Scheduler
	merger  *land.Owner
	log     io.Writer           // notes and warnings
	rel     func(string) string // a path as the user is shown it
	poll    time.Duration
	raw     chan scheduler.Event
	events  <-chan scheduler.Event
	queue   *queueRun
	closers []func()
}

// Open composes a run: everything up to the first launch. On error,
// whatever it had taken is given back.
func Open(ctx context.Context, o Options) (_ *Engine, err error) {
	if o.Rel == nil {
		o.Rel = func(p string) string { return p }
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	e := &Engine{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	git, err := worktree.Open(ctx, o.Dir, o.Env)
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return nil, NotRepo(o.Dir)
		}
		return nil, err
	}
	e.Git = git
	if err := recoverCheckout(ctx, git); err != nil {
		return nil, err
	}
	qs := o.Queue
	if o.Issues && qs == nil {
		if qs, err = o.ResolveQueue(ctx, git); err != nil {
			return nil, err
		}
		qs.Cfg.Once = o.Once
	}
	lopt := roadmap.Options{RequireDocs: true}
	if qs != nil {
		lopt.External = roadmap.IsIssueRef
	}
	rm, err := roadmap.Load(o.Dir, lopt)
	if err != nil {
		return nil, err
	}
	e.Roadmap = rm
	cfg, err := o.Resolve(ctx, git, rm)
	if err != nil {
		return nil, err
	}
	e.Settings = cfg
	layout, err := MakeLayout(git, o.Dir, cfg.Base)
	if err != nil {
		return nil, err
	}
	e.Layout = layout
	if err := CheckCommitted(ctx, git, rm, layout); err != nil {
		return nil, err
	}
	lock, err := Lock(ctx, git)
	if err != nil {
		return nil, err
	}
	e.onClose(func() { lock.Release() })
	if err := git.Exclude(ctx, "/.claudopilot/"); err != nil {
		return nil, err
	}
	jn, err := state.OpenJournal(layout.JournalPath())
	if err != nil {
		return nil, err
	}
	e.onClose(func() { jn.Close() })

	// Agents a killed driver left running must stop before any phase
	// resumes: two agents never work in one worktree.
	if err := work.Reap(work.ReapOptions{
		Journal: jn.Path(), Layout: layout, Grace: 10 * time.Second,
		Say: func(msg string) { fmt.Fprintln(o.Log, "claudopilot: "+msg) },
	}); err != nil {
		return nil, err
	}
	if err := bootstrap(ctx, o.Log, o.Rel, layout, cfg, o.Env); err != nil {
		return nil, err
	}
	live := roadmap.NewFile(rm.ManifestPath)
	live.RemoveTemps()
	runner := &work.Runner{
		Git: git, Layout: layout, Agent: cfg.Agent, Super: cfg.Super, Prepare: cfg.Prepare,
		Env: o.Env, Prompts: prompts.Set{Dirs: []string{filepath.Join(o.Dir, "prompts"), filepath.Join(layout.Dir(), "prompts")}},
		StuckTimeout: cfg.Stuck, AgentTimeout: cfg.AgentTimeout, LogCap: int64(cfg.LogCapMB) << 20,
		DefaultCooldown: cfg.RateSleep, ResumeCmd: cfg.ResumeCmd, Sandbox: cfg.Sandbox, Stray: cfg.Stray,
	}
	merger := &land.Owner{Sandbox: cfg.Sandbox, Git: git, Layout: layout, Live: live, Env: o.Env, Prepare: cfg.Prepare, LogCap: int64(cfg.LogCapMB) << 20, LockfileCmd: cfg.Lockfile, Derived: cfg.Derived, NoSecretScan: !cfg.SecretScan, GateEach: cfg.MergeBatchGateEach, GateRetries: cfg.GateRetries}
	// The base's value now: a later move the driver did not make is
	// reported (watchBase).
	if _, err := merger.CheckBase(ctx); err != nil {
		return nil, err
	}
	e.merger, e.poll, e.log, e.rel = merger, cfg.Poll, o.Log, o.Rel
	// Removals of landed worktrees run in the background: done before the
	// lock is given back.
	e.onClose(merger.Wait)
	e.raw = make(chan scheduler.Event, 64)
	scfg := scheduler.Config{
		MaxParallel: cfg.MaxParallel, MergeBatch: cfg.MergeBatch, Stack: cfg.Stack, KeepGoing: cfg.KeepGoing, MaxSupervisorAttempts: cfg.MaxSuper,
		IgnoreCheckpoints: cfg.IgnoreCheckpoints, Gate: cfg.Gate, AgentCmd: cfg.Agent, SupervisorCmd: cfg.Super,
		TransientMaxRetries: cfg.Transient, Poll: cfg.Poll, Backoff: proc.Backoff,
		RunMaxCost: cfg.RunMaxCost, PhaseMaxCost: cfg.PhaseMaxCost,
	}
	board := &planBoard{}
	if err := wireControls(ctx, o.Log, layout, cfg.Lanes, &scfg, board); err != nil {
		return nil, err
	}
	if qs != nil {
		qs.Cfg.Sandbox, qs.Cfg.Stray = cfg.Sandbox, cfg.Stray
		qs.Cfg.Lanes = cfg.Lanes.IssueCmds()
		// One pool of MAX_PARALLEL agent slots for phases and issues
		// together: run --issues never runs more agents than that.
		slots := proc.NewSlots(cfg.MaxParallel)
		runner.Slots, qs.Cfg.Slots = slots, slots
		if e.queue, err = startQueue(ctx, o.Log, git, qs, rm, layout, cfg.Poll); err != nil {
			return nil, err
		}
		scfg.ExternalDone, scfg.ExternalWait = e.queue.done, e.queue.working
	}
	scfg.Review = cfg.Review.Cfg
	var run scheduler.Runner = runner
	if e.queue != nil {
		// One runner for both: an issue's attempt is a phase's with the
		// issue's branch, doc and prompts, in an environment without the
		// token, after its claim.
		run = e.queue.src.Runner(runner, e.queue.q.IssueRunner(runner))
	}
	e.sched = scheduler.New(scfg, rm, live, run, merger, jn, e.raw)
	if e.queue != nil {
		e.sched.SetSource(e.queue.src)
	}
	// Conflict prediction: merge-tree dry runs between running branches
	// (docs/landing.md).
	e.sched.SetPredictor(merger)
	if cfg.Review.Cfg.On {
		e.sched.SetReviewer(cfg.Review.reviewer(git, layout, o.Env, runner))
	}

	clearRefLocks(ctx, git, o.Log, o.Rel)
	merger.CleanupMerged(ctx, rm)
	watchCtx, stopWatch := context.WithCancel(ctx)
	e.onClose(stopWatch)
	if edits, err := roadmap.Watch(watchCtx, rm.ManifestPath, 150*time.Millisecond, cfg.Poll); err == nil {
		e.sched.SetEdits(edits)
	} else {
		fmt.Fprintf(o.Log, "claudopilot: warning: cannot watch %s (%v); edits apply at the next run\n", rm.ManifestPath, err)
	}

	listeners := o.Listeners
	if cfg.Notify != "" {
		n := &notify.Notifier{Cmd: cfg.Notify, Env: o.Env, Log: o.Log}
		n.Start(ctx)
		e.onClose(n.Close)
		listeners = append(listeners, n.Send)
	}
	var ir *IssueRetry // the page's retry of an issue, when the queue runs
	if e.queue != nil {
		ir = &IssueRetry{GitHub: e.queue.gh, Labels: qs.Cfg.Labels}
	}
	webListeners, err := startWeb(ctx, o.Log, o.Rel, cfg, rm, layout, scfg.Paused, board, ir)
	if err != nil {
		return nil, err
	}
	listeners = append(listeners, webListeners...)
	e.events = fanOut(e.raw, listeners...)
	return e, nil
}

// watchBase reports, as warnings, every move of the base branch that the
// driver did not make: found at each poll, and at each merge. An agent's
// `git update-ref` of the base otherwise went unnoticed, and the base
// checkout showed the difference as staged changes. It returns the stop.
func (e *Engine) watchBase(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(cmp.Or(max(e.poll, 0), 5*time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			moves := e.merger.TakeBaseMoves()
			if m, _ := e.merger.CheckBase(ctx); m != nil {
				moves = append(moves, *m)
			}
			for _, m := range moves {
				select {
				case e.raw <- scheduler.Event{Kind: scheduler.EvWarn, Time: time.Now(), Detail: m.String()}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Events is the run's event stream, in order; it is closed when Run
// returns. The caller must read it to the end.
func (e *Engine) Events() <-chan scheduler.Event { return e.events }

// Run runs the roadmap until it is done, halts or ctx ends.
func (e *Engine) Run(ctx context.Context) (scheduler.Summary, error) {
	defer close(e.raw)
	defer e.watchBase(ctx)()
	sum, err := e.sched.Run(ctx)
	if e.queue != nil {
		e.queue.finish(ctx)
	}
	e.sweep(ctx, sum)
	return sum, err
}

// sweep removes what is left of the phases this run merged once their
// background cleanups are done: a removal that failed beside another git
// command (a packed-refs or worktree lock held a moment) is tried again
// here, so a run that ends leaves no merged phase's branch behind.
func (e *Engine) sweep(ctx context.Context, sum scheduler.Summary) {
	if e.merger == nil {
		return
	}
	e.merger.Wait()
	clearRefLocks(ctx, e.Git, e.log, e.rel)
	var ids []string
	for _, p := range sum.Phases {
		if p.State == string(manifest.Merged) {
			ids = append(ids, p.ID)
		}
	}
	if err := e.merger.CleanupLanded(context.WithoutCancel(ctx), ids); err != nil {
		fmt.Fprintf(e.log, "claudopilot: warning: a merged phase's branch could not be removed (claudopilot clean does it later): %v\n", err)
	}
}

// HasQueue is true when the issue queue runs beside the roadmap.
func (e *Engine) HasQueue() bool { return e.queue != nil }

// WaitQueue waits for the issue queue to end: it goes on after the
// roadmap is done until it is done itself (Once) or ctx ends.
func (e *Engine) WaitQueue(ctx context.Context) (issues.Summary, error) {
	<-e.queue.src.Done()
	return e.queue.q.Summary(), queueErr(ctx, e.queue.src.Err())
}

// SetPaused switches this run's launches off or on (see SetPaused).
func (e *Engine) SetPaused(paused bool) error { return SetPaused(e.Layout.StateDir(), paused) }

// SetLane switches one of this run's lanes on or off (see SetLane).
func (e *Engine) SetLane(id string, on bool) error { return SetLane(e.Layout.StateDir(), id, on) }

// Close gives back what Open took, last first: the notifier is flushed,
// the watcher stopped, the journal closed and the lock released.
func (e *Engine) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

func (e *Engine) onClose(f func()) { e.closers = append(e.closers, f) }

// reviewer builds the review gate's runner; it shares the worker's
// prompts, timeouts and log cap.
func (r Review) reviewer(git *worktree.Client, l state.Layout, env []string, w *work.Runner) *work.Reviewer {
	return &work.Reviewer{
		Git: git, Layout: l, Cmd: r.Cmd, Env: env, Prompts: w.Prompts,
		StuckTimeout: w.StuckTimeout, Timeout: w.AgentTimeout, LogCap: w.LogCap, KillGrace: w.KillGrace,
		Sandbox: w.Sandbox,
	}
}

// fanOut hands each event to every listener (which must not block: the
// notifier queues, the web hub drops for slow clients) and then to the
// returned channel, which the caller reads in order.
func fanOut(in <-chan scheduler.Event, listeners ...func(scheduler.Event)) <-chan scheduler.Event {
	out := make(chan scheduler.Event, cap(in))
	go func() {
		defer close(out)
		for ev := range in {
			for _, l := range listeners {
				l(ev)
			}
			out <- ev
		}
	}()
	return out
}

// clearRefLocks removes the ref locks a killed driver's git left (the
// reap has stopped that driver's processes); while one stays, that ref
// cannot be updated: the base cannot move, a branch cannot be made or
// deleted.
func clearRefLocks(ctx context.Context, git *worktree.Client, log io.Writer, rel func(string) string) {
	removed, err := git.ClearStaleRefLocks(ctx)
	for i, p := range removed {
		removed[i] = rel(p)
	}
	if len(removed) > 0 {
		fmt.Fprintf(log, "claudopilot: removed %d lock files a killed git left: %s\n", len(removed), strings.Join(removed, ", "))
	}
	if err != nil {
		fmt.Fprintf(log, "claudopilot: warning: ref locks: %v\n", err)
	}
}
