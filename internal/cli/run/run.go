// Package run is `claudopilot run`: a roadmap run, and the queue beside it
// (run --issues, queue); queue and demo run through it.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/progress"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

const runAbout = `
Run a roadmap: every eligible phase ([pending], every dep [merged]) gets an
agent in its own git worktree (.claudopilot/worktrees/<id>, branch
auto/<id>), up to MAX_PARALLEL at once, critical path first. When an agent
exits, the driver itself checks "done" (exit 0, the phase doc renamed to
DONE_<doc> on the branch, at least one commit) and runs the gate; green work
is merged into the base branch one phase at a time, with the manifest entry
marked [merged] in the same merge commit. A failed phase gets repair
supervisor runs; then the run halts, or with --keep-going parks it as
[blocked] and goes on.

Settings come from flags, then the environment, then claudopilot.config at
the repository root (KEY=VALUE lines), then the manifest's **Gate:** and
**Prepare:** lines, then defaults. Each flag names its variable.

Exit codes: 0 all merged; 1 fatal; 2 stopped at a LOOP-CHECKPOINT (or a
worker exited 2); 3 invalid manifest or nothing can progress; 4 a worker
exited 4 (a dependency error); 5 halted, supervisor attempts exhausted; 6
halted, a phase never produced its DONE_ doc; 8 keep-going left phases
[blocked]; 64 flag misuse; 130/143 interrupted.`

const runExample = `  claudopilot run roadmap/ --base develop
  KEEP_GOING=1 MAX_PARALLEL=4 claudopilot run roadmap/
  claudopilot run --agent script --base main --json roadmap/ > events.jsonl`

// Options are what run's flags and arguments say.
type Options struct {
	App   *cmdutil.App
	Dir   string
	Flags settings.Flags // nil: none
	JSON  bool
	// Issues adds the GitHub issue queue (run --issues, or queue with a
	// roadmap); Once works the current queue, then stops polling it.
	Issues bool
	Once   bool
	// Alone runs the queue without a roadmap (queue): Dir is the
	// repository's top, and the base is where pull requests go.
	Alone bool
}

// NewCmd is `claudopilot run`. runF runs the parsed options (Run when
// nil): a test of the flags passes its own.
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("run", "run every eligible phase in its own worktree and merge green work", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "run", "run [ROADMAP_DIR] [flags]", runAbout, runExample)
	settings.AddFlags(fs, settings.ForScope(settings.Run))
	jsonOut := fs.Bool("json", false, "print one JSON event per line on stdout instead of progress")
	withIssues := fs.Bool("issues", false, "work the GitHub issue queue too, as `claudopilot queue` does (settings: docs/queue.md)")
	once := fs.Bool("once", false, "with --issues: work the current issue queue, then stop polling it")
	dir, err := cmdutil.ParseSettingFlags(ctx, a, fs, settings.Run, args)
	if err != nil {
		return nil, err
	}
	if *once && !*withIssues {
		return nil, cmdutil.UsageErrorf("run: --once goes with --issues")
	}
	return &Options{App: a, Dir: dir, Flags: fs, JSON: *jsonOut, Issues: *withIssues, Once: *once}, nil
}

