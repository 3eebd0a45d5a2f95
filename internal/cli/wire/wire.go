// Package wire derives from the one settings model (package settings)
// the configurations the engine, the issue queue and the pacer take. Each
// derivation is the only one: run, queue, doctor, lanes and explain all
// come through here, so they agree by construction.
package wire

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// Env is the process environment as given, as a map (cmdutil.Env: declared
// there so that the commands that build no engine do not link it).
type Env = cmdutil.Env

// EnvMap reads "K=V" lines.
func EnvMap(environ []string) Env { return cmdutil.EnvMap(environ) }

// Lanes are the lanes and the pacer's settings (docs/lanes.md).
func Lanes(s *settings.Settings, env Env) engine.Lanes {
	return engine.Lanes{Lanes: s.Lanes, Pace: s.Pace,
		Settings: pacer.Settings{Lanes: s.Lanes, ProbeCmd: s.ProbeCmd, Resources: s.Resources, Env: env.Driver()}}
}

// Review is the review gate (docs/review.md): on when REVIEW_CMD is set.
func Review(s *settings.Settings) engine.Review {
	return engine.Review{Cmd: s.ReviewCmd, Cfg: scheduler.ReviewConfig{On: s.ReviewOn(), Slots: s.ReviewSlots, Skeptics: s.ReviewSkeptics, MaxRounds: s.ReviewMaxRounds, Lenses: s.ReviewLenses}}
}

// Sandbox builds the sandbox from the settings; nil when SANDBOX is off,
// or auto where bubblewrap does not work (the caller warns: SandboxNotes).
// A SANDBOX=bwrap that cannot work here is an error now, before anything
// changes.
func Sandbox(ctx context.Context, s *settings.Settings, git *worktree.Client, env Env) (*sandbox.Config, error) {
	if s.Sandbox == sandbox.Off {
		return nil, nil
	}
	rw := make([]string, len(s.SandboxPaths))
	for i, p := range s.SandboxPaths {
		rw[i] = sandbox.Real(p)
	}
	// The base checkout holds the phases' worktrees (.claudopilot/
	// worktrees): hiding it hides them all; each agent gets its own back.
	c := &sandbox.Config{Net: s.SandboxNetMode() == sandbox.NetHost, Gate: s.SandboxGate, RW: rw, Hide: []string{sandbox.Real(git.Dir)},
		Scratch: filepath.Join(sandbox.Real(git.Dir), ".claudopilot", "sandbox"), State: sandbox.HomeState(env["HOME"]),
		Keep: sandbox.ToolPaths(env["PATH"], s.Agent, s.SupervisorSet, s.ReviewCmd, s.Gate, s.Prepare, s.LockfileCmd, s.ScannerCmd)}
	if err := c.Probe(ctx); err != nil {
		if s.Sandbox == sandbox.Auto {
			return nil, nil
		}
		return nil, fmt.Errorf("SANDBOX=bwrap (from %s) cannot work here: %w (install bubblewrap, or set SANDBOX=off)", s.Source("SANDBOX"), err)
	}
	return c, outside(ctx, s, c)
}

// outside sets up SANDBOX_NET=outside on a sandbox that works: slirp4netns
// in front of it, probed. Where it is missing or fails, a SANDBOX_NET set
// to outside is an error now; the default falls back to the host's
// network (SandboxNotes warns).
func outside(ctx context.Context, s *settings.Settings, c *sandbox.Config) error {
	if s.SandboxNetMode() != sandbox.NetOutside {
		return nil
	}
	err := Slirp(ctx, c)
	if err == nil {
		return nil
	}
	c.Outside = ""
	if s.Source("SANDBOX_NET").Kind != settings.FromDefault {
		return fmt.Errorf("SANDBOX_NET=outside (from %s) cannot work here: %w (apt-get install slirp4netns, or set SANDBOX_NET to 1 or 0)", s.Source("SANDBOX_NET"), err)
	}
	c.Net = true
	return nil
}

// Slirp finds slirp4netns, puts it in front of c (SANDBOX_NET=outside)
// and probes c: the one check of run, queue and doctor.
func Slirp(ctx context.Context, c *sandbox.Config) error {
	p, err := exec.LookPath("slirp4netns")
	if err != nil {
		return fmt.Errorf("slirp4netns is not installed")
	}
	c.Outside = p
	return c.Probe(ctx)
}

