package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/notify"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/supervisor"
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

Exit codes: 0 all merged; 1 fatal; 2 stopped at a LOOP-CHECKPOINT; 3 invalid
manifest or nothing can progress; 5 halted, supervisor attempts exhausted;
6 halted, a phase never produced its DONE_ doc; 8 keep-going left phases
[blocked]; 64 flag misuse; 130/143 interrupted.`

const runExample = `  claudopilot run roadmap/ --base develop
  KEEP_GOING=1 MAX_PARALLEL=4 claudopilot run roadmap/
  claudopilot run --agent script --base main --json roadmap/ > events.jsonl`

func cmdRun(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "run", "run [ROADMAP_DIR] [flags]", runAbout, runExample)
	ks := runKnobs()
	addKnobFlags(fs, ks)
	jsonOut := fs.Bool("json", false, "print one JSON event per line on stdout instead of progress")
	withIssues := fs.Bool("issues", false, "work the GitHub issue queue too, as `claudopilot queue` does (settings: docs/queue.md)")
	once := fs.Bool("once", false, "with --issues: work the current issue queue, then stop polling it")
	dir, err := parseSettingFlags(ctx, a, fs, ks, args)
	if err != nil {
		return err
	}
	if *once && !*withIssues {
		return usageErrorf("run: --once goes with --issues")
	}
	return runRoadmap(ctx, a, runOptions{dir: dir, flags: fs, knobs: ks, json: *jsonOut, issues: *withIssues, once: *once})
}

type runOptions struct {
	dir   string
	flags flagLookup
	knobs []knob
	json  bool
	// issues adds the GitHub issue queue (run --issues); queue is its
	// resolved setup (given by `claudopilot queue`, or made here).
	issues bool
	once   bool
	queue  *queueSetup
	// explicitBase marks BASE_BRANCH as chosen by the caller (demo).
	explicitBase bool
}

// runConfig is the resolved configuration of one run.
type runConfig struct {
	sandbox                                     *sandbox.Config // nil: SANDBOX=off
	stray                                       *sandbox.Watch  // set when sandbox is nil: writes outside a worktree are reported
	maxParallel, maxSuper, transient, logCapMB  int
	keepGoing, ignoreCheckpoints                bool
	secretScan                                  bool
	base, gate, prepare, agent, super, lockfile string
	bootstrap, build                            string
	derived                                     *regexp.Regexp
	poll, stuck, agentTimeout, rateSleep        time.Duration
	baseExplicit                                bool
	lanes                                       laneSetup
	review                                      reviewSetup
	runMaxCost, phaseMaxCost                    float64
	resumeCmd                                   string
	notify                                      string
}

func runRoadmap(ctx context.Context, a *app, o runOptions) error {
	if err := checkRoadmapDir(ctx, a, o.dir); err != nil {
		return err
	}
	git, err := worktree.Open(ctx, o.dir, gitEnv(a))
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return notRepo(o.dir)
		}
		return err
	}
	if err := recoverCheckout(ctx, git); err != nil {
		return err
	}
	if o.issues && o.queue == nil {
		if o.queue, err = prepareQueue(ctx, a, git, o.flags); err != nil {
			return err
		}
		o.queue.cfg.Once = o.once
	}
	lopt := roadmap.Options{RequireDocs: true}
	if o.queue != nil {
		lopt.External = roadmap.IsIssueRef
	}
	rm, err := roadmap.Load(o.dir, lopt)
	if err != nil {
		return err
	}
	cfg, err := resolveRun(ctx, a, git, rm, o)
	if err != nil {
		return err
	}
	layout, err := makeLayout(git, o.dir, cfg.base)
	if err != nil {
		return err
	}
	if err := checkCommitted(ctx, git, rm, layout); err != nil {
		return err
	}
	lock, err := lockRepo(ctx, git)
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := git.Exclude(ctx, "/.claudopilot/"); err != nil {
		return err
	}
	jn, err := scheduler.OpenJournal(layout.JournalPath())
	if err != nil {
		return err
	}
	defer jn.Close()

	// Agents a killed driver left running must stop before any phase
	// resumes: two agents never work in one worktree.
	if err := work.Reap(work.ReapOptions{
		Journal: jn.Path(), Layout: layout, Grace: 10 * time.Second,
		Say: func(msg string) { fmt.Fprintln(a.s.Err, "claudopilot: "+msg) },
	}); err != nil {
		return err
	}
	if err := bootstrap(ctx, a, layout, cfg, agentEnv(a)); err != nil {
		return err
	}
	live := roadmap.NewFile(rm.ManifestPath)
	live.RemoveTemps()
	env := agentEnv(a)
	runner := &work.Runner{
		Git: git, Layout: layout, Agent: cfg.agent, Super: cfg.super, Prepare: cfg.prepare,
		Env: env, Prompts: prompts.Set{Dirs: []string{filepath.Join(o.dir, "prompts"), filepath.Join(layout.Dir(), "prompts")}},
		StuckTimeout: cfg.stuck, AgentTimeout: cfg.agentTimeout, LogCap: int64(cfg.logCapMB) << 20,
		DefaultCooldown: cfg.rateSleep, ResumeCmd: cfg.resumeCmd, Sandbox: cfg.sandbox, Stray: cfg.stray,
	}
	merger := &land.Owner{Sandbox: cfg.sandbox, Git: git, Layout: layout, Live: live, Env: env, Prepare: cfg.prepare, LogCap: int64(cfg.logCapMB) << 20, LockfileCmd: cfg.lockfile, Derived: cfg.derived, NoSecretScan: !cfg.secretScan}
	events := make(chan scheduler.Event, 64)
	scfg := scheduler.Config{
		MaxParallel: cfg.maxParallel, KeepGoing: cfg.keepGoing, MaxSupervisorAttempts: cfg.maxSuper,
		IgnoreCheckpoints: cfg.ignoreCheckpoints, Gate: cfg.gate, AgentCmd: cfg.agent, SupervisorCmd: cfg.super,
		TransientMaxRetries: cfg.transient, Poll: cfg.poll, Backoff: supervisor.Backoff,
		RunMaxCost: cfg.runMaxCost, PhaseMaxCost: cfg.phaseMaxCost,
	}
	if err := wireControls(ctx, a, layout, cfg.lanes, &scfg); err != nil {
		return err
	}
	var qrun *queueRun
	if o.queue != nil {
		o.queue.cfg.Sandbox, o.queue.cfg.Stray = cfg.sandbox, cfg.stray
		if qrun, err = startQueue(ctx, a, git, o.queue, rm, layout, cfg.poll); err != nil {
			return err
		}
		scfg.ExternalDone, scfg.ExternalWait = qrun.done, qrun.working
	}
	scfg.Review = cfg.review.cfg
	sched := scheduler.New(scfg, rm, live, runner, merger, jn, events)
	if cfg.review.cfg.On {
		sched.SetReviewer(cfg.review.reviewer(git, layout, env, runner))
	}

	merger.CleanupMerged(ctx, rm)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if edits, err := roadmap.Watch(watchCtx, rm.ManifestPath, 150*time.Millisecond, cfg.poll); err == nil {
		sched.SetEdits(edits)
	} else {
		fmt.Fprintf(a.s.Err, "claudopilot: warning: cannot watch %s (%v); edits apply at the next run\n", rm.ManifestPath, err)
	}

	view := newProgress(a.s, o.json, rm, layout)
	view.cwd = a.cwd
	done := make(chan struct{})
	listeners := []func(scheduler.Event){}
	if cfg.notify != "" {
		n := &notify.Notifier{Cmd: cfg.notify, Env: env, Log: a.s.Err}
		n.Start(ctx)
		defer n.Close()
		listeners = append(listeners, n.Send)
	}
	go func() {
		view.consume(fanOut(events, listeners...))
		close(done)
	}()
	sum, runErr := sched.Run(ctx)
	close(events)
	<-done
	if o.json {
		view.jsonSummary(sum)
	} else {
		printSummary(a.s.Out, stoppedIf(sum, errors.Is(runErr, scheduler.ErrInterrupted)), a.cwd)
	}
	if qrun != nil {
		// The roadmap is done; the queue goes on until it is (--once)
		// or until interrupted.
		qsum, qerr := qrun.wait()
		printQueueSummary(a.s.Out, qsum)
		if runErr == nil {
			runErr = queueErr(ctx, qerr)
		}
	}
	return runErr
}

// resolveRun resolves every knob and checks the base branch.
func resolveRun(ctx context.Context, a *app, git *worktree.Client, rm *roadmap.Roadmap, o runOptions) (runConfig, error) {
	var c runConfig
	file, notes, err := readConfig(git.Dir, o.knobs)
	if err != nil {
		return c, err
	}
	for _, n := range notes {
		fmt.Fprintf(a.s.Err, "claudopilot: note: %s\n", n)
	}
	fromManifest := map[string]string{"GATE_CMD": rm.Manifest.Gate.Value, "WORKTREE_PREPARE_CMD": rm.Manifest.Prepare.Value}
	var fs flagLookup = nilFlags{}
	if o.flags != nil {
		fs = o.flags
	}
	s := resolveWith(fs, o.knobs, a.env, file, fromManifest)
	if c.maxParallel, err = s.int("MAX_PARALLEL"); err != nil {
		return c, err
	}
	if c.maxParallel < 1 {
		return c, usageErrorf("MAX_PARALLEL must be at least 1 (from %s)", s.source["MAX_PARALLEL"])
	}
	if c.maxSuper, err = s.int("MAX_SUPERVISOR_ATTEMPTS_PER_PHASE"); err != nil {
		return c, err
	}
	if c.transient, err = s.int("TRANSIENT_API_MAX_RETRIES"); err != nil {
		return c, err
	}
	if c.logCapMB, err = s.int("LOG_CAP_MB"); err != nil {
		return c, err
	}
	if c.keepGoing, err = s.bool("KEEP_GOING"); err != nil {
		return c, err
	}
	if c.secretScan, err = s.bool("SECRET_SCAN"); err != nil {
		return c, err
	}
	if c.ignoreCheckpoints, err = s.bool("IGNORE_LOOP_CHECKPOINTS"); err != nil {
		return c, err
	}
	for k, dst := range map[string]*time.Duration{"POLL_SECONDS": &c.poll, "STUCK_TIMEOUT": &c.stuck, "AGENT_TIMEOUT": &c.agentTimeout, "DEFAULT_RATE_LIMIT_SLEEP": &c.rateSleep} {
		if *dst, err = s.seconds(k); err != nil {
			return c, err
		}
	}
	c.gate, c.prepare, c.agent = s.str("GATE_CMD"), s.str("WORKTREE_PREPARE_CMD"), s.str("AGENT_CMD")
	c.super, c.lockfile = s.str("SUPERVISOR_CMD"), s.str("LOCKFILE_CMD")
	c.resumeCmd, c.notify = s.str("AGENT_RESUME_CMD"), s.str("NOTIFY_CMD")
	if c.runMaxCost, err = s.dollars("RUN_MAX_COST_USD"); err != nil {
		return c, err
	}
	if c.phaseMaxCost, err = s.dollars("PHASE_MAX_COST_USD"); err != nil {
		return c, err
	}
	c.bootstrap, c.build = strings.TrimSpace(s.str("BOOTSTRAP_CMD")), strings.TrimSpace(s.str("BUILD_CMD"))
	if err := checkKnobs(s, o.knobs, func(k knob) bool { return k.kind == "regexp" || k.kind == "driver" || k.env == "MAX_ITER" }); err != nil {
		return c, err
	}
	if v := s.str("DERIVED_CONFLICT_FILES"); v != "" {
		c.derived = regexp.MustCompile(v) // checked above
	}
	if c.sandbox, err = sandboxFrom(ctx, a, git, s); err != nil {
		return c, err
	}
	if c.sandbox == nil {
		// Without the sandbox, writes outside a worktree are reported.
		c.stray = &sandbox.Watch{}
	}
	if c.super == "" {
		c.super = c.agent
	}
	if strings.TrimSpace(c.agent) == "" {
		return c, usageErrorf("AGENT_CMD is empty (from %s)", s.source["AGENT_CMD"])
	}
	if c.lanes, err = resolveLanes(a, file, c.agent, s.str("SUPERVISOR_CMD")); err != nil {
		return c, err
	}
	if len(c.lanes.lanes) == 0 {
		err = checkAgentCommands(a, s, c.agent, c.super, git.Dir)
	}
	for _, l := range c.lanes.lanes {
		ls := settings{source: map[string]string{"AGENT_CMD": pacer.EnvName(l.ID, "CMD"), "SUPERVISOR_CMD": pacer.EnvName(l.ID, "SUPERVISOR_CMD")}}
		if err == nil {
			err = checkAgentCommands(a, ls, l.Cmd, l.SupervisorCmd, git.Dir)
		}
	}
	if err != nil {
		return c, err
	}
	if c.review, err = resolveReview(s); err != nil {
		return c, err
	}
	if c.review.cfg.On {
		if err := checkReviewCommand(a, s, c.review.cmd, git.Dir); err != nil {
			return c, err
		}
	}
	c.base = s.str("BASE_BRANCH")
	c.baseExplicit = c.base != "" || o.explicitBase
	if c.base == "" {
		if c.base, err = git.CurrentBranch(ctx); err != nil {
			return c, err
		}
		if c.base == "" {
			return c, errors.New("HEAD is detached: name the branch to merge into with --base or BASE_BRANCH")
		}
	}
	if !c.baseExplicit && (c.base == "main" || c.base == "master") {
		return c, fmt.Errorf("refusing to merge into %s without being told to: pass --base %s (or BASE_BRANCH=%s), or switch to another branch", c.base, c.base, c.base)
	}
	if ok, err := git.BranchExists(ctx, c.base); err != nil {
		return c, err
	} else if !ok {
		return c, fmt.Errorf("base branch %s does not exist", c.base)
	}
	return c, nil
}

type flagLookup interface {
	Changed(string) bool
	GetString(string) (string, error)
	GetBool(string) (bool, error)
}

type nilFlags struct{}

func (nilFlags) Changed(string) bool              { return false }
func (nilFlags) GetString(string) (string, error) { return "", nil }
func (nilFlags) GetBool(string) (bool, error)     { return false, nil }

// makeLayout places the run: the roadmap must be inside the repository.
func makeLayout(git *worktree.Client, dir, base string) (scheduler.Layout, error) {
	top, _ := filepath.EvalSymlinks(git.Dir)
	abs, _ := filepath.EvalSymlinks(dir)
	rel, err := filepath.Rel(top, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return scheduler.Layout{}, fmt.Errorf("the roadmap %s is outside the repository %s", dir, git.Dir)
	}
	return scheduler.Layout{Top: git.Dir, RoadmapRel: filepath.ToSlash(rel), Base: base}, nil
}

// checkCommitted makes sure the base holds the manifest and the doc of every
// phase left to do: worktrees are cut from the base, so an agent could not
// see (or rename) a doc that exists only in this checkout.
func checkCommitted(ctx context.Context, git *worktree.Client, rm *roadmap.Roadmap, l scheduler.Layout) error {
	bad := &roadmap.InvalidError{Path: rm.ManifestPath}
	ref := "refs/heads/" + l.Base
	if _, has, err := git.ReadFile(ctx, ref, l.ManifestRel()); err != nil {
		return err
	} else if !has {
		bad.Problems = append(bad.Problems, roadmap.Problem{Msg: fmt.Sprintf("the manifest is not committed on %s: commit the roadmap first (git add %s && git commit)", l.Base, l.RoadmapRel)})
		return bad
	}
	for _, n := range rm.Nodes {
		if n.State == manifest.Merged || n.Doc == "" {
			continue
		}
		_, has, err := git.ReadFile(ctx, ref, l.DocRel(n.DocPath()))
		if err != nil {
			return err
		}
		if !has && !n.Done {
			bad.Problems = append(bad.Problems, roadmap.Problem{Line: n.Line, Msg: fmt.Sprintf("phase %s: its doc %s is not committed on %s; commit the roadmap first", n.ID, l.DocRel(n.Doc), l.Base)})
		}
	}
	if len(bad.Problems) > 0 {
		return bad
	}
	return nil
}

// gitEnv is the environment for the driver's own git commands.
func gitEnv(a *app) []string {
	env := make([]string, 0, len(a.env))
	for _, k := range slices.Sorted(maps.Keys(a.env)) {
		env = append(env, k+"="+a.env[k])
	}
	// The mark lets a restarted driver find this one's git processes
	// (work.Reap); processes it starts through supervisor.Run get their own.
	return append(env, supervisor.Mark("git"))
}

// agentEnv is the environment agents inherit: the driver's.
func agentEnv(a *app) []string { return gitEnv(a) }

// parseSettingFlags parses the flags of a command that takes the run's
// settings and an optional ROADMAP_DIR. Flag values are checked before the
// repository is even opened, so misuse is reported as such (exit 64).
func parseSettingFlags(ctx context.Context, a *app, fs *pflag.FlagSet, ks []knob, args []string) (string, error) {
	args = boolFlagValues(fs, args)
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() > 1 {
		return "", usageErrorf("%s takes at most one ROADMAP_DIR, got %d", fs.Name(), fs.NArg())
	}
	early := resolveWith(fs, ks, nil, nil, nil)
	if err := checkKnobs(early, ks, func(k knob) bool { return fs.Changed(k.flag) }); err != nil {
		return "", err
	}
	return findRoadmapDir(ctx, a, fs.Arg(0))
}

// lockRepo makes sure git can commit here and takes the repository's
// driver lock, before anything is changed.
func lockRepo(ctx context.Context, git *worktree.Client) (*scheduler.Lock, error) {
	if ok, err := git.HasIdentity(ctx); err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New("git has no user identity in this repository, and the driver commits; run:\n" +
			"  git config user.name \"Your Name\"\n  git config user.email you@example.com")
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	return scheduler.AcquireLock(filepath.Join(common, "claudopilot.lock"))
}

// recoverCheckout finishes a base-checkout move a killed driver left half
// done, before the roadmap is read (a phase doc may be missing until then).
// It takes the driver lock for it, so a live run is never disturbed.
func recoverCheckout(ctx context.Context, git *worktree.Client) error {
	l := scheduler.Layout{Top: git.Dir}
	if _, err := os.Stat(filepath.Join(l.StateDir(), "advance.json")); err != nil {
		return nil
	}
	lock, err := lockRepo(ctx, git)
	if err != nil {
		return err
	}
	defer lock.Release()
	return land.Recover(ctx, git, l, 30*time.Second)
}

// bootstrap runs BOOTSTRAP_CMD, then BUILD_CMD, once in the repository
// before any phase starts, as Claudopilot did. A failure is a warning, as
// it was there: the gate of each phase still decides what merges.
func bootstrap(ctx context.Context, a *app, l scheduler.Layout, cfg runConfig, env []string) error {
	for _, step := range []struct{ name, cmd string }{{"bootstrap", cfg.bootstrap}, {"build", cfg.build}} {
		if step.cmd == "" {
			continue
		}
		dir := filepath.Join(l.Dir(), "logs")
		log := filepath.Join(dir, fmt.Sprintf("%s-%d.log", step.name, supervisor.NextLog(dir, step.name)))
		fmt.Fprintf(a.s.Err, "claudopilot: %s: %s\n", step.name, step.cmd)
		res := supervisor.Run(ctx, supervisor.Spec{Command: step.cmd, Dir: l.Top, Env: env, LogPath: log, LogCap: int64(cfg.logCapMB) << 20})
		if ctx.Err() != nil {
			return scheduler.ErrInterrupted
		}
		if res.ExitCode != 0 {
			fmt.Fprintf(a.s.Err, "claudopilot: warning: %s failed (exit %d, see %s); the phases' gates will tell\n", step.name, res.ExitCode, relTo(a.cwd, log))
		}
	}
	return nil
}

// checkAgentCommands finds the programs the agent and supervisor commands
// start with, before anything changes, and says what is missing with
// doctor's words: a typo in --agent would otherwise cost every phase its
// attempts (each exiting 127) and leave the manifest [failed].
func checkAgentCommands(a *app, s settings, agent, super, top string) error {
	for _, c := range []struct{ what, cmd, src, fix string }{
		{"agent", agent, s.source["AGENT_CMD"], agentFix},
		{"supervisor", super, s.source["SUPERVISOR_CMD"], supervisorFix},
	} {
		if c.what == "supervisor" && c.cmd == agent || c.cmd == work.ScriptAgent {
			continue
		}
		prog, ok := commandWord(c.cmd)
		if !ok || shellBuiltin(prog) {
			continue // doctor cannot tell either; the agent's log will
		}
		if _, found := lookPathIn(prog, a.getenv("PATH"), top); !found {
			return fmt.Errorf("%s: %s (from %s): %s not found; fix: %s", c.what, clipCmd(c.cmd), c.src, prog, c.fix)
		}
	}
	return nil
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
		return notRepo(a.cwd)
	}
	msg := "roadmap folder not found: pass the folder that holds " + roadmap.ManifestName + ", or make one with claudopilot init"
	if err == nil {
		msg = "not a roadmap folder but a file: pass the folder that holds " + roadmap.ManifestName
	}
	return &roadmap.InvalidError{Path: relTo(a.cwd, dir), Problems: []roadmap.Problem{{Msg: msg}}}
}

func notRepo(dir string) error {
	return fmt.Errorf("%w: %s is not inside one; run claudopilot in your repository (git init makes one)", worktree.ErrNotRepo, dir)
}

// boolFlagValues reads `--keep-going 1` as `--keep-going=1`: a boolean
// flag takes no separate value in pflag, so the 1 would otherwise be taken
// for the roadmap folder. Only 0/1/true/false that name no folder count.
func boolFlagValues(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, isFlag := strings.CutPrefix(a, "--")
		f := fs.Lookup(name)
		if isFlag && f != nil && f.Value.Type() == "bool" && i+1 < len(args) {
			switch v := args[i+1]; v {
			case "0", "1", "true", "false":
				if _, err := os.Stat(v); err != nil {
					out = append(out, a+"="+v)
					i++
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// fanOut hands each event to every listener (which must not block: the
// notifier queues, the web hub drops for slow clients) and then to the
// returned channel, which the view reads in order.
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
