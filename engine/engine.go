package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/notify"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Options say what to run and how the caller's side is reached.
type Options struct {
	// Dir is the roadmap folder (it holds the manifest); with NoRoadmap,
	// any folder inside the repository.
	Dir string
	// NoRoadmap runs the issue queue alone (`queue` without a roadmap):
	// the same composition with an empty roadmap and no local merger.
	NoRoadmap bool
	// Env is the driver's environment, for git and for agents.
	Env []string
	// Git is the repository holding Dir, opened already with Env (the
	// command's: one git process fewer per run); nil: opened here.
	Git *worktree.Client
	// Log receives notes and warnings, one line each.
	Log io.Writer
	// Rel shows a path to the user (relative to where they are).
	Rel func(string) string

	// Resolve resolves the run's settings once the repository is open
	// and the roadmap loaded (the manifest's **Gate:** and **Prepare:**
	// lines are among the sources).
	Resolve func(ctx context.Context, git *worktree.Client, rm *roadmap.Roadmap) (Settings, error)

	// Issues adds the GitHub issue queue (run --issues, or queue). Queue
	// is its resolved setup; when nil, ResolveQueue makes it once the
	// repository is open.
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
	merger  *land.Owner // nil for the queue alone
	log     io.Writer   // notes and warnings
	rel     func(string) string
	poll    time.Duration
	raw     chan scheduler.Event
	events  <-chan scheduler.Event
	queue   *queueRun
	closers []func()
	// redact is the run's redaction funnel (redact.go).
	redact *secret.Redactor
	// notifier runs NOTIFY_CMD (nil without one); the promote loop sends
	// its announce events there too.
	notifier atomic.Pointer[notify.Notifier]
}

// notifyEvent hands an event from outside the scheduler (the promote
// loop's) through the redaction funnel to NOTIFY_CMD, if one is set.
func (e *Engine) notifyEvent(ev scheduler.Event) {
	if n := e.notifier.Load(); n != nil {
		n.Send(redactEvent(e.redact, ev))
	}
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
	e := &Engine{rel: o.Rel}
	o.Log = logWriter{e, o.Log}
	e.log = o.Log
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	qs, jn, err := e.open(ctx, o)
	if err != nil {
		return nil, err
	}
	// From here on (after BOOTSTRAP_CMD and BUILD_CMD, the user's own),
	// the repository's config, hooks and info/ stay as they are: a change
	// by an agent is put back before the driver's next git command and
	// reported (issue 21 §5).
	if err := e.Git.Protect(ctx); err != nil {
		return nil, err
	}
	cfg := e.Settings
	runner := e.runner(o)
	if err := e.openRemote(ctx, runner); err != nil {
		return nil, err
	}
	var store scheduler.Store = emptyStore{}
	var live *roadmap.File
	if !o.NoRoadmap {
		live = &roadmap.File{Path: e.Roadmap.ManifestPath, Backup: e.Layout.ManifestBackup()}
		live.RemoveTemps()
		store = live
		if err := e.openMerger(ctx, o, live, runner.Prompts); err != nil {
			return nil, err
		}
	}
	e.raw = make(chan scheduler.Event, 64)
	scfg := schedulerConfig(cfg)
	board := &planBoard{}
	if err := wireControls(ctx, o.Log, e.Layout, e.Roadmap.Dir, cfg.Lanes, &scfg, board); err != nil {
		return nil, err
	}
	var run scheduler.Runner = runner
	if qs != nil {
		if err := e.startQueue(ctx, o, qs, &scfg); err != nil {
			return nil, err
		}
		// One runner for both: an issue's attempt is a phase's with the
		// issue's branch, doc and prompts, in an environment without the
		// token, after its claim.
		run = e.queue.src.Runner(runner, e.queue.q.IssueRunner(runner))
	}
	merger, err := e.startLanding(ctx)
	if err != nil {
		return nil, err
	}
	e.sched = scheduler.New(scfg, e.Roadmap, store, run, merger, jn, e.raw)
	if e.queue != nil {
		e.sched.SetSource(e.queue.src)
	}
	if cfg.Review.Cfg.On {
		// One review gate in the loop, one REVIEW_SLOTS pool: an issue's
		// reviewers are a phase's, reading the pull request.
		rev := cfg.Review.reviewer(e.Git, e.Layout, o.Env, runner)
		var r scheduler.Reviewer = rev
		if e.queue != nil {
			r = e.queue.src.Reviewer(rev, e.queue.q.IssueReviewer(rev))
		}
		e.sched.SetReviewer(r)
	}
	if e.merger != nil {
		e.watchRoadmap(ctx)
	}
	return e, e.listen(ctx, o, scfg.Paused, board)
}

