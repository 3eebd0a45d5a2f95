package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/worktree"
)

const queueAbout = `
Work the GitHub issue queue: every open issue labelled READY_LABEL (by a
user with write access, or written by one of TRUSTED_AUTHORS) is a node
"#N" of the same dependency graph as a manifest's phases; its body is the
phase doc, and lines such as "Depends on #12", "Blocked by #12, #14" or
"Depends on phase-03" (or a task list under a "Dependencies" heading) are
its deps. An issue whose deps are done is claimed (CLAIM_LABEL, a "claimed
by" comment; exactly one instance wins, even across machines) and worked
like a roadmap phase, in a worktree on branch claudopilot/issue-N cut from
origin/<base>. The driver runs the gate, pushes the branch, opens a draft
pull request that closes the issue, and watches its checks: red checks go
to the repair supervisor (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE runs, as for a
phase: one retry policy whatever the command), green ones are merged
(AUTO_MERGE) or marked ready for review (REVIEW_LABEL). Any failure sets BLOCKED_LABEL with
one comment saying why. Missing labels are created at startup.

The token (GITHUB_TOKEN, else GH_TOKEN) never reaches agents, and
everything posted to GitHub is scrubbed of it and of common secret shapes.
With a roadmap (ROADMAP_DIR, or ./roadmap found as for run), issues may
depend on its phases.

Settings come from flags, then the environment, then claudopilot.config,
then defaults. Each flag names its variable. See docs/queue.md.

Exit codes: 0 the queue was worked (--once) or the loop stopped cleanly;
1 fatal (no repository, no git identity, GitHub refused the token, already
running, polls keep failing with --once); 3 invalid roadmap; 64 flag or
setting misuse; 130/143 interrupted.`

const queueExample = `  GITHUB_TOKEN=… claudopilot queue --once
  claudopilot queue --repo acme/widgets --auto-merge --max-parallel 2
  GITHUB_API_URL=https://ghe.example.com/api/v3 claudopilot queue roadmap/`

// queueKnobs are the queue's settings: its own, then the run knobs that
// apply to it (POLL_SECONDS defaults to 60 here).
func queueKnobs() []knob {
	ks := []knob{
		{"GH_REPO", "repo", "", "the GitHub repository as owner/name (default: from the origin remote)", "string"},
		{"READY_LABEL", "ready-label", issues.DefaultLabels.Ready, "label that queues an issue", "string"},
		{"CLAIM_LABEL", "claim-label", issues.DefaultLabels.Claim, "label of an issue an instance works on", "string"},
		{"BLOCKED_LABEL", "blocked-label", issues.DefaultLabels.Blocked, "label of an issue that failed or has invalid deps", "string"},
		{"REVIEW_LABEL", "review-label", issues.DefaultLabels.Review, "label of an issue whose pull request waits for a human merge", "string"},
		{"ISSUE_ORDER", "issue-order", "oldest", "which ready issues go first: oldest or newest", "string"},
		{"BATCH_SIZE", "batch-size", "25", "ready issues read per poll", "int"},
		{"AUTO_MERGE", "auto-merge", "0", "merge pull requests with green checks (else mark them ready for review)", "bool"},
		{"MERGE_METHOD", "merge-method", "merge", "merge, squash or rebase", "string"},
		{"GITHUB_API_URL", "api-url", "", "REST API base URL, used as given (default https://api.github.com; GitHub Enterprise: https://HOST/api/v3)", "string"},
		{"CLAIM_STALE_HOURS", "claim-stale-hours", "6", "hours after which a claim without an open pull request may be released", "string"},
		{"CHECKS_GRACE", "checks-grace", "120", "seconds after a push (and marking ready) before \"no checks\" counts as green", "seconds"},
		{"CHECKS_TIMEOUT", "checks-timeout", "7200", "seconds after a push before checks still pending block the issue", "seconds"},
		{"TRUSTED_AUTHORS", "trusted-authors", "", "comma-separated logins whose issues are trusted whoever labelled them", "string"},
		{"AGENT_ENV_ALLOW", "agent-env-allow", "", "comma-separated variables agents keep although they hold the token (GITHUB_TOKEN, GH_TOKEN)", "string"},
	}
	byEnv := map[string]knob{}
	for _, k := range runKnobs() {
		byEnv[k.env] = k
	}
	for _, name := range []string{"MAX_PARALLEL", "BASE_BRANCH", "GATE_CMD", "WORKTREE_PREPARE_CMD", "AGENT_CMD", "AGENT_DRIVER", "AGENT_MODEL", "SUPERVISOR_CMD",
		"MAX_SUPERVISOR_ATTEMPTS_PER_PHASE", "TRANSIENT_API_MAX_RETRIES", "POLL_SECONDS", "STUCK_TIMEOUT", "AGENT_TIMEOUT", "DEFAULT_RATE_LIMIT_SLEEP", "LOG_CAP_MB",
		"SANDBOX", "SANDBOX_NET", "SANDBOX_GATE", "SANDBOX_RW",
		"REVIEW_CMD", "REVIEW_LENSES", "REVIEW_SKEPTICS", "REVIEW_SLOTS", "REVIEW_MAX_ROUNDS",
		"LISTEN", "LISTEN_PUBLIC"} {
		k := byEnv[name]
		switch name {
		case "POLL_SECONDS":
			k.def, k.help = "60", "seconds between reads of the queue (and of a pull request's checks)"
		case "BASE_BRANCH":
			k.help = "branch pull requests go into (default: the repository's default branch)"
		case "AGENT_CMD":
			k.help = "agent command, run with sh -c in the issue's worktree"
		case "MAX_SUPERVISOR_ATTEMPTS_PER_PHASE":
			k.help = "repair runs per failed issue: after a local failure (agent exit, no commit, red gate) or red checks"
		}
		ks = append(ks, k)
	}
	return ks
}

