package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/claudopilot/claudopilot/internal/syncw"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/promote"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// QueueSetup is a resolved issue-queue configuration (docs/queue.md),
// built once the repository lock is held.
type QueueSetup struct {
	Cfg    issues.Config
	GitHub issues.GitHubConfig
	// Scan is the scanners' refill; it runs only while the queue polls
	// (not with Once).
	Scan ScanSettings
	// Promote is the promote loop, run while the queue polls.
	Promote PromoteSettings
}

// build makes the GitHub client and the queue.
func (qs *QueueSetup) build(log io.Writer, git *worktree.Client) (*issues.Queue, *issues.GitHub, error) {
	logw := syncw.New(log)
	ghc := qs.GitHub
	ghc.Log = func(line string) { fmt.Fprintf(logw, "%s %s\n", time.Now().Format("15:04:05"), line) }
	gh, err := issues.NewGitHub(ghc)
	if err != nil {
		return nil, nil, &SettingsError{Err: err}
	}
	cfg := qs.Cfg
	cfg.GitHub, cfg.Git, cfg.Log = gh, git, logw
	q, err := issues.New(cfg)
	if err != nil {
		return nil, nil, &SettingsError{Err: err}
	}
	return q, gh, nil
}

// stableInstance names the queue's instance after the clone (the name
// kept in the layout's instance file) unless the settings name one: a
// driver restarted after a crash then knows its own claims and resumes
// them. Call with the repository lock held.
func (qs *QueueSetup) stableInstance(l state.Layout) error {
	if qs.Cfg.Instance != "" {
		return nil
	}
	name, err := issues.StableInstance(l.InstancePath())
	if err != nil {
		return err
	}
	qs.Cfg.Instance = name
	return nil
}

// emptyStore is the store of the queue alone: no manifest, so no phase
// has a state to write.
type emptyStore struct{}

func (emptyStore) SetState(id string, _ manifest.State) error {
	return fmt.Errorf("%w: %s", manifest.ErrUnknownPhase, id)
}
func (emptyStore) Read() (*manifest.Manifest, error) { return &manifest.Manifest{}, nil }
func (emptyStore) Source() ([]byte, error)           { return nil, nil }

// queueErr maps a queue error: an interruption is ErrInterrupted.
func queueErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("queue stopped: %w", scheduler.ErrInterrupted)
	}
	return err
}

// queueRun is the issue queue feeding the roadmap's scheduler: its issues
// are nodes of the same graph (issues.Source), and what the scheduler
// needs besides: whether an issue a phase depends on, which the queue does
// not offer (closed, or another instance's), is done.
type queueRun struct {
	q        *issues.Queue
	src      *issues.Source
	gh       *issues.GitHub
	manifest string
	log      io.Writer
	// snap is the latest answer from GitHub, replaced whole on each
	// refresh; the scheduler's loop only reads it.
	snap     atomic.Pointer[map[string]bool]
	endBooks context.CancelFunc
	booked   <-chan struct{}
	// stopSource ends the source's polling once the scheduler has ended
	// (drained, halted): nothing would take what it offers; stopped says
	// it was.
	stopSource context.CancelFunc
	stopped    bool
	// load reads the manifest as it is now and ask asks GitHub which of
	// ids are done (roadmap.Load and IssuesDone; tests stand in).
	load func() (*roadmap.Roadmap, error)
	ask  func(ctx context.Context, ids []string) (map[string]bool, error)
	// pause is the wait between reads of a manifest caught mid-save.
	pause time.Duration
	// refill runs the scanners when the queue runs low (nil: off).
	refill *scanner.Refill
}