// open opens the repository, takes the lock and the journal, loads the
// roadmap (an empty one for the queue alone) and resolves the settings.
func (e *Engine) open(ctx context.Context, o Options) (*QueueSetup, *state.Journal, error) {
	git := o.Git
	var err error
	if git == nil {
		if git, err = worktree.Open(ctx, o.Dir, o.Env); err != nil {
			if errors.Is(err, worktree.ErrNotRepo) {
				return nil, nil, NotRepo(o.Dir)
			}
			return nil, nil, err
		}
	}
	e.Git = git
	if err := recoverCheckout(ctx, git); err != nil {
		return nil, nil, err
	}
	qs := o.Queue
	if (o.Issues || o.NoRoadmap) && qs == nil {
		if qs, err = o.ResolveQueue(ctx, git); err != nil {
			return nil, nil, err
		}
	}
	if qs != nil && o.Once {
		qs.Cfg.Once = true
	}
	e.funnel(o.Env, qs)
	if err := e.loadRoadmap(ctx, o, qs != nil); err != nil {
		return nil, nil, err
	}
	lock, err := Lock(ctx, git)
	if err != nil {
		return nil, nil, err
	}
	e.onClose(func() { lock.Release() })
	if err := git.Exclude(ctx, "/.claudopilot/"); err != nil {
		return nil, nil, err
	}
	jn, err := state.OpenJournal(e.Layout.JournalPath())
	if err != nil {
		return nil, nil, err
	}
	e.onClose(func() { jn.Close() })
	jn.SetRedact(e.redact.String)
	jn.SetWarn(func(msg string) { fmt.Fprintln(o.Log, "claudopilot: warning: "+msg) })
	// Agents a killed driver left running must stop before any phase or
	// issue resumes: two agents never work in one worktree.
	if err := work.Reap(work.ReapOptions{
		Journal: jn.Path(), Layout: e.Layout, Grace: 10 * time.Second,
		Say: func(msg string) { fmt.Fprintln(o.Log, "claudopilot: "+msg) },
	}); err != nil {
		return nil, nil, err
	}
	return qs, jn, bootstrap(ctx, o.Log, o.Rel, e.Layout, e.Settings, o.Env, e.redact)
}

// loadRoadmap loads the roadmap (issue refs allowed as deps when the
// queue runs beside it), resolves the settings and places the run; the
// queue alone has an empty roadmap in the repository's top folder.
func (e *Engine) loadRoadmap(ctx context.Context, o Options, withQueue bool) error {
	if o.NoRoadmap {
		e.Roadmap = roadmap.Empty(e.Git.Dir)
	} else {
		lopt := roadmap.Options{RequireDocs: true}
		if withQueue {
			lopt.External = roadmap.IsIssueRef
		}
		rm, err := roadmap.Load(o.Dir, lopt)
		if err != nil {
			// A live file a power cut emptied is rebuilt from git and
			// the journal; anything else is refused as it is.
			fixed, ferr := recoverManifest(ctx, e.Git, o.Dir, e.log)
			switch {
			case fixed && ferr != nil:
				return ferr
			case ferr != nil:
				return errors.Join(err, ferr)
			case !fixed:
				return err
			}
			if rm, err = roadmap.Load(o.Dir, lopt); err != nil {
				return err
			}
		}
		e.Roadmap = rm
	}
	cfg, err := o.Resolve(ctx, e.Git, e.Roadmap)
	if err != nil {
		return err
	}
	e.Settings, e.poll = cfg, cfg.Poll
	if o.NoRoadmap {
		e.Layout = state.Layout{Top: e.Git.Dir, Base: cfg.Base}
		return nil
	}
	if e.Layout, err = MakeLayout(e.Git, o.Dir, cfg.Base); err != nil {
		return err
	}
	return CheckCommitted(ctx, e.Git, e.Roadmap, e.Layout)
}

// openRemote gives the runner its runner of agents elsewhere when the
// settings name one (AGENT_RUNNER=kubernetes), stopped when the engine
// closes.
func (e *Engine) openRemote(ctx context.Context, runner *work.Runner) error {
	if e.Settings.Remote == nil {
		return nil
	}
	rem, stop, err := e.Settings.Remote(ctx, e.Git, e.Layout)
	if err != nil {
		return err
	}
	e.onClose(stop)
	runner.Remote = rem
	return nil
}