func cmdQueue(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "queue", "queue [--repo owner/name] [ROADMAP_DIR] [flags]", queueAbout, queueExample)
	ks := queueKnobs()
	addKnobFlags(fs, ks)
	once := fs.Bool("once", false, "work the current queue, then exit (default: keep polling every POLL_SECONDS)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf("queue takes at most one ROADMAP_DIR, got %d", fs.NArg())
	}
	early := resolveWith(fs, ks, nil, nil, nil)
	if err := checkKnobs(early, ks, func(k knob) bool { return fs.Changed(k.flag) }); err != nil {
		return err
	}
	git, err := worktree.Open(ctx, a.cwd, gitEnv(a))
	if err != nil {
		if errors.Is(err, worktree.ErrNotRepo) {
			return fmt.Errorf("%s is not inside a git repository (the queue works in a clone of the repository): %w", a.cwd, err)
		}
		return err
	}
	// The config file may hold run knobs the queue does not use.
	file, _, err := readConfig(git.Dir, append(runKnobs(), ks...))
	if err != nil {
		return err
	}
	s := resolveWith(fs, ks, a.env, file, nil)
	if err := checkKnobs(s, ks, nil); err != nil {
		return err
	}
	cfg, ghc, err := resolveQueue(ctx, a, git, s)
	if err != nil {
		return err
	}
	cfg.Once = *once

	// A roadmap, if there is one, provides the phases issues may depend on,
	// and runs beside the queue.
	dir, err := findRoadmapDir(ctx, a, fs.Arg(0))
	if err != nil {
		return err
	}
	manifestPath := filepath.Join(dir, roadmap.ManifestName)
	withRoadmap := false
	if _, err := os.Stat(manifestPath); err == nil {
		withRoadmap = true
	} else if fs.Arg(0) != "" {
		return &roadmap.InvalidError{Path: manifestPath, Problems: []roadmap.Problem{{Msg: "manifest not found"}}}
	}
	// One process, one lock, one engine: beside the roadmap's phases, or
	// alone (an empty roadmap, no local merger); the same retry policy,
	// slots, lanes, review gate and base either way.
	qs := &engine.QueueSetup{Cfg: cfg, GitHub: ghc}
	if withRoadmap {
		return runRoadmap(ctx, a, runOptions{dir: dir, flags: fs, knobs: runKnobs(), queue: qs})
	}
	return runRoadmap(ctx, a, runOptions{dir: a.cwd, flags: fs, knobs: runKnobs(), queue: qs, alone: true})
}