// SandboxNotes are the lines a run prints at its start about the sandbox:
// that SANDBOX's default changed (until the user sets it), and that
// SANDBOX=auto found no working bubblewrap (sb is the run's sandbox, nil
// when none).
func SandboxNotes(ctx context.Context, s *settings.Settings, sb *sandbox.Config) []string {
	var out []string
	if s.Source("SANDBOX").Kind == settings.FromDefault {
		out = append(out, SandboxDefaultNote)
	}
	if s.Sandbox == sandbox.Auto && sb == nil {
		why := "it is not installed"
		if err := (&sandbox.Config{}).Probe(ctx); err != nil {
			why = err.Error()
		}
		out = append(out, "warning: SANDBOX=auto: bubblewrap does not work here ("+why+"): agents run unconfined, and writes outside their worktree are only reported (docs/sandbox.md)")
	}
	if sb != nil && s.SandboxNetMode() == sandbox.NetOutside && s.Source("SANDBOX_NET").Kind == settings.FromDefault {
		out = append(out, SandboxNetDefaultNote)
		if sb.Outside == "" {
			why := "it is not installed"
			if err := Slirp(ctx, &sandbox.Config{}); err != nil {
				why = err.Error()
			}
			out = append(out, "warning: SANDBOX_NET=outside needs slirp4netns ("+why+"): sandboxed agents share the host's network, its loopback services too (apt-get install slirp4netns; docs/sandbox.md)")
		}
	}
	return out
}

// DefaultNotes announce changed defaults (issue 26's), at start and in
// doctor, until the user sets the knob: the claude preset resumes a
// worker's session, and a stuck agent is poked before it fails.
func DefaultNotes(s *settings.Settings) []string {
	var out []string
	if s.ResumePreset {
		out = append(out, "AGENT_RESUME_CMD now defaults to the agent's command with --resume {session} under the claude preset (it was unset: a relaunch started over): a worker stopped by a rate limit, a passing API error, a poke or a crash carries on in its session; set AGENT_RESUME_CMD (empty to start over) to choose and silence this line (docs/run.md)")
	}
	if s.StuckTimeout > 0 && s.Source("STUCK_POKES").Kind == settings.FromDefault {
		out = append(out, fmt.Sprintf("STUCK_POKES now defaults to %d (it was 0: a stuck agent failed its attempt): a stuck agent is stopped and resumed in its session first, at no attempt; set STUCK_POKES to choose and silence this line (docs/run.md)", s.StuckPokes))
	}
	return out
}

// SandboxNetDefaultNote announces the changed default of SANDBOX_NET, at
// start and in doctor, until the user sets it.
const SandboxNetDefaultNote = "SANDBOX_NET now defaults to outside (it was 1): sandboxed agents reach outside addresses but not the host's loopback services; set SANDBOX_NET (outside, 1 or 0) to choose and silence this line (docs/sandbox.md)"

// SandboxDefaultNote announces the changed default of SANDBOX, at start
// and in doctor, until the user sets it.
const SandboxDefaultNote = "SANDBOX now defaults to auto (it was off): agents run in a bubblewrap sandbox where it works here; set SANDBOX (auto, bwrap or off) to choose and silence this line (docs/sandbox.md)"

// Run is what a run needs besides its settings: the repository, the
// environment, whether the queue runs alone (no local merge: the base is
// GitHub's), and the Kubernetes runner the root injected (nil: none;
// AGENT_RUNNER=kubernetes then refuses).
type Run struct {
	Git     *worktree.Client
	Env     Env
	Alone   bool
	Cluster Cluster
}

// Engine derives the run's engine settings: the base by the one base
// rule, every program it starts found, the sandbox probed. The problems
// of the settings themselves are Resolve's.
func Engine(ctx context.Context, s *settings.Settings, r Run) (engine.Settings, error) {
	c := engine.Settings{
		MaxParallel: s.MaxParallel, MaxSuper: s.MaxSupervisor, Transient: s.TransientRetries, LogCapMB: s.LogCapMB, LogKeep: s.LogKeep,
		KeepGoing: s.KeepGoing, IgnoreCheckpoints: s.IgnoreCheckpoints, SecretScan: s.SecretScan, SecretAllow: s.SecretAllow,
		MergeBatch: s.MergeBatch, GateSlots: s.GateSlots, GateRetries: s.GateRetries, TrainWait: s.TrainWait, Stack: s.Stack,
		Gate: s.Gate, Prepare: s.Prepare, Agent: s.Agent, Super: s.Supervisor,
		Lockfile: s.LockfileCmd, Bootstrap: s.Bootstrap, Build: s.Build, Derived: s.DerivedConflictFiles,
		Poll: s.Poll, Stuck: s.StuckTimeout, AgentTimeout: s.AgentTimeout, RateSleep: s.RateLimitSleep,
		Lanes: Lanes(s, r.Env), Review: Review(s), RunMaxCost: s.RunMaxCost, PhaseMaxCost: s.PhaseMaxCost,
		PhaseMaxTokens: int64(s.PhaseMaxTokens), PhaseMaxSessions: int64(s.PhaseMaxSessions), NeedsInputWait: s.NeedsInputWait, Attach: s.Attach,
		ResumeCmd: s.ResumeCmd, StuckPokes: s.StuckPokes, Notify: s.Notify, Listen: s.Listen, ListenPublic: s.ListenPublic, ListenOrigin: s.ListenOrigin,
		Protect:       s.Protected(r.Git.Dir),
		AgentEnvAllow: s.AgentEnvAllow,
		V0Prompts:     s.V0Prompts, PromptFiles: promptFiles(s.PromptFiles),
		PushBase: s.PushBase, PushCredential: envCredential(r.Env),
	}
	var err error
	if c.Remote, err = remote(s, r.Cluster); err != nil {
		return c, err
	}
	// Every program missing and a base the run cannot use, at once.
	missing := s.Missing(r.Env["PATH"], r.Git.Dir)
	use := settings.MergeHere
	if r.Alone {
		use = settings.OnGitHub
	}
	base, err := s.Base(ctx, r.Git, use)
	if err != nil || missing != nil {
		return c, errors.Join(missing, err)
	}
	c.Base, c.BaseExplicit = base.Branch, base.Explicit
	if c.Sandbox, err = Sandbox(ctx, s, r.Git, r.Env); err != nil {
		return c, err
	}
	if c.Sandbox == nil {
		// Without the sandbox, writes outside a worktree are reported.
		c.Stray = &sandbox.Watch{}
	}
	return c, nil
}