// startQueue builds the queue and starts its source and its bookkeeping
// on GitHub. Beside a roadmap it also checks that the manifest's issue
// deps exist and starts the refresher of their states; the scheduler
// learns them through cfg.
func (e *Engine) startQueue(ctx context.Context, o Options, qs *QueueSetup, cfg *scheduler.Config) error {
	l := e.Layout
	// One base in one process: pull requests go into the branch the
	// phases merge into (the queue alone: the base rule's answer, ""
	// for GitHub's default branch).
	qs.Cfg.Base = e.Settings.Base
	qs.Cfg.Lanes = e.Settings.Lanes.IssueCmds()
	if !o.NoRoadmap {
		mp := e.Roadmap.ManifestPath
		qs.Cfg.Phases = func() ([]issues.Phase, error) { return issues.PhasesFromManifest(mp) }
		qs.Cfg.PromptDirs = append(qs.Cfg.PromptDirs, filepath.Join(e.Roadmap.Dir, "prompts"))
	}
	qs.Cfg.PromptDirs = append(qs.Cfg.PromptDirs, filepath.Join(l.Dir(), "prompts"))
	qs.Cfg.Protect = e.queueProtected(o, qs.Cfg.PromptDirs)
	if err := qs.stableInstance(l); err != nil {
		return err
	}
	var refill *scanner.Refill
	if !qs.Cfg.Once && qs.Scan.Threshold > 0 && qs.Cfg.ScannerLabel != "" {
		qs.Cfg.Refill = func(ctx context.Context, waiting int) { refill.Low(ctx, waiting) }
	}
	q, gh, err := qs.build(e.log, e.Git)
	if err != nil {
		return err
	}
	if qs.Cfg.Refill != nil {
		if refill, err = e.newRefill(q, qs); err != nil {
			return err
		}
		// A scanner is an agent run like a phase's: it takes a slot
		// from the loop's lanes and waits out their breakers.
		refill.Slots = scheduler.NewSide()
		cfg.Side = refill.Slots
	}
	r := newQueueRun(e.Roadmap.ManifestPath, e.log, gh.IssuesDone)
	r.q, r.gh, r.refill = q, gh, refill
	if len(qs.Promote.To) > 0 {
		// Refused loudly at start: a promotion is always a merge commit.
		if err := promote.CheckRepo(ctx, gh); err != nil {
			return &SettingsError{Err: err}
		}
		if !qs.Cfg.Once {
			p := newPromoter(q, gh, e.Git, l, qs, e.log, e.notifyEvent)
			go r.promoteLoop(ctx, p, qs.Cfg.Poll)
		}
	}
	if !o.NoRoadmap {
		q.PhasesAreNodes()
		if err := r.refresh(ctx); err != nil && !errors.Is(err, errHalfSaved) {
			if errors.Is(err, issues.ErrNotFound) {
				return &roadmap.InvalidError{Path: r.manifest, Problems: []roadmap.Problem{{Msg: err.Error()}}}
			}
			return err
		}
	}
	// The bookkeeping outlives an interrupt: what the scheduler recorded
	// reaches GitHub before the run ends (finish).
	bctx, end := context.WithCancel(context.WithoutCancel(ctx))
	r.endBooks, r.booked = end, q.Bookkeep(bctx)
	sctx, stop := context.WithCancel(ctx)
	r.src, r.stopSource = q.Source(sctx), stop
	e.queue = r
	if o.NoRoadmap {
		return nil
	}
	go func() {
		<-r.src.Done()
		r.lastRefresh(ctx)
	}()
	go r.loop(ctx, e.Settings.Poll)
	cfg.ExternalDone, cfg.ExternalWait = r.done, r.working
	return nil
}

func newQueueRun(manifest string, log io.Writer, ask func(context.Context, []string) (map[string]bool, error)) *queueRun {
	r := &queueRun{manifest: manifest, log: log, ask: ask, pause: 100 * time.Millisecond}
	r.load = func() (*roadmap.Roadmap, error) {
		return roadmap.Load(filepath.Dir(manifest), roadmap.Options{External: roadmap.IsIssueRef})
	}
	empty := map[string]bool{}
	r.snap.Store(&empty)
	return r
}

// lastRefresh reads issue states once the queue has stopped polling: what
// it merged last must be seen before the roadmap stops waiting on it. The
// manifest may be mid-save (the driver writing a merge's state at this
// very moment), so it reads until it loads, for a while.
func (r *queueRun) lastRefresh(ctx context.Context) {
	for try := 0; ; try++ {
		err := r.refresh(ctx)
		if err == nil || !errors.Is(err, errHalfSaved) || try == 50 || ctx.Err() != nil {
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(r.log, "claudopilot: warning: reading issue states: %v\n", err)
			}
			return
		}
		time.Sleep(r.pause) // a save takes moments
	}
}

// finish ends the queue's side of a run once the scheduler has ended: the
// source stops polling, claims still held after an interrupt are
// released, and the bookkeeping is written out.
func (r *queueRun) finish(ctx context.Context) {
	r.stopped = true
	r.stopSource()
	if ctx.Err() != nil {
		r.src.Release("interrupted")
	}
	r.endBooks()
	<-r.booked
	if r.refill != nil {
		r.refill.Wait() // a scanner cut short by the interrupt records its run
	}
}

// refresh asks GitHub about every issue the manifest (as it is now, live
// edits included) depends on.
func (r *queueRun) refresh(ctx context.Context) error {
	rm, err := r.load()
	if err != nil {
		return errHalfSaved // ask again (the loop: at the next poll)
	}
	var ids []string
	for _, n := range rm.Nodes {
		ids = append(ids, n.External...)
	}
	if len(ids) == 0 {
		return nil
	}
	done, err := r.ask(ctx, ids)
	if err != nil {
		return err
	}
	r.snap.Store(&done)
	return nil
}

func (r *queueRun) loop(ctx context.Context, poll time.Duration) {
	if poll <= 0 {
		poll = 5 * time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.refresh(ctx); err != nil && !errors.Is(err, errHalfSaved) && ctx.Err() == nil {
				fmt.Fprintf(r.log, "claudopilot: warning: reading issue states: %v\n", err)
			}
		}
	}
}

// done reports whether issue id is done, as of the latest refresh.
func (r *queueRun) done(id string) bool { return (*r.snap.Load())[id] }

// working is true while the queue polls: waiting on an issue may still pay.
func (r *queueRun) working() bool { return r.src.Working() }

// errHalfSaved: the manifest did not load (an editor or the driver is
// part-way through saving it).
var errHalfSaved = errors.New("the manifest is being saved")
