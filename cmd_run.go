package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
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
	queue  *engine.QueueSetup
	// alone runs the queue without a roadmap (queue): dir is any folder
	// in the repository, and the base is where pull requests go.
	alone bool
	// explicitBase marks BASE_BRANCH as chosen by the caller (demo).
	explicitBase bool
}

func runRoadmap(ctx context.Context, a *app, o runOptions) error {
	if !o.alone {
		if err := checkRoadmapDir(ctx, a, o.dir); err != nil {
			return err
		}
	}
	eng, err := engine.Open(ctx, engine.Options{
		Dir: o.dir, NoRoadmap: o.alone, Env: gitEnv(a), Log: a.s.Err, Rel: func(p string) string { return relTo(a.cwd, p) },
		Resolve: func(ctx context.Context, git *worktree.Client, rm *roadmap.Roadmap) (engine.Settings, error) {
			return resolveRun(ctx, a, git, rm, o)
		},
		Issues: o.issues || o.queue != nil, Queue: o.queue, Once: o.once,
		ResolveQueue: func(ctx context.Context, git *worktree.Client) (*engine.QueueSetup, error) {
			return prepareQueue(ctx, a, git, o.flags)
		},
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

// resolveRun resolves every knob and checks the base branch.
func resolveRun(ctx context.Context, a *app, git *worktree.Client, rm *roadmap.Roadmap, o runOptions) (engine.Settings, error) {
	var c engine.Settings
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
	if c.MaxParallel, err = s.int("MAX_PARALLEL"); err != nil {
		return c, err
	}
	if c.MaxParallel < 1 {
		return c, usageErrorf("MAX_PARALLEL must be at least 1 (from %s)", s.source["MAX_PARALLEL"])
	}
	if c.MaxSuper, err = s.int("MAX_SUPERVISOR_ATTEMPTS_PER_PHASE"); err != nil {
		return c, err
	}
	if c.Transient, err = s.int("TRANSIENT_API_MAX_RETRIES"); err != nil {
		return c, err
	}
	if c.LogCapMB, err = s.int("LOG_CAP_MB"); err != nil {
		return c, err
	}
	if c.KeepGoing, err = s.bool("KEEP_GOING"); err != nil {
		return c, err
	}
	if c.SecretScan, err = s.bool("SECRET_SCAN"); err != nil {
		return c, err
	}
	if c.MergeBatch, err = s.int("MERGE_BATCH"); err != nil {
		return c, err
	}
	if c.MergeBatch < 1 {
		return c, usageErrorf("MERGE_BATCH must be at least 1 (from %s)", s.source["MERGE_BATCH"])
	}
	if c.Stack, err = s.bool("STACK"); err != nil {
		return c, err
	}
	if c.GateRetries, err = s.int("GATE_RETRIES"); err != nil {
		return c, err
	}
	if c.GateRetries < 0 {
		return c, usageErrorf("GATE_RETRIES must not be negative (from %s)", s.source["GATE_RETRIES"])
	}
	switch v := s.str("MERGE_BATCH_GATE"); v {
	case "top", "":
	case "each":
		c.MergeBatchGateEach = true
	default:
		return c, usageErrorf("MERGE_BATCH_GATE must be top or each, not %q (from %s)", v, s.source["MERGE_BATCH_GATE"])
	}
	if c.IgnoreCheckpoints, err = s.bool("IGNORE_LOOP_CHECKPOINTS"); err != nil {
		return c, err
	}
	for k, dst := range map[string]*time.Duration{"POLL_SECONDS": &c.Poll, "STUCK_TIMEOUT": &c.Stuck, "AGENT_TIMEOUT": &c.AgentTimeout, "DEFAULT_RATE_LIMIT_SLEEP": &c.RateSleep} {
		if *dst, err = s.seconds(k); err != nil {
			return c, err
		}
	}
	c.Gate, c.Prepare, c.Agent = s.str("GATE_CMD"), s.str("WORKTREE_PREPARE_CMD"), s.str("AGENT_CMD")
	c.Super, c.Lockfile = s.str("SUPERVISOR_CMD"), s.str("LOCKFILE_CMD")
	c.ResumeCmd, c.Notify, c.Listen = s.str("AGENT_RESUME_CMD"), s.str("NOTIFY_CMD"), s.str("LISTEN")
	if c.ListenPublic, err = s.bool("LISTEN_PUBLIC"); err != nil {
		return c, err
	}
	if c.RunMaxCost, err = s.dollars("RUN_MAX_COST_USD"); err != nil {
		return c, err
	}
	if c.PhaseMaxCost, err = s.dollars("PHASE_MAX_COST_USD"); err != nil {
		return c, err
	}
	c.Bootstrap, c.Build = strings.TrimSpace(s.str("BOOTSTRAP_CMD")), strings.TrimSpace(s.str("BUILD_CMD"))
	if err := checkKnobs(s, o.knobs, func(k knob) bool { return k.kind == "regexp" || k.kind == "driver" || k.env == "MAX_ITER" }); err != nil {
		return c, err
	}
	if v := s.str("DERIVED_CONFLICT_FILES"); v != "" {
		c.Derived = regexp.MustCompile(v) // checked above
	}
	if c.Sandbox, err = sandboxFrom(ctx, a, git, s); err != nil {
		return c, err
	}
	if c.Sandbox == nil {
		// Without the sandbox, writes outside a worktree are reported.
		c.Stray = &sandbox.Watch{}
	}
	if c.Super == "" {
		c.Super = c.Agent
	}
	if strings.TrimSpace(c.Agent) == "" {
		return c, usageErrorf("AGENT_CMD is empty (from %s)", s.source["AGENT_CMD"])
	}
	if c.Lanes, err = resolveLanes(a, file, c.Agent, s.str("SUPERVISOR_CMD")); err != nil {
		return c, err
	}
	if len(c.Lanes.Lanes) == 0 {
		err = checkAgentCommands(a, s, c.Agent, c.Super, git.Dir)
	}
	for _, l := range c.Lanes.Lanes {
		ls := settings{source: map[string]string{"AGENT_CMD": pacer.EnvName(l.ID, "CMD"), "SUPERVISOR_CMD": pacer.EnvName(l.ID, "SUPERVISOR_CMD")}}
		if err == nil {
			err = checkAgentCommands(a, ls, l.Cmd, l.SupervisorCmd, git.Dir)
		}
	}
	if err != nil {
		return c, err
	}
	if c.Review, err = resolveReview(s); err != nil {
		return c, err
	}
	if c.Review.Cfg.On {
		if err := checkReviewCommand(a, s, c.Review.Cmd, git.Dir); err != nil {
			return c, err
		}
	}
	c.Base = s.str("BASE_BRANCH")
	c.BaseExplicit = c.Base != "" || o.explicitBase
	if o.alone {
		// No local merge: pull requests go into BASE_BRANCH, else into
		// the repository's default branch (read from GitHub at start).
		noteQueuePolicy(a, s)
		return c, nil
	}
	if c.Base == "" {
		if c.Base, err = git.CurrentBranch(ctx); err != nil {
			return c, err
		}
		if c.Base == "" {
			return c, errors.New("HEAD is detached: name the branch to merge into with --base or BASE_BRANCH")
		}
	}
	if !c.BaseExplicit && (c.Base == "main" || c.Base == "master") {
		return c, fmt.Errorf("refusing to merge into %s without being told to: pass --base %s (or BASE_BRANCH=%s), or switch to another branch", c.Base, c.Base, c.Base)
	}
	if ok, err := git.BranchExists(ctx, c.Base); err != nil {
		return c, err
	} else if !ok {
		return c, fmt.Errorf("base branch %s does not exist", c.Base)
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

// gitEnv is the environment for the driver's own git commands.
func gitEnv(a *app) []string {
	env := make([]string, 0, len(a.env))
	for _, k := range slices.Sorted(maps.Keys(a.env)) {
		env = append(env, k+"="+a.env[k])
	}
	// The mark lets a restarted driver find this one's git processes
	// (work.Reap); processes it starts through proc.Run get their own.
	return append(env, proc.Mark("git"))
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
		return engine.NotRepo(a.cwd)
	}
	msg := "roadmap folder not found: pass the folder that holds " + roadmap.ManifestName + ", or make one with claudopilot init"
	if err == nil {
		msg = "not a roadmap folder but a file: pass the folder that holds " + roadmap.ManifestName
	}
	return &roadmap.InvalidError{Path: relTo(a.cwd, dir), Problems: []roadmap.Problem{{Msg: msg}}}
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

// noteQueuePolicy announces the queue's changed retry defaults until the
// user sets either knob: a queue alone used to repair red checks 3 times
// and retry passing API errors 3 times; it now keeps run's policy.
func noteQueuePolicy(a *app, s settings) {
	if s.source["MAX_SUPERVISOR_ATTEMPTS_PER_PHASE"] != "the default" || s.source["TRANSIENT_API_MAX_RETRIES"] != "the default" {
		return
	}
	fmt.Fprintf(a.s.Err, "claudopilot: note: the queue retries as run does: %s repair runs per issue (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, was 3) and %s retries of passing API errors (TRANSIENT_API_MAX_RETRIES, was 3); set either to hide this note\n",
		s.str("MAX_SUPERVISOR_ATTEMPTS_PER_PHASE"), s.str("TRANSIENT_API_MAX_RETRIES"))
}