// Queue derives the issue queue's configuration (without its clients)
// and the GitHub client's. The branch pull requests go into is the run's
// base (engine.Open: one base for phases and issues).
func Queue(ctx context.Context, s *settings.Settings, git *worktree.Client, env Env) (issues.Config, issues.GitHubConfig, error) {
	var c issues.Config
	g, err := GitHub(ctx, s, git, env, "queue")
	if err != nil {
		return c, g, err
	}
	c = issues.Config{
		Token: g.Token, Labels: issues.Labels(s.Labels), NewestFirst: s.IssueOrder == "newest",
		BatchSize: s.BatchSize, AutoMerge: s.AutoMerge, MergeMethod: s.MergeMethod, ClaimStale: s.ClaimStale, ForeignClaims: s.ForeignClaims,
		MergeMethodDefaulted: s.Source("MERGE_METHOD").Kind == settings.FromDefault,
		TrustedAuthors:       s.TrustedAuthors, AgentEnvAllow: s.AgentEnvAllow,
		LogCap: int64(s.LogCapMB) << 20,
		Poll:   s.QueuePoll, StuckTimeout: s.StuckTimeout, AgentTimeout: s.AgentTimeout, RateLimitSleep: s.RateLimitSleep,
		ChecksGrace: s.ChecksGrace, ChecksTimeout: s.ChecksTimeout,
		Gate: s.Gate, Prepare: s.Prepare, Agent: s.Agent, Supervisor: s.Supervisor,
		Env: env.Driver(), ScannerLabel: s.ScannerLabel, CampaignPrefix: s.CampaignPrefix,
	}
	return c, g, nil
}

// Scan derives the scanners' refill settings (docs/queue.md).
func Scan(s *settings.Settings) engine.ScanSettings {
	return engine.ScanSettings{
		Threshold: s.RefillThreshold, Interval: time.Duration(s.ScannerIntervalMinutes) * time.Minute,
		Max: s.ScannerMaxIssues, Cmd: s.ScannerCmd, Focus: s.ScannerFocus,
	}
}

// RefillNote announces the refill, new in a polling queue, at start and in
// doctor until REFILL_THRESHOLD is set ("" once it is, or when off).
func RefillNote(s *settings.Settings) string {
	if s.Source("REFILL_THRESHOLD").Kind != settings.FromDefault || s.RefillThreshold <= 0 {
		return ""
	}
	return fmt.Sprintf("when fewer than %d issues are ready or proposed, a polling queue runs a scanner (at most every %d minutes) and files its findings labelled %s for a maintainer to queue (REFILL_THRESHOLD=0 turns this off; set it to hide this note)",
		s.RefillThreshold, s.ScannerIntervalMinutes, s.ScannerLabel)
}

// Promote derives the promote loop's settings (docs/queue.md).
func Promote(s *settings.Settings) engine.PromoteSettings {
	return engine.PromoteSettings{To: s.PromoteTo, Every: s.PromoteEvery}
}

