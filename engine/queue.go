package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// QueueSetup is a resolved issue-queue configuration (docs/queue.md),
// built once the repository lock is held.
type QueueSetup struct {
	Cfg    issues.Config
	GitHub issues.GitHubConfig
	// Listen and ListenPublic serve the web page and API of a queue alone
	// (docs/web.md), as LISTEN and LISTEN_PUBLIC do a run's; Rel shows a
	// path to the user. A queue beside a roadmap uses the run's Settings.
	Listen       string
	ListenPublic bool
	Rel          func(string) string
	// Lanes are LANES for a queue alone (RunQueue); a run wires its own.
	Lanes Lanes
}

// build makes the GitHub client and the queue.
func (qs *QueueSetup) build(log io.Writer, git *worktree.Client) (*issues.Queue, *issues.GitHub, error) {
	logw := &lockedWriter{w: log}
	ghc := qs.GitHub
	ghc.Log = func(line string) { fmt.Fprintf(logw, "%s %s\n", time.Now().Format("15:04:05"), line) }
	gh, err := issues.NewGitHub(ghc)
	if err != nil {
		return nil, nil, &SettingsError{err}
	}
	cfg := qs.Cfg
	cfg.GitHub, cfg.Git, cfg.Log = gh, git, logw
	q, err := issues.New(cfg)
	if err != nil {
		return nil, nil, &SettingsError{err}
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

// RunQueue works the issue queue alone (no roadmap): it takes the
// repository lock and runs the queue until it is done (Once) or ctx ends.
func RunQueue(ctx context.Context, git *worktree.Client, qs *QueueSetup, log io.Writer) (issues.Summary, error) {
	qs.Cfg.PromptDirs = append(qs.Cfg.PromptDirs, filepath.Join(git.Dir, ".claudopilot", "prompts"))
	lock, err := Lock(ctx, git)
	if err != nil {
		return issues.Summary{}, err
	}
	defer lock.Release()
	l := state.Layout{Top: git.Dir}
	if err := qs.stableInstance(l); err != nil {
		return issues.Summary{}, err
	}
	qs.Cfg.Lanes = qs.Lanes.IssueCmds()
	q, gh, err := qs.build(log, git)
	if err != nil {
		return issues.Summary{}, err
	}
	// The one journal: status, explain '#N' and a restarted driver read
	// what the queue's scheduler did.
	if err := git.Exclude(ctx, "/.claudopilot/"); err != nil {
		return issues.Summary{}, err
	}
	jn, err := state.OpenJournal(l.JournalPath())
	if err != nil {
		return issues.Summary{}, err
	}
	defer jn.Close()
	// Agents a killed driver left running must stop before its issues
	// resume (their claims are this clone's): two agents never work in
	// one worktree.
	if err := work.Reap(work.ReapOptions{
		Journal: jn.Path(), Layout: l, Grace: 10 * time.Second,
		Say: func(msg string) { fmt.Fprintln(log, "claudopilot: "+msg) },
	}); err != nil {
		return issues.Summary{}, err
	}
	// The switches (pause, resume, drain: the commands' and the page's)
	// and the web page live as long as this run.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var scfg scheduler.Config
	board := &planBoard{}
	// The same lanes, pacer and switches (lane off too) as a run's: an
	// issue labelled lane:<id> takes that lane's slots and cooldown.
	lanes := qs.Lanes
	if lanes.Pace <= 0 {
		lanes.Pace = time.Minute // without LANES: only the watcher's idle passes
	}
	if err := wireControls(wctx, log, l, lanes, &scfg, board); err != nil {
		return issues.Summary{}, err
	}
	rel := qs.Rel
	if rel == nil {
		rel = func(p string) string { return p }
	}
	// The page of a queue alone: the issues are its nodes (an empty
	// roadmap: no phases), its rules the queue's (an issue never halts).
	page := Settings{Listen: qs.Listen, ListenPublic: qs.ListenPublic, KeepGoing: true, Lanes: lanes}
	listeners, err := startWeb(wctx, log, rel, page, roadmap.Empty(git.Dir), l, scfg.Paused, board, &IssueRetry{GitHub: gh, Labels: qs.Cfg.Labels})
	if err != nil {
		return issues.Summary{}, err
	}
	raw := make(chan scheduler.Event, 64)
	rendered := make(chan struct{})
	go func() {
		defer close(rendered)
		q.Render(fanOut(raw, listeners...))
	}()
	sum, err := q.RunWith(ctx, issues.Wiring{Journal: jn, Events: raw, Lanes: scfg.Lanes, Controls: scfg.Controls, Paused: scfg.Paused, GateState: scfg.GateState})
	close(raw)
	<-rendered
	return sum, queueErr(ctx, err)
}

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
	// load reads the manifest as it is now and ask asks GitHub which of
	// ids are done (roadmap.Load and IssuesDone; tests stand in).
	load func() (*roadmap.Roadmap, error)
	ask  func(ctx context.Context, ids []string) (map[string]bool, error)
	// pause is the wait between reads of a manifest caught mid-save.
	pause time.Duration
}

// startQueue builds the queue, checks the manifest's issue deps exist,
// starts the source, the bookkeeping on GitHub and the refresher of issue
// states.
func startQueue(ctx context.Context, log io.Writer, git *worktree.Client, qs *QueueSetup, rm *roadmap.Roadmap, l state.Layout, poll time.Duration) (*queueRun, error) {
	mp := rm.ManifestPath
	qs.Cfg.Phases = func() ([]issues.Phase, error) { return issues.PhasesFromManifest(mp) }
	qs.Cfg.PromptDirs = append(qs.Cfg.PromptDirs, filepath.Join(rm.Dir, "prompts"), filepath.Join(l.Dir(), "prompts"))
	if err := qs.stableInstance(l); err != nil {
		return nil, err
	}
	q, gh, err := qs.build(log, git)
	if err != nil {
		return nil, err
	}
	q.PhasesAreNodes()
	r := newQueueRun(mp, log, gh.IssuesDone)
	r.q, r.gh = q, gh
	if err := r.refresh(ctx); err != nil && !errors.Is(err, errHalfSaved) {
		if errors.Is(err, issues.ErrNotFound) {
			return nil, &roadmap.InvalidError{Path: mp, Problems: []roadmap.Problem{{Msg: err.Error()}}}
		}
		return nil, err
	}
	// The bookkeeping outlives an interrupt: what the scheduler recorded
	// reaches GitHub before the run ends (finish).
	bctx, end := context.WithCancel(context.WithoutCancel(ctx))
	r.endBooks, r.booked = end, q.Bookkeep(bctx)
	r.src = q.Source(ctx)
	go func() {
		<-r.src.Done()
		r.lastRefresh(ctx)
	}()
	go r.loop(ctx, poll)
	return r, nil
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

// finish ends the queue's side of a run: claims still held after an
// interrupt are released, and the bookkeeping is written out.
func (r *queueRun) finish(ctx context.Context) {
	if ctx.Err() != nil {
		r.src.Release("interrupted")
	}
	r.endBooks()
	<-r.booked
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

// lockedWriter serializes writes from the queue's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// errHalfSaved: the manifest did not load (an editor or the driver is
// part-way through saving it).
var errHalfSaved = errors.New("the manifest is being saved")