// runner is the one worker runner, for phases and (through the queue)
// issues.
func (e *Engine) runner(o Options) *work.Runner {
	cfg, layout := e.Settings, e.Layout
	if cfg.Stray != nil {
		cfg.Stray.LogTo(e.log) // says once if it falls back to git status
	}
	dirs := []string{filepath.Join(layout.Dir(), "prompts")}
	if !o.NoRoadmap {
		dirs = append([]string{filepath.Join(o.Dir, "prompts")}, dirs...)
	}
	return &work.Runner{
		Git: e.Git, Layout: layout, Agent: cfg.Agent, Super: cfg.Super, Prepare: cfg.Prepare,
		Env: work.AgentEnv(o.Env, cfg.AgentEnvAllow), Prompts: cfg.promptSet(dirs), Redact: e.redact,
		StuckTimeout: cfg.Stuck, AgentTimeout: cfg.AgentTimeout, LogCap: int64(cfg.LogCapMB) << 20, LogKeep: cfg.LogKeep,
		DefaultCooldown: cfg.RateSleep, ResumeCmd: cfg.ResumeCmd, Attach: cfg.Attach, Sandbox: cfg.Sandbox, Stray: cfg.Stray,
	}
}

// openMerger makes the local merge owner of a roadmap's phases; ps is
// the runner's prompt loader, whose folders are protected.
func (e *Engine) openMerger(ctx context.Context, o Options, live *roadmap.File, ps prompts.Set) error {
	cfg := e.Settings
	merger := &land.Owner{Sandbox: cfg.Sandbox, Git: e.Git, Layout: e.Layout, Live: live, Env: work.AgentEnv(o.Env, cfg.AgentEnvAllow), Prepare: cfg.Prepare, LogCap: int64(cfg.LogCapMB) << 20, LockfileCmd: cfg.Lockfile, Derived: cfg.Derived, NoSecretScan: !cfg.SecretScan, SecretAllow: cfg.SecretAllow, Redact: e.redact, GateRetries: cfg.GateRetries}
	merger.Protect = protectedSet(cfg.Protect, e.Layout, e.Roadmap, ps)
	if cfg.PushBase {
		net := e.Git
		if cfg.PushCredential != nil {
			net = e.Git.WithCredential(cfg.PushCredential)
		}
		merger.Upstream = &land.Upstream{Remote: "origin", Net: net, Gate: cfg.Gate}
	}
	// The base's value now: a later move the driver did not make is
	// reported (watchBase).
	if _, err := merger.CheckBase(ctx); err != nil {
		return err
	}
	e.merger = merger
	// Removals of landed worktrees run in the background: done before the
	// lock is given back.
	e.onClose(merger.Wait)
	return nil
}

// startLanding returns the scheduler's merger (nil without a roadmap)
// after PUSH_BASE's start: the base brought level with origin's and what
// a killed run landed but did not push pushed, before any landing. Under
// the queue the push takes the queue's credential (an app's current
// token).
func (e *Engine) startLanding(ctx context.Context) (scheduler.Merger, error) {
	if e.merger == nil {
		return nil, nil
	}
	if e.merger.Upstream != nil {
		if e.queue != nil {
			e.merger.Upstream.Net = e.Git.WithCredential(e.queue.gh.Credential)
		}
		if err := e.merger.SyncUpstream(ctx); err != nil {
			return nil, fmt.Errorf("PUSH_BASE at start: %w", err)
		}
	}
	return e.merger, nil
}

// schedulerConfig is the loop's configuration from the settings: one
// retry policy (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, TRANSIENT_API_MAX_RETRIES,
// proc.Backoff) for phases and issues, whatever the command.
func schedulerConfig(cfg Settings) scheduler.Config {
	return scheduler.Config{
		MaxParallel: cfg.MaxParallel, MergeBatch: cfg.MergeBatch, GateSlots: cfg.GateSlots, TrainWait: cfg.TrainWait, Stack: cfg.Stack, KeepGoing: cfg.KeepGoing, MaxSupervisorAttempts: cfg.MaxSuper,
		IgnoreCheckpoints: cfg.IgnoreCheckpoints, Gate: cfg.Gate, AgentCmd: cfg.Agent, SupervisorCmd: cfg.Super,
		TransientMaxRetries: cfg.Transient, StuckPokes: cfg.StuckPokes, Poll: cfg.Poll, Backoff: proc.Backoff,
		RunMaxCost: cfg.RunMaxCost, PhaseMaxCost: cfg.PhaseMaxCost, Review: cfg.Review.Cfg,
		PhaseMaxTokens: cfg.PhaseMaxTokens, PhaseMaxSessions: cfg.PhaseMaxSessions, NeedsInputWait: cfg.NeedsInputWait,
	}
}