// GitHub resolves the GitHub client's settings as the queue does: the
// token (GITHUB_TOKEN, else GH_TOKEN), the repository (GH_REPO, else the
// origin remote) and GITHUB_API_URL. who names the command in errors.
func GitHub(ctx context.Context, s *settings.Settings, git *worktree.Client, env Env, who string) (issues.GitHubConfig, error) {
	var g issues.GitHubConfig
	var err error
	g.Token = envToken(env)
	if g.Tokens, err = AppTokens(s, git, env); err != nil {
		return g, err
	}
	if g.Token == "" && g.Tokens == nil {
		return g, &settings.Error{Problems: []settings.Problem{{Msg: who + " needs a GitHub token: set GITHUB_TOKEN or GH_TOKEN, GH_APP_TOKEN_CMD, or GH_APP_ID with GH_APP_INSTALLATION_ID and GH_APP_PRIVATE_KEY_FILE (it is never passed to agents)"}}}
	}
	repo := strings.TrimSpace(s.Repo)
	if repo == "" {
		u, _ := git.RemoteURL(ctx, "origin")
		if repo = RepoFromRemote(u); repo == "" {
			return g, &settings.Error{Problems: []settings.Problem{{Msg: fmt.Sprintf("%s: cannot tell the GitHub repository from the origin remote (%q): pass --repo owner/name or set GH_REPO", who, u)}}}
		}
	}
	if g.Owner, g.Repo, err = splitRepo(repo); err != nil {
		return g, &settings.Error{Problems: []settings.Problem{{Key: "GH_REPO", Val: repo, Src: s.Source("GH_REPO"), Msg: err.Error()}}}
	}
	g.APIURL = s.APIURL
	g.Timeout = 30 * time.Second
	return g, nil
}

// envToken is the GitHub token of the environment: GITHUB_TOKEN, else
// GH_TOKEN.
func envToken(env Env) string {
	if t := env["GITHUB_TOKEN"]; t != "" {
		return t
	}
	return env["GH_TOKEN"]
}

// envCredential gives PUSH_BASE's fetch and push the environment's
// token over the credential pipe (never in git's environment); nil
// without one: git's own helpers (an ssh key, a credential store).
func envCredential(env Env) worktree.Credential {
	tok := envToken(env)
	if tok == "" {
		return nil
	}
	return func(context.Context) (string, string, error) { return "x-access-token", tok, nil }
}

// AppTokens is the source of expiring GitHub App installation tokens, if
// one is set: GH_APP_TOKEN_CMD (issue-orchestrator's GH_APP_TOKEN_SCRIPT
// too), else GH_APP_ID, GH_APP_INSTALLATION_ID and GH_APP_PRIVATE_KEY_FILE
// (all three). nil: the fixed GITHUB_TOKEN.
func AppTokens(s *settings.Settings, git *worktree.Client, env Env) (issues.TokenSource, error) {
	if cmd := strings.TrimSpace(s.AppTokenCmd); cmd != "" {
		return issues.CommandToken{Cmd: cmd, Dir: git.Dir, Env: env.Driver()}, nil
	}
	id, inst, keyFile := strings.TrimSpace(s.AppID), strings.TrimSpace(s.AppInstallation), strings.TrimSpace(s.AppKeyFile)
	if id == "" && inst == "" && keyFile == "" {
		return nil, nil
	}
	if id == "" || inst == "" || keyFile == "" {
		return nil, &settings.Error{Problems: []settings.Problem{{Msg: fmt.Sprintf("a GitHub App needs GH_APP_ID, GH_APP_INSTALLATION_ID and GH_APP_PRIVATE_KEY_FILE together (GH_APP_ID from %s, GH_APP_INSTALLATION_ID from %s, GH_APP_PRIVATE_KEY_FILE from %s)", s.Source("GH_APP_ID"), s.Source("GH_APP_INSTALLATION_ID"), s.Source("GH_APP_PRIVATE_KEY_FILE"))}}}
	}
	key, err := issues.LoadAppKey(keyFile)
	if err != nil {
		return nil, &settings.Error{Problems: []settings.Problem{{Key: "GH_APP_PRIVATE_KEY_FILE", Val: keyFile, Src: s.Source("GH_APP_PRIVATE_KEY_FILE"), Msg: err.Error()}}}
	}
	return issues.AppToken{AppID: id, Installation: inst, Key: key, APIURL: s.APIURL}, nil
}

// RepoFromRemote reads owner/name from a remote URL (https, ssh,
// scp-like git@host:owner/name.git); "" when it is not one (a local path).
func RepoFromRemote(u string) string {
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

// promptFiles are the prompt files the settings name, by the prompt
// loader's role names.
func promptFiles(f settings.PromptFiles) map[string]string {
	m := map[string]string{}
	for role, p := range map[string]string{"worker": f.Worker, "supervisor": f.Supervisor, "worker.project": f.WorkerProject, "supervisor.project": f.SupervisorProject} {
		if p != "" {
			m[role] = p
		}
	}
	return m
}