// Run runs the roadmap (and with Issues the queue beside it, or with
// Alone the queue alone) through the one engine, rendering its events.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	if !o.Alone {
		if err := checkRoadmapDir(ctx, a, o.Dir); err != nil {
			return err
		}
	}
	cfg, qs, err := resolveRun(ctx, a, o)
	if err != nil {
		return err
	}
	git, err := a.OpenRepo(ctx, o.Dir) // resolveRun's repository: no git process
	if err != nil {
		return err
	}
	eng, err := engine.Open(ctx, engine.Options{
		Dir: o.Dir, NoRoadmap: o.Alone, Env: a.GitEnv(), Git: git, Log: a.S.Err, Rel: func(p string) string { return cmdutil.RelTo(a.Cwd, p) },
		Resolve: func(context.Context, *worktree.Client, *roadmap.Roadmap) (engine.Settings, error) {
			return cfg, nil
		},
		Issues: qs != nil, Queue: qs, Once: o.Once,
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	runErr := render(ctx, a, o, eng)
	if eng.HasQueue() {
		// The roadmap is done; the queue goes on until it is (--once)
		// or until interrupted.
		qsum, qerr := eng.WaitQueue(ctx)
		printQueueSummary(a.S.Out, qsum)
		if runErr == nil {
			runErr = qerr
		}
	}
	return runErr
}

// render runs the engine and renders its events and summary: the live
// view, --json, or the queue alone's log lines.
func render(ctx context.Context, a *cmdutil.App, o *Options, eng *engine.Engine) error {
	view := progress.New(a.S, o.JSON, eng.Roadmap, eng.Layout)
	view.Cwd = a.Cwd
	done := make(chan struct{})
	go func() {
		if o.Alone {
			eng.QueueLog(eng.Events()) // the queue's log lines, as ever
		} else {
			view.Consume(eng.Events())
		}
		close(done)
	}()
	sum, err := eng.Run(ctx)
	<-done
	switch {
	case o.Alone:
	case o.JSON:
		view.JSONSummary(sum)
	default:
		progress.PrintSummary(a.S.Out, progress.StoppedIf(sum, errors.Is(err, scheduler.ErrInterrupted)), a.Cwd)
	}
	return err
}

// resolveRun resolves the settings once, before anything changes, and
// derives the engine's and (with issues) the queue's from them. Every
// problem of the settings is reported at once, together with the
// roadmap's: nothing is reported in rounds.
func resolveRun(ctx context.Context, a *cmdutil.App, o *Options) (engine.Settings, *engine.QueueSetup, error) {
	var cfg engine.Settings
	git, err := a.OpenRepo(ctx, o.Dir)
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return cfg, nil, engine.NotRepo(o.Dir)
		}
		return cfg, nil, err
	}
	in := settings.Input{Scope: settings.Run, Flags: o.Flags, Env: a.Env, Top: git.Dir, Issues: o.Issues}
	if o.Alone {
		in.Scope = settings.Queue // the queue's own defaults
	} else {
		in.Manifest = cmdutil.LooseManifest(o.Dir)
	}
	s, err := settings.Resolve(in)
	if err == nil {
		for _, n := range s.Notes {
			fmt.Fprintf(a.S.Err, "claudopilot: note: %s\n", n)
		}
		if !o.Alone {
			for _, n := range s.DefaultNotes() {
				fmt.Fprintf(a.S.Err, "claudopilot: note: %s\n", n)
			}
		}
		cfg, err = wire.Engine(ctx, s, wire.Run{Git: git, Env: a.Env, Alone: o.Alone, Cluster: a.Cluster})
	}
	if err == nil {
		for _, n := range append(wire.DefaultNotes(s), wire.SandboxNotes(ctx, s, cfg.Sandbox)...) {
			fmt.Fprintf(a.S.Err, "claudopilot: %s\n", n)
		}
		out := work.LeftOut(wire.Env(a.Env).Driver(), s.AgentEnvAllow)
		if o.Issues || o.Alone {
			// The queue's token is expected there: not news.
			out = slices.DeleteFunc(out, func(k string) bool { return k == "GITHUB_TOKEN" || k == "GH_TOKEN" })
		}
		if len(out) > 0 {
			fmt.Fprintf(a.S.Err, "claudopilot: note: agents, gates and prepare do not get %s (their names say secret; AGENT_ENV_ALLOW keeps one)\n", strings.Join(out, ", "))
		}
	}
	if err != nil && !o.Alone {
		// The roadmap's problems too, in the same report.
		lopt := roadmap.Options{RequireDocs: true}
		if o.Issues {
			lopt.External = roadmap.IsIssueRef
		}
		if _, rerr := roadmap.Load(o.Dir, lopt); rerr != nil {
			return cfg, nil, errors.Join(rerr, err)
		}
	}
	if err != nil || !o.Issues {
		return cfg, nil, err
	}
	if o.Alone {
		noteQueuePolicy(a, s)
	}
	// One base for phases and issues: engine.Open sends pull requests
	// into cfg.Base, the branch the phases merge into (the queue alone:
	// BASE_BRANCH, else GitHub's default branch).
	qc, ghc, err := wire.Queue(ctx, s, git, a.Env)
	if err != nil {
		return cfg, nil, err
	}
	qc.Once = o.Once
	if !o.Once {
		noteRefill(a, s)
	}
	return cfg, &engine.QueueSetup{Cfg: qc, GitHub: ghc, Scan: wire.Scan(s), Promote: wire.Promote(s)}, nil
}