// watchRoadmap clears what a killed driver left (ref locks, merged
// phases' branches) and watches the manifest for edits.
func (e *Engine) watchRoadmap(ctx context.Context) {
	clearRefLocks(ctx, e.Git, e.log, e.rel)
	e.merger.CleanupMerged(ctx, e.Roadmap)
	// Conflict prediction: merge-tree dry runs between running branches
	// (docs/landing.md).
	e.sched.SetPredictor(e.merger)
	watchCtx, stopWatch := context.WithCancel(ctx)
	e.onClose(stopWatch)
	mp := e.Roadmap.ManifestPath
	if edits, err := roadmap.Watch(watchCtx, mp, 150*time.Millisecond, e.Settings.Poll); err == nil {
		e.sched.SetEdits(edits)
	} else {
		fmt.Fprintf(e.log, "claudopilot: warning: cannot watch %s (%v); edits apply at the next run\n", mp, err)
	}
}

// listen starts the notifier and the web page and makes the event stream.
func (e *Engine) listen(ctx context.Context, o Options, paused bool, board *planBoard) error {
	cfg := e.Settings
	listeners := o.Listeners
	if cfg.Notify != "" {
		n := &notify.Notifier{Cmd: cfg.Notify, Env: o.Env, Log: o.Log}
		n.Start(ctx)
		e.onClose(n.Close)
		e.notifier.Store(n)
		listeners = append(listeners, n.Send)
	}
	var ir *IssueRetry // the page's retry of an issue, when the queue runs
	var refill *scanner.Refill
	if e.queue != nil {
		ir = &IssueRetry{GitHub: e.queue.gh, Labels: e.queue.q.Labels()}
		refill = e.queue.refill
	}
	page := cfg
	if e.merger == nil {
		// The page of a queue alone: its rules are the queue's (an issue
		// never halts the run).
		page.KeepGoing = true
	}
	webListeners, err := startWeb(ctx, o.Log, o.Rel, page, e.Roadmap, e.Layout, paused, board, ir, refill, e.redact)
	if err != nil {
		return err
	}
	if cfg.Listen != "" {
		// The page stops with the driver: `claudopilot web` finds none.
		e.onClose(func() { os.Remove(filepath.Join(e.Layout.StateDir(), WebFile)) })
	}
	e.events = fanOut(e.raw, e.redact, append(listeners, webListeners...)...)
	return nil
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
	// The run keeps its long-lived git cat-file from start to end, not
	// one per burst of landings (issue 25 §1).
	if e.Git != nil {
		e.Git.KeepResolvers(true)
		defer func() {
			e.Git.KeepResolvers(false)
			e.Git.Close()
		}()
	}
	if e.merger != nil {
		defer e.watchBase(ctx)()
	}
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

// WaitQueue waits for the issue queue's polling to end and says how the
// queue ended. The scheduler runs while the queue polls (until it is
// worked, with Once, or ctx ends); a scheduler that ended before it
// (drained, halted) stopped it.
func (e *Engine) WaitQueue(ctx context.Context) (issues.Summary, error) {
	<-e.queue.src.Done()
	err := e.queue.src.Err()
	if e.queue.stopped && ctx.Err() == nil && errors.Is(err, context.Canceled) {
		err = nil // stopped by the run's end, not by an interrupt
	}
	return e.queue.q.Summary(), queueErr(ctx, err)
}

// QueueLog renders ch, the run's events, as the queue's log lines (the
// output of `queue` without a roadmap), until it is closed.
func (e *Engine) QueueLog(ch <-chan scheduler.Event) { e.queue.q.Render(ch) }

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
		Git: git, Layout: l, Cmd: r.Cmd, Env: env, Prompts: w.Prompts, Redact: w.Redact,
		StuckTimeout: w.StuckTimeout, Timeout: w.AgentTimeout, LogCap: w.LogCap, KillGrace: w.KillGrace,
		Sandbox: w.Sandbox,
	}
}

// fanOut hands each event, through the redaction funnel, to every
// listener (which must not block: the notifier queues, the web hub drops
// for slow clients) and then to the returned channel, which the caller
// reads in order.
func fanOut(in <-chan scheduler.Event, red *secret.Redactor, listeners ...func(scheduler.Event)) <-chan scheduler.Event {
	out := make(chan scheduler.Event, cap(in))
	go func() {
		defer close(out)
		for ev := range in {
			ev = redactEvent(red, ev)
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
