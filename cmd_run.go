package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
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

Exit codes: 0 all merged; 1 fatal; 2 stopped at a LOOP-CHECKPOINT; 3 invalid
manifest or nothing can progress; 5 halted, supervisor attempts exhausted;
6 halted, a phase never produced its DONE_ doc; 8 keep-going left phases
[blocked]; 64 flag misuse; 130/143 interrupted.`

const runExample = `  claudopilot run roadmap/ --base develop
  KEEP_GOING=1 MAX_PARALLEL=4 claudopilot run roadmap/
  claudopilot run --agent script --base main --json roadmap/ > events.jsonl`

func cmdRun(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "run", "run [ROADMAP_DIR] [flags]", runAbout, runExample)
	settings.AddFlags(fs, settings.ForScope(settings.Run))
	jsonOut := fs.Bool("json", false, "print one JSON event per line on stdout instead of progress")
	withIssues := fs.Bool("issues", false, "work the GitHub issue queue too, as `claudopilot queue` does (settings: docs/queue.md)")
	once := fs.Bool("once", false, "with --issues: work the current issue queue, then stop polling it")
	dir, err := parseSettingFlags(ctx, a, fs, settings.Run, args)
	if err != nil {
		return err
	}
	if *once && !*withIssues {
		return usageErrorf("run: --once goes with --issues")
	}
	return runRoadmap(ctx, a, runOptions{dir: dir, flags: fs, json: *jsonOut, issues: *withIssues, once: *once})
}

type runOptions struct {
	dir   string
	flags settings.Flags // nil: none
	json  bool
	// issues adds the GitHub issue queue (run --issues, or queue with a
	// roadmap); once works the current queue, then stops polling it.
	issues bool
	once   bool
	// alone runs the queue without a roadmap (queue): dir is the
	// repository's top, and the base is where pull requests go.
	alone bool
}

func runRoadmap(ctx context.Context, a *app, o runOptions) error {
	if !o.alone {
		if err := checkRoadmapDir(ctx, a, o.dir); err != nil {
			return err
		}
	}
	cfg, qs, err := resolveRun(ctx, a, o)
	if err != nil {
		return err
	}
	eng, err := engine.Open(ctx, engine.Options{
		Dir: o.dir, NoRoadmap: o.alone, Env: gitEnv(a), Log: a.s.Err, Rel: func(p string) string { return relTo(a.cwd, p) },
		Resolve: func(context.Context, *worktree.Client, *roadmap.Roadmap) (engine.Settings, error) {
			return cfg, nil
		},
		Issues: qs != nil, Queue: qs, Once: o.once,
	})
	if err != nil {
		return err
	}
	defer eng.Close()
	view := newProgress(a.s, o.json, eng.Roadmap, eng.Layout)
	view.cwd = a.cwd
	done := make(chan struct{})
	go func() {
		if o.alone {
			eng.QueueLog(eng.Events()) // the queue's log lines, as ever
		} else {
			view.consume(eng.Events())
		}
		close(done)
	}()
	sum, runErr := eng.Run(ctx)
	<-done
	switch {
	case o.alone:
	case o.json:
		view.jsonSummary(sum)
	default:
		printSummary(a.s.Out, stoppedIf(sum, errors.Is(runErr, scheduler.ErrInterrupted)), a.cwd)
	}
	if eng.HasQueue() {
		// The roadmap is done; the queue goes on until it is (--once)
		// or until interrupted.
		qsum, qerr := eng.WaitQueue(ctx)
		printQueueSummary(a.s.Out, qsum)
		if runErr == nil {
			runErr = qerr
		}
	}
	return runErr
}

// resolveRun resolves the settings once, before anything changes, and
// derives the engine's and (with issues) the queue's from them. Every
// problem of the settings is reported at once, together with the
// roadmap's: nothing is reported in rounds.
func resolveRun(ctx context.Context, a *app, o runOptions) (engine.Settings, *engine.QueueSetup, error) {
	var cfg engine.Settings
	git, err := worktree.Open(ctx, o.dir, gitEnv(a))
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return cfg, nil, engine.NotRepo(o.dir)
		}
		return cfg, nil, err
	}
	in := settings.Input{Scope: settings.Run, Flags: o.flags, Env: a.env, Top: git.Dir, Issues: o.issues}
	if o.alone {
		in.Scope = settings.Queue // the queue's own defaults
	} else {
		in.Manifest = looseManifest(o.dir)
	}
	s, err := settings.Resolve(in)
	if err == nil {
		for _, n := range s.Notes {
			fmt.Fprintf(a.s.Err, "claudopilot: note: %s\n", n)
		}
		cfg, err = wire.Engine(ctx, s, wire.Run{Git: git, Env: a.env, Alone: o.alone})
	}
	if err != nil && !o.alone {
		// The roadmap's problems too, in the same report.
		lopt := roadmap.Options{RequireDocs: true}
		if o.issues {
			lopt.External = roadmap.IsIssueRef
		}
		if _, rerr := roadmap.Load(o.dir, lopt); rerr != nil {
			return cfg, nil, errors.Join(rerr, err)
		}
	}
	if err != nil || !o.issues {
		return cfg, nil, err
	}
	if o.alone {
		noteQueuePolicy(a, s)
	}
	// One base for phases and issues: pull requests go into the branch
	// the phases merge into (the queue alone: BASE_BRANCH, else GitHub's
	// default branch).
	qc, ghc, err := wire.Queue(ctx, s, git, a.env, cfg.Base, cfg.Sandbox)
	if err != nil {
		return cfg, nil, err
	}
	qc.Once = o.once
	return cfg, &engine.QueueSetup{Cfg: qc, GitHub: ghc}, nil
}

// looseManifest reads the manifest of the roadmap folder dir for its
// **Gate:** and **Prepare:** lines, which take part in the settings; nil
// when there is none. An invalid manifest still has readable lines (its
// problems are the roadmap's to report).
func looseManifest(dir string) *manifest.Manifest {
	b, err := os.ReadFile(filepath.Join(dir, roadmap.ManifestName))
	if err != nil {
		return nil
	}
	m, _ := manifest.Parse(b)
	return m
}

// checkRoadmapDir says what is wrong with the roadmap folder before
// anything else is tried: not in a repository at all (exit 1), or no such
// folder or no manifest in it (exit 3, as plan says).
func checkRoadmapDir(ctx context.Context, a *app, dir string) error {
	st, err := os.Stat(dir)
	if err == nil && st.IsDir() {
		return nil
	}
	if _, gerr := gitTopLevel(ctx, a.cwd); errors.Is(gerr, worktree.ErrNotRepo) {
		return engine.NotRepo(a.cwd)
	}
	msg := "roadmap folder not found: pass the folder that holds " + roadmap.ManifestName + ", or make one with claudopilot init"
	if err == nil {
		msg = "not a roadmap folder but a file: pass the folder that holds " + roadmap.ManifestName
	}
	return &roadmap.InvalidError{Path: relTo(a.cwd, dir), Problems: []roadmap.Problem{{Msg: msg}}}
}