// prepareQueue resolves the queue's settings for `run --issues`, from the
// environment and claudopilot.config (run's flags that the queue shares,
// such as --max-parallel, apply too).
func prepareQueue(ctx context.Context, a *app, git *worktree.Client, fs flagLookup) (*engine.QueueSetup, error) {
	ks := queueKnobs()
	file, _, err := readConfig(git.Dir, append(runKnobs(), ks...))
	if err != nil {
		return nil, err
	}
	s := resolveWith(fs, ks, a.env, file, nil)
	if err := checkKnobs(s, ks, nil); err != nil {
		return nil, err
	}
	cfg, ghc, err := resolveQueue(ctx, a, git, s)
	if err != nil {
		return nil, err
	}
	return &engine.QueueSetup{Cfg: cfg, GitHub: ghc}, nil
}

// resolveQueue turns the settings into the queue's configuration (without
// its clients) and the GitHub client's.
func resolveQueue(ctx context.Context, a *app, git *worktree.Client, s settings) (issues.Config, issues.GitHubConfig, error) {
	var c issues.Config
	g, err := resolveGitHub(ctx, a, git, s, "queue")
	if err != nil {
		return c, g, err
	}

	c.Token = g.Token
	c.Labels = issues.Labels{Ready: s.str("READY_LABEL"), Claim: s.str("CLAIM_LABEL"), Blocked: s.str("BLOCKED_LABEL"), Review: s.str("REVIEW_LABEL")}
	switch strings.ToLower(strings.TrimSpace(s.str("ISSUE_ORDER"))) {
	case "oldest", "":
	case "newest":
		c.NewestFirst = true
	default:
		return c, g, usageErrorf("ISSUE_ORDER=%q from %s: want oldest or newest", s.str("ISSUE_ORDER"), s.source["ISSUE_ORDER"])
	}
	if c.BatchSize, err = s.int("BATCH_SIZE"); err != nil {
		return c, g, err
	}
	if c.BatchSize < 1 {
		return c, g, usageErrorf("BATCH_SIZE must be at least 1 (from %s)", s.source["BATCH_SIZE"])
	}
	if c.AutoMerge, err = s.bool("AUTO_MERGE"); err != nil {
		return c, g, err
	}
	c.MergeMethod = strings.ToLower(strings.TrimSpace(s.str("MERGE_METHOD")))
	switch c.MergeMethod {
	case "merge", "squash", "rebase":
	default:
		return c, g, usageErrorf("MERGE_METHOD=%q from %s: want merge, squash or rebase", s.str("MERGE_METHOD"), s.source["MERGE_METHOD"])
	}
	hours, err := strconv.ParseFloat(strings.TrimSpace(s.str("CLAIM_STALE_HOURS")), 64)
	if err != nil || hours <= 0 {
		return c, g, usageErrorf("CLAIM_STALE_HOURS=%q from %s: want a number of hours > 0", s.str("CLAIM_STALE_HOURS"), s.source["CLAIM_STALE_HOURS"])
	}
	c.ClaimStale = time.Duration(hours * float64(time.Hour))
	c.TrustedAuthors = splitList(s.str("TRUSTED_AUTHORS"))
	c.AgentEnvAllow = splitList(s.str("AGENT_ENV_ALLOW"))
	if c.MaxParallel, err = s.int("MAX_PARALLEL"); err != nil {
		return c, g, err
	}
	if c.MaxParallel < 1 {
		return c, g, usageErrorf("MAX_PARALLEL must be at least 1 (from %s)", s.source["MAX_PARALLEL"])
	}
	if c.MaxSupervisorAttempts, err = s.int("MAX_SUPERVISOR_ATTEMPTS_PER_PHASE"); err != nil {
		return c, g, err
	}
	logCap, err := s.int("LOG_CAP_MB")
	if err != nil {
		return c, g, err
	}
	c.LogCap = int64(logCap) << 20
	for k, dst := range map[string]*time.Duration{"POLL_SECONDS": &c.Poll, "STUCK_TIMEOUT": &c.StuckTimeout, "AGENT_TIMEOUT": &c.AgentTimeout, "DEFAULT_RATE_LIMIT_SLEEP": &c.RateLimitSleep, "CHECKS_GRACE": &c.ChecksGrace, "CHECKS_TIMEOUT": &c.ChecksTimeout} {
		if *dst, err = s.seconds(k); err != nil {
			return c, g, err
		}
	}
	if c.Poll <= 0 {
		return c, g, usageErrorf("POLL_SECONDS must be more than 0 (from %s)", s.source["POLL_SECONDS"])
	}
	if c.Sandbox, err = sandboxFrom(ctx, a, git, s); err != nil {
		return c, g, err
	}
	if c.Sandbox == nil {
		c.Stray = &sandbox.Watch{}
	}
	c.Gate, c.Prepare, c.Agent, c.Supervisor = s.str("GATE_CMD"), s.str("WORKTREE_PREPARE_CMD"), s.str("AGENT_CMD"), s.str("SUPERVISOR_CMD")
	if strings.TrimSpace(c.Agent) == "" {
		return c, g, usageErrorf("AGENT_CMD is empty (from %s)", s.source["AGENT_CMD"])
	}
	if c.Agent == "script" || c.Supervisor == "script" {
		return c, g, usageErrorf("the built-in script agent works on roadmap phases only; name an agent command for the queue")
	}
	rs, err := resolveReview(s)
	if err != nil {
		return c, g, err
	}
	if rs.Cfg.On {
		if err := checkReviewCommand(a, s, rs.Cmd, git.Dir); err != nil {
			return c, g, err
		}
		c.Review = issues.ReviewConfig{Cmd: rs.Cmd, Lenses: rs.Cfg.Lenses, Skeptics: rs.Cfg.Skeptics, MaxRounds: rs.Cfg.MaxRounds, Slots: rs.Cfg.Slots}
	}
	c.Base = s.str("BASE_BRANCH")
	c.Env = gitEnv(a)
	return c, g, nil
}