// checkRoadmapDir says what is wrong with the roadmap folder before
// anything else is tried: not in a repository at all (exit 1), or no such
// folder or no manifest in it (exit 3, as plan says).
func checkRoadmapDir(ctx context.Context, a *cmdutil.App, dir string) error {
	st, err := os.Stat(dir)
	if err == nil && st.IsDir() {
		return nil
	}
	if _, gerr := cmdutil.GitTopLevel(ctx, a, a.Cwd); errors.Is(gerr, worktree.ErrNotRepo) {
		return engine.NotRepo(a.Cwd)
	}
	msg := "roadmap folder not found: pass the folder that holds " + roadmap.ManifestName + ", or make one with claudopilot init"
	if err == nil {
		msg = "not a roadmap folder but a file: pass the folder that holds " + roadmap.ManifestName
	}
	return &roadmap.InvalidError{Path: cmdutil.RelTo(a.Cwd, dir), Problems: []roadmap.Problem{{Msg: msg}}}
}

// noteQueuePolicy announces the queue's changed retry defaults until the
// user sets either knob: a queue alone used to repair red checks 3 times
// and retry passing API errors 3 times; it now keeps run's policy.
func noteQueuePolicy(a *cmdutil.App, s *settings.Settings) {
	if s.Source("MAX_SUPERVISOR_ATTEMPTS_PER_PHASE").Kind != settings.FromDefault || s.Source("TRANSIENT_API_MAX_RETRIES").Kind != settings.FromDefault {
		return
	}
	fmt.Fprintf(a.S.Err, "claudopilot: note: the queue retries as run does: %d repair runs per issue (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, was 3) and %d retries of passing API errors (TRANSIENT_API_MAX_RETRIES, was 3); set either to hide this note\n",
		s.MaxSupervisor, s.TransientRetries)
}

// noteRefill announces the refill, new in a polling queue, until
// REFILL_THRESHOLD is set.
func noteRefill(a *cmdutil.App, s *settings.Settings) {
	if n := wire.RefillNote(s); n != "" {
		fmt.Fprintf(a.S.Err, "claudopilot: note: %s\n", n)
	}
}

// printQueueSummary is the queue's end-of-run lines: each issue's outcome
// and the counts. Here, not in progress, so that progress (which status
// and the page's tests link) does not link the queue (#23: link cost).
func printQueueSummary(w io.Writer, sum issues.Summary) {
	for _, r := range sum.Results {
		switch r.Kind {
		case issues.Merged:
			fmt.Fprintf(w, "#%d merged (pull request #%d)\n", r.Number, r.PR)
		case issues.Review:
			fmt.Fprintf(w, "#%d ready for review (pull request #%d)\n", r.Number, r.PR)
		case issues.Blocked:
			fmt.Fprintf(w, "#%d blocked: %s\n", r.Number, r.Reason)
		case issues.Dropped:
			fmt.Fprintf(w, "#%d dropped: %s\n", r.Number, r.Reason)
		case issues.Interrupted:
			fmt.Fprintf(w, "#%d interrupted; claim released\n", r.Number)
		}
	}
	for _, n := range sum.Skipped {
		fmt.Fprintf(w, "#%d skipped: not trusted\n", n)
	}
	for _, n := range sum.Released {
		fmt.Fprintf(w, "#%d: stale claim released\n", n)
	}
	fmt.Fprintf(w, "queue: %d merged, %d for review, %d blocked\n", sum.Count(issues.Merged), sum.Count(issues.Review), sum.Count(issues.Blocked))
}