// resolveGitHub resolves the GitHub client's settings as the queue does:
// the token (GITHUB_TOKEN, else GH_TOKEN), the repository (GH_REPO, else
// the origin remote) and GITHUB_API_URL. who names the command in errors.
func resolveGitHub(ctx context.Context, a *app, git *worktree.Client, s settings, who string) (issues.GitHubConfig, error) {
	var g issues.GitHubConfig
	var err error
	g.Token = a.env["GITHUB_TOKEN"]
	if g.Token == "" {
		g.Token = a.env["GH_TOKEN"]
	}
	if g.Token == "" {
		return g, usageErrorf("%s needs a GitHub token: set GITHUB_TOKEN or GH_TOKEN (it is never passed to agents)", who)
	}
	repo := strings.TrimSpace(s.str("GH_REPO"))
	if repo == "" {
		u, _ := git.RemoteURL(ctx, "origin")
		if repo = repoFromRemote(u); repo == "" {
			return g, usageErrorf("%s: cannot tell the GitHub repository from the origin remote (%q): pass --repo owner/name or set GH_REPO", who, u)
		}
	}
	if g.Owner, g.Repo, err = splitRepo(repo); err != nil {
		return g, usageErrorf("GH_REPO=%q from %s: %v", repo, s.source["GH_REPO"], err)
	}
	g.APIURL = s.str("GITHUB_API_URL")
	g.Timeout = 30 * time.Second
	return g, nil
}

// repoFromRemote reads owner/name from a remote URL (https, ssh, scp-like
// git@host:owner/name.git); "" when it is not one (a local path).
func repoFromRemote(u string) string {
	u = strings.TrimSpace(u)
	var p string
	switch {
	case strings.Contains(u, "://"):
		pu, err := url.Parse(u)
		if err != nil || pu.Host == "" || pu.Scheme == "file" {
			return ""
		}
		p = pu.Path
	case strings.Contains(u, "@") && strings.Contains(u, ":"):
		_, p, _ = strings.Cut(u, ":")
	default:
		return ""
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	parts := strings.Split(p, "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2] + "/" + parts[len(parts)-1]
}

// splitRepo accepts owner/name and HOST/owner/name.
func splitRepo(r string) (owner, name string, err error) {
	parts := strings.Split(strings.Trim(r, "/"), "/")
	if len(parts) == 3 {
		parts = parts[1:]
	}
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", errors.New("want owner/name")
	}
	return parts[0], strings.TrimSuffix(parts[1], ".git"), nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

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
