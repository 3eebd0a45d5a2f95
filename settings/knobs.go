package settings

import (
	"regexp"
	"time"

	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/sandbox"
)

// DefaultAgent is Claude Code in headless mode.
const DefaultAgent = "claude -p --permission-mode bypassPermissions --output-format stream-json --verbose"

// Scope says which commands take a knob as a flag: run's (and doctor's),
// queue's, or none (the lanes' and the pacer's, set in a file or the
// environment). Every knob is resolved and checked for every command.
type Scope uint8

const (
	Run Scope = 1 << iota
	Queue
)

// Kind is how a knob's value is read.
type Kind string

const (
	String  Kind = "string"
	Int     Kind = "int"     // a whole number ≥ Knob.Min
	Bool    Kind = "bool"    // 1/0, true/false, yes/no, on/off
	Seconds Kind = "seconds" // seconds ≥ 0 (fractions allowed) or a Go duration
	Dollars Kind = "dollars" // dollars ≥ 0, "$" allowed
	Number  Kind = "number"  // a number > 0
	Hours   Kind = "hours"   // hours > 0
	Choice  Kind = "choice"  // one of Knob.Choices, any case
	List    Kind = "list"    // comma- or space-separated words
	Globs   Kind = "globs"   // a List of path globs (** crosses folders)
	Regexp  Kind = "regexp"  // a regular expression ("" none)
	Driver  Kind = "driver"  // "" or a key of agentDrivers
	Sandbox Kind = "sandbox" // a SANDBOX mode
	Protect Kind = "protect" // PROTECTED_PATHS: comma-separated globs of repository paths, or none (protect.ParseList)
)

// Knob is one setting: its name in the environment and the files, its
// flag, its default and what it means, and the typed field it fills.
type Knob struct {
	Env, Flag, Def, Help string
	Kind                 Kind
	Scope                Scope
	Min                  int      // Int: the least value
	Choices              []string // Choice: the values allowed
	// QueueDef and QueueHelp are the queue's own default and help, when
	// they differ (a queue polls GitHub, not a file).
	QueueDef, QueueHelp string
	// to stores the value read by Kind into its field of Settings.
	to func(*Settings, any)
}

// Aliases are Claudopilot's other names for settings, read from the
// environment and the files when the name itself is not set.
var Aliases = map[string]string{"LOCKFILE_CMD": "LOCKFILE_REGEN_CMD", "GH_APP_TOKEN_CMD": "GH_APP_TOKEN_SCRIPT"}

// field makes a Knob's setter from the address of its typed field.
func field[T any](f func(*Settings) *T) func(*Settings, any) {
	return func(s *Settings, v any) { *f(s) = v.(T) }
}

// Knobs is the table of every setting, in the order --help and
// claudopilot.config list them: run's (most of which the queue takes too),
// the queue's own, and the lanes' and the pacer's.
func Knobs() []Knob {
	return append(append(append(append(runKnobs(), queueKnobs()...), laneKnobs()...), placeKnobs()...), clusterKnobs()...)
}

// clusterKnobs say where agents run (docs/cluster.md): no flags; set up
// once, in claudopilot.config or the environment.
func clusterKnobs() []Knob {
	str := func(env, help string, f func(s *Settings) *string) Knob {
		return Knob{Env: env, Help: help, Kind: String, to: field(f)}
	}
	return []Knob{
		{Env: "AGENT_RUNNER", Def: "local", Help: "where agent attempts run: local (processes here) or kubernetes (one Job each; docs/cluster.md)", Kind: Choice, Choices: []string{"local", "kubernetes"}, to: field(func(s *Settings) *string { return &s.AgentRunner })},
		str("K8S_NAMESPACE", "the namespace of the agents' Jobs (AGENT_RUNNER=kubernetes)", func(s *Settings) *string { return &s.K8s.Namespace }),
		str("K8S_IMAGE", "the agents' image: sh, git and the agent's CLI", func(s *Settings) *string { return &s.K8s.Image }),
		str("K8S_REMOTE", "a git remote URL the driver pushes each attempt's start to and the cluster pushes its result to", func(s *Settings) *string { return &s.K8s.Remote }),
		str("K8S_KUBECONFIG", "the driver's kubeconfig (default: $KUBECONFIG, ~/.kube/config, else in-cluster)", func(s *Settings) *string { return &s.K8s.Kubeconfig }),
		str("K8S_CONTEXT", "the kubeconfig's context (default: its current one)", func(s *Settings) *string { return &s.K8s.Context }),
		str("K8S_SECRET", "the Secret whose keys become the agent container's environment (its credentials)", func(s *Settings) *string { return &s.K8s.Secret }),
		str("K8S_GIT_SECRET", "the Secret holding token, a git token that may push claudopilot/attempt/* only", func(s *Settings) *string { return &s.K8s.GitSecret }),
		str("K8S_SERVICE_ACCOUNT", "the agents' pods' service account (its token is never mounted)", func(s *Settings) *string { return &s.K8s.ServiceAccount }),
		str("K8S_RUNTIME_CLASS", "the agents' pods' RuntimeClass (gvisor, kata)", func(s *Settings) *string { return &s.K8s.RuntimeClass }),
		str("K8S_CPU", "the agent container's CPU request and limit (2, 500m)", func(s *Settings) *string { return &s.K8s.CPU }),
		str("K8S_MEMORY", "the agent container's memory request and limit (2Gi)", func(s *Settings) *string { return &s.K8s.Memory }),
		str("K8S_SESSION_CLAIM", "a PersistentVolumeClaim the agents' home (their CLI's session store) lives on, a folder per phase, so a resumed attempt finds its session; empty: each attempt starts fresh", func(s *Settings) *string { return &s.K8s.SessionClaim }),
		{Env: "K8S_PENDING_SECONDS", Def: "600", Help: "seconds an agent's pod may wait to run before its phase stops with reason unschedulable", Kind: Seconds, to: field(func(s *Settings) *time.Duration { return &s.K8s.Pending })},
	}
}

// placeKnobs say where the roadmap and the prompts are, for a layout that
// is not the default one (Claudopilot's settings): no flags.
func placeKnobs() []Knob {
	return []Knob{
		{Env: "ROADMAP_DIR", Help: "the roadmap folder when run, plan, status… are given none, from the repository's top (default: roadmap, else .claudopilot/roadmap)", Kind: String, to: field(func(s *Settings) *string { return &s.RoadmapDir })},
		{Env: "MANIFEST", Help: "the manifest, <roadmap folder>/EXECUTION-MANIFEST.md: names the roadmap folder as ROADMAP_DIR does", Kind: String, to: field(func(s *Settings) *string { return &s.Manifest })},
		{Env: "PROMPT_FILE", Help: "the worker's prompt, instead of the built-in one (the phase and the contract are appended, as Claudopilot did)", Kind: String, to: field(func(s *Settings) *string { return &s.PromptFiles.Worker })},
		{Env: "SUPERVISOR_PROMPT_FILE", Help: "the supervisor's prompt, instead of the built-in one (the phase and the failure are appended)", Kind: String, to: field(func(s *Settings) *string { return &s.PromptFiles.Supervisor })},
		{Env: "WORKER_PROJECT_PROMPT", Help: "a file appended to the worker's prompt", Kind: String, to: field(func(s *Settings) *string { return &s.PromptFiles.WorkerProject })},
		{Env: "SUPERVISOR_PROJECT_PROMPT", Help: "a file appended to the supervisor's prompt", Kind: String, to: field(func(s *Settings) *string { return &s.PromptFiles.SupervisorProject })},
	}
}

// rq: a knob of run's that the queue takes too.
const rq = Run | Queue

func runKnobs() []Knob {
	return []Knob{
		{Env: "MAX_PARALLEL", Flag: "max-parallel", Def: "3", Help: "agents running at once", Kind: Int, Min: 1, Scope: rq, to: field(func(s *Settings) *int { return &s.MaxParallel })},
		{Env: "BASE_BRANCH", Flag: "base", Help: "branch to merge into (default: the current branch; main and master only when named)", Kind: String, Scope: rq,
			QueueHelp: "branch pull requests go into (default: the repository's default branch; under run --issues, run's base)", to: field(func(s *Settings) *string { return &s.BaseBranch })},
		{Env: "GATE_CMD", Flag: "gate", Def: "true", Help: "command that must pass in a phase's worktree before it merges", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.Gate })},
		{Env: "WORKTREE_PREPARE_CMD", Flag: "prepare", Help: "command run once in each new worktree (install deps, …)", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.Prepare })},
		{Env: "AGENT_CMD", Flag: "agent", Def: DefaultAgent, Help: `agent command, run with sh -c; "script" runs each doc's first sh block`, Kind: String, Scope: rq,
			QueueHelp: "agent command, run with sh -c in the issue's worktree", to: field(func(s *Settings) *string { return &s.Agent })},
		{Env: "AGENT_DRIVER", Flag: "agent-driver", Help: "build the agent command for claude, codex or opencode (when AGENT_CMD is not set)", Kind: Driver, Scope: rq, to: field(func(s *Settings) *string { return &s.AgentDriver })},
		{Env: "AGENT_MODEL", Flag: "model", Help: "the model AGENT_DRIVER's command asks for (default: the tool's own)", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.AgentModel })},
		{Env: "SUPERVISOR_CMD", Flag: "supervisor", Help: "repair supervisor command (default: AGENT_CMD)", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.SupervisorSet })},
		{Env: "MAX_SUPERVISOR_ATTEMPTS_PER_PHASE", Flag: "max-supervisor-attempts", Def: "2", Help: "repair runs per failed phase", Kind: Int, Scope: rq,
			QueueHelp: "repair runs per failed issue: after a local failure (agent exit, no commit, red gate) or red checks", to: field(func(s *Settings) *int { return &s.MaxSupervisor })},
		{Env: "KEEP_GOING", Flag: "keep-going", Def: "0", Help: "park failed phases as [blocked] and go on with the rest", Kind: Bool, Scope: Run, to: field(func(s *Settings) *bool { return &s.KeepGoing })},
		{Env: "POLL_SECONDS", Flag: "poll-seconds", Def: "5", Help: "how often outside state is re-read (the loop itself is event-driven)", Kind: Seconds, Scope: rq,
			QueueDef: "60", QueueHelp: "seconds between reads of the queue (and of a pull request's checks)", to: field(func(s *Settings) *time.Duration { return &s.Poll })},
		{Env: "IGNORE_LOOP_CHECKPOINTS", Flag: "ignore-checkpoints", Def: "0", Help: "do not stop at LOOP-CHECKPOINT markers", Kind: Bool, Scope: Run, to: field(func(s *Settings) *bool { return &s.IgnoreCheckpoints })},
		{Env: "STUCK_TIMEOUT", Flag: "stuck-timeout", Def: "0", Help: "seconds without output before an agent is stopped (0: off)", Kind: Seconds, Scope: rq, to: field(func(s *Settings) *time.Duration { return &s.StuckTimeout })},
		{Env: "AGENT_TIMEOUT", Flag: "agent-timeout", Def: "0", Help: "wall-clock seconds per agent run (0: off)", Kind: Seconds, Scope: rq, to: field(func(s *Settings) *time.Duration { return &s.AgentTimeout })},
		{Env: "DEFAULT_RATE_LIMIT_SLEEP", Flag: "rate-limit-sleep", Def: "3600", Help: "seconds to wait after a rate limit with no hint", Kind: Seconds, Scope: rq, to: field(func(s *Settings) *time.Duration { return &s.RateLimitSleep })},
		{Env: "TRANSIENT_API_MAX_RETRIES", Flag: "transient-retries", Def: "10", Help: "retries of passing API errors before they count as a failure", Kind: Int, Scope: rq, to: field(func(s *Settings) *int { return &s.TransientRetries })},
		{Env: "LOG_CAP_MB", Flag: "log-cap-mb", Def: "50", Help: "largest log kept per agent run, in MiB (the tail is kept)", Kind: Int, Scope: rq, to: field(func(s *Settings) *int { return &s.LogCapMB })},
		{Env: "LOG_KEEP", Flag: "log-keep", Def: "0", Help: "logs kept per phase (or issue) and role; older logs of passing attempts are rotated away (0: keep all; a failed attempt's log and the latest are never removed)", Kind: Int, Scope: rq, to: field(func(s *Settings) *int { return &s.LogKeep })},
		{Env: "LOCKFILE_CMD", Flag: "lockfile-cmd", Help: "command that regenerates lockfiles when they are all a merge conflicts on (default: go mod tidy, npm/pnpm/yarn/bun/cargo by file)", Kind: String, Scope: Run, to: field(func(s *Settings) *string { return &s.LockfileCmd })},
		{Env: "MERGE_BATCH", Flag: "merge-batch", Def: "8", Help: "done phases landed together as one merge train: one gated first-parent commit over their merges, bisected when red (docs/landing.md); 1: one phase per commit", Kind: Int, Min: 1, Scope: Run, to: field(func(s *Settings) *int { return &s.MergeBatch })},
		{Env: "GATE_SLOTS", Flag: "gate-slots", Def: "2", Help: "merge gates run at once, each on top of those ahead of it (speculative gates, docs/landing.md; default 2, 1 on a one-core machine); 1 for a gate that uses shared resources (a database, fixed ports)", Kind: Int, Min: 1, Scope: Run, to: field(func(s *Settings) *int { return &s.GateSlots })},
		{Env: "TRAIN_WAIT_SECONDS", Flag: "train-wait", Def: "3", Help: "seconds a merge train that would land short waits for phases whose agents have ended, or still run when it takes the last gate slot (0: never waits)", Kind: Seconds, Scope: Run, to: field(func(s *Settings) *time.Duration { return &s.TrainWait })},
		{Env: "STACK", Flag: "stack", Def: "0", Help: "start a phase on its one unmerged dependency's gated tip while that lands (speculative stacking, docs/landing.md)", Kind: Bool, Scope: Run, to: field(func(s *Settings) *bool { return &s.Stack })},
		{Env: "GATE_RETRIES", Flag: "gate-retries", Def: "0", Help: "reruns of a red merge gate before it counts as red; a green rerun is journaled as a flake", Kind: Int, Scope: Run, to: field(func(s *Settings) *int { return &s.GateRetries })},
		{Env: "SECRET_SCAN", Flag: "secret-scan", Def: "1", Help: "scan what each merge adds for secrets (tokens, keys, .env-style assignments); 0 turns it off", Kind: Bool, Scope: Run, to: field(func(s *Settings) *bool { return &s.SecretScan })},
		{Env: "SECRET_ALLOW", Flag: "secret-allow", Help: "comma-separated path globs whose secret-scan hits are accepted as false positives (a glob without / matches a file name in any folder)", Kind: Globs, Scope: Run, to: field(func(s *Settings) *[]string { return &s.SecretAllow })},
		{Env: "PUSH_BASE", Flag: "push-base", Def: "0", Help: "keep the base level with origin's, as Claudopilot did: fetch and fast-forward it (or merge origin's commits through the gate) before each landing, push it after each move (never forced) and delete origin's auto/<id> once landed (docs/landing.md)", Kind: Bool, Scope: Run, to: field(func(s *Settings) *bool { return &s.PushBase })},
		{Env: "PROTECTED_PATHS", Flag: "protected-paths", Help: "more files no landing may change, as comma-separated globs (scripts/**), beside the settings, prompts and phase docs; none turns the check off (docs/landing.md)", Kind: Protect, Scope: rq, to: field(func(s *Settings) *protect.Set { return &s.ProtectedPaths })},
		{Env: "DERIVED_CONFLICT_FILES", Flag: "derived-conflict-files", Help: "regular expression: a merge conflicting only on paths it matches is resolved with LOCKFILE_CMD (default: the known lockfiles)", Kind: Regexp, Scope: Run, to: field(func(s *Settings) **regexp.Regexp { return &s.DerivedConflictFiles })},
		{Env: "BOOTSTRAP_CMD", Flag: "bootstrap", Help: "command run once in the repository when the run starts (install, …); a failure is a warning", Kind: String, Scope: Run, to: field(func(s *Settings) *string { return &s.Bootstrap })},
		{Env: "BUILD_CMD", Flag: "build", Help: "command run once after BOOTSTRAP_CMD when the run starts; a failure is a warning", Kind: String, Scope: Run, to: field(func(s *Settings) *string { return &s.Build })},
		{Env: "MAX_ITER", Flag: "max-iter", Def: "0", Help: "accepted for Claudopilot's files; not needed: a run ends when nothing can progress", Kind: Int, Scope: Run, to: field(func(s *Settings) *int { return &s.MaxIter })},
		{Env: "REVIEW_CMD", Flag: "review", Help: "reviewer command: turns on the review gate before landing (docs/review.md)", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.ReviewCmd })},
		{Env: "REVIEW_LENSES", Flag: "review-lenses", Def: "correctness,security,scope,tests", Help: "the reviewers' lenses, comma-separated", Kind: List, Scope: rq, to: field(func(s *Settings) *[]string { return &s.ReviewLenses })},
		{Env: "REVIEW_SKEPTICS", Flag: "review-skeptics", Def: "1", Help: "reviewers per review round", Kind: Int, Min: 1, Scope: rq, to: field(func(s *Settings) *int { return &s.ReviewSkeptics })},
		{Env: "REVIEW_SLOTS", Flag: "review-slots", Def: "1", Help: "reviewers at once, reserved for them (never lent to workers)", Kind: Int, Min: 1, Scope: rq, to: field(func(s *Settings) *int { return &s.ReviewSlots })},
		{Env: "REVIEW_MAX_ROUNDS", Flag: "review-max-rounds", Def: "3", Help: "review rounds before a still-blocked phase halts the run or is parked", Kind: Int, Min: 1, Scope: rq, to: field(func(s *Settings) *int { return &s.ReviewMaxRounds })},
		{Env: "RUN_MAX_COST_USD", Flag: "run-max-cost", Def: "0", Help: "dollars this run's agents may spend; reached: no new launches, exit 9 (0: no limit)", Kind: Dollars, Scope: Run, to: field(func(s *Settings) *float64 { return &s.RunMaxCost })},
		{Env: "PHASE_MAX_COST_USD", Flag: "phase-max-cost", Def: "0", Help: "dollars one phase may spend over all its attempts; reached: parked with reason budget (0: no limit)", Kind: Dollars, Scope: Run, to: field(func(s *Settings) *float64 { return &s.PhaseMaxCost })},
		{Env: "PHASE_MAX_TOKENS", Flag: "phase-max-tokens", Def: "0", Help: "tokens one phase or issue may use over its whole life (every attempt, role, reviewer and run); reached: parked with reason budget (0: no limit)", Kind: Int, Scope: rq, to: field(func(s *Settings) *int { return &s.PhaseMaxTokens })},
		{Env: "PHASE_MAX_SESSIONS", Flag: "phase-max-sessions", Def: "0", Help: "agent processes one phase or issue may start over its whole life (resumes and reviewers count); reached: parked with reason budget (0: no limit)", Kind: Int, Scope: rq, to: field(func(s *Settings) *int { return &s.PhaseMaxSessions })},
		{Env: "ATTACH", Flag: "attach", Def: "0", Help: "run agents on a pseudo-terminal whose live screen `claudopilot attach ID` shows (for agents that need a TTY; the prompt is then only in $CLAUDOPILOT_PROMPT_FILE)", Kind: Bool, Scope: rq, to: field(func(s *Settings) *bool { return &s.Attach })},
		{Env: "NEEDS_INPUT_HOURS", Flag: "needs-input-hours", Def: "24", Help: "hours an agent's question (CLAUDOPILOT-NEEDS-INPUT) waits for an answer before its phase or issue is parked with reason needs-input", Kind: Hours, Scope: rq, to: field(func(s *Settings) *time.Duration { return &s.NeedsInputWait })},
		{Env: "NOTIFY_CMD", Flag: "notify", Help: "command run (sh -c) when a phase merges, parks or fails, an agent asks a question, the run ends, a cooldown starts or ends, a budget is reached, or the run is paused or resumed; the message is in $CLAUDOPILOT_NOTIFY_MSG, the event as JSON on stdin", Kind: String, Scope: Run, to: field(func(s *Settings) *string { return &s.Notify })},
		{Env: "LISTEN", Flag: "listen", Help: "serve the web page and JSON API on HOST:PORT, e.g. 127.0.0.1:7777 (docs/web.md; default: off)", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.Listen })},
		{Env: "LISTEN_PUBLIC", Flag: "listen-public", Def: "0", Help: "allow --listen on an address that is not loopback (still token-only)", Kind: Bool, Scope: rq, to: field(func(s *Settings) *bool { return &s.ListenPublic })},
		{Env: "LISTEN_ORIGIN", Flag: "listen-origin", Help: "the page's public origin when an HTTPS proxy serves it, e.g. https://pilot.example.com: its buttons' requests come from there (docs/web.md; default: the listen address)", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.ListenOrigin })},
		{Env: "AGENT_RESUME_CMD", Flag: "resume-cmd", Help: `command that relaunches a worker in its agent session after a rate limit, a passing API error, a poke or a crash; {session} is the session id (default under the claude preset: AGENT_CMD --resume {session}; with LANES, each lane's LANE_<id>_RESUME_CMD, the preset's for a lane that runs AGENT_CMD)`, Kind: String, Scope: Run, to: field(func(s *Settings) *string { return &s.ResumeCmd })},
		{Env: "STUCK_POKES", Flag: "stuck-pokes", Def: "3", Help: "pokes of a stuck agent (STUCK_TIMEOUT: stopped and resumed in its session, at no attempt) before stuck counts as its attempt's failure; 0: stuck is a failure at once", Kind: Int, Scope: rq, to: field(func(s *Settings) *int { return &s.StuckPokes })},
		{Env: "SANDBOX", Flag: "sandbox", Def: "auto", Help: "bwrap: agents run in a bubblewrap sandbox that can write only their worktree (docs/sandbox.md); off: unconfined; auto: bwrap where it works here, else off with a warning", Kind: Sandbox, Scope: rq, to: field(func(s *Settings) *string { return &s.Sandbox })},
		{Env: "SANDBOX_NET", Flag: "sandbox-net", Def: "outside", Help: "network inside the sandbox: outside reaches outside addresses but not the host's loopback (slirp4netns; without it, the host's network with a warning), 1 shares the host's (its loopback services too), 0 none (docs/sandbox.md)", Kind: Choice, Choices: sandbox.NetChoices, Scope: rq, to: field(func(s *Settings) *string { return &s.SandboxNet })},
		{Env: "SANDBOX_GATE", Flag: "sandbox-gate", Def: "0", Help: "gates and WORKTREE_PREPARE_CMD run in the sandbox too", Kind: Bool, Scope: rq, to: field(func(s *Settings) *bool { return &s.SandboxGate })},
		{Env: "SANDBOX_RW", Flag: "sandbox-rw", Help: "more writable paths inside the sandbox, ':'-separated, absolute or ~/", Kind: String, Scope: rq, to: field(func(s *Settings) *string { return &s.SandboxRW })},
	}
}

// queueKnobs are the issue queue's own (docs/queue.md).
func queueKnobs() []Knob {
	return []Knob{
		{Env: "GH_REPO", Flag: "repo", Help: "the GitHub repository as owner/name (default: from the origin remote)", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.Repo })},
		{Env: "READY_LABEL", Flag: "ready-label", Def: "agent-ready", Help: "label that queues an issue", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.Labels.Ready })},
		{Env: "CLAIM_LABEL", Flag: "claim-label", Def: "agent-running", Help: "label of an issue an instance works on", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.Labels.Claim })},
		{Env: "BLOCKED_LABEL", Flag: "blocked-label", Def: "agent-blocked", Help: "label of an issue that failed or has invalid deps", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.Labels.Blocked })},
		{Env: "REVIEW_LABEL", Flag: "review-label", Def: "user-merge-review", Help: "label of an issue whose pull request waits for a human merge", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.Labels.Review })},
		{Env: "FOREIGN_CLAIM_LABELS", Flag: "foreign-claim-labels", Def: "in-pilot,agent-running,io:claimed", Help: "other tools' claim labels, comma-separated (issue-pilot's in-pilot; agent-running, the name issue 26 gives issue-orchestrator's; issue-orchestrator's io:claimed): an issue carrying one is left alone", Kind: List, Scope: Queue, to: field(func(s *Settings) *[]string { return &s.ForeignClaims })},
		{Env: "ISSUE_ORDER", Flag: "issue-order", Def: "oldest", Help: "which ready issues go first: oldest or newest", Kind: Choice, Choices: []string{"oldest", "newest"}, Scope: Queue, to: field(func(s *Settings) *string { return &s.IssueOrder })},
		{Env: "BATCH_SIZE", Flag: "batch-size", Def: "25", Help: "ready issues read per poll", Kind: Int, Min: 1, Scope: Queue, to: field(func(s *Settings) *int { return &s.BatchSize })},
		{Env: "AUTO_MERGE", Flag: "auto-merge", Def: "0", Help: "merge pull requests with green checks (else mark them ready for review)", Kind: Bool, Scope: Queue, to: field(func(s *Settings) *bool { return &s.AutoMerge })},
		{Env: "MERGE_METHOD", Flag: "merge-method", Def: "auto", Help: "auto (the first the repository allows of merge, squash, rebase), merge, squash or rebase", Kind: Choice, Choices: []string{"auto", "merge", "squash", "rebase"}, Scope: Queue, to: field(func(s *Settings) *string { return &s.MergeMethod })},
		{Env: "APPROVAL_LABEL", Flag: "approval-label", Def: "agent-awaiting-approval", Help: "label of an issue (and pull request) whose merge waits for an approving review", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.Labels.Approval })},
		{Env: "GITHUB_API_URL", Flag: "api-url", Help: "REST API base URL, used as given (default https://api.github.com; GitHub Enterprise: https://HOST/api/v3)", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.APIURL })},
		{Env: "CLAIM_STALE_HOURS", Flag: "claim-stale-hours", Def: "6", Help: "hours after which a claim without an open pull request may be released", Kind: Hours, Scope: Queue, to: field(func(s *Settings) *time.Duration { return &s.ClaimStale })},
		{Env: "CHECKS_GRACE", Flag: "checks-grace", Def: "120", Help: "seconds after a push (and marking ready) before \"no checks\" counts as green", Kind: Seconds, Scope: Queue, to: field(func(s *Settings) *time.Duration { return &s.ChecksGrace })},
		{Env: "CHECKS_TIMEOUT", Flag: "checks-timeout", Def: "7200", Help: "seconds after a push before checks still pending block the issue", Kind: Seconds, Scope: Queue, to: field(func(s *Settings) *time.Duration { return &s.ChecksTimeout })},
		{Env: "TRUSTED_AUTHORS", Flag: "trusted-authors", Help: "comma-separated logins whose issues are trusted whoever labelled them", Kind: List, Scope: Queue, to: field(func(s *Settings) *[]string { return &s.TrustedAuthors })},
		{Env: "GH_APP_TOKEN_CMD", Flag: "app-token-cmd", Help: "command that prints a GitHub App installation token (or GitHub's JSON answer), run at start, 5 minutes before it expires and on a 401 (alias GH_APP_TOKEN_SCRIPT)", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.AppTokenCmd })},
		{Env: "GH_APP_ID", Flag: "app-id", Help: "GitHub App id: with GH_APP_INSTALLATION_ID and GH_APP_PRIVATE_KEY_FILE, the queue mints its own installation tokens", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.AppID })},
		{Env: "GH_APP_INSTALLATION_ID", Flag: "app-installation-id", Help: "the GitHub App's installation on the repository", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.AppInstallation })},
		{Env: "GH_APP_PRIVATE_KEY_FILE", Flag: "app-private-key-file", Help: "the GitHub App's private key (PEM)", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.AppKeyFile })},
		{Env: "SCANNER_LABEL", Flag: "scanner-label", Def: "agent-proposed", Help: "label of the issues scanners file: proposals a maintainer queues by adding READY_LABEL (docs/queue.md)", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.ScannerLabel })},
		{Env: "REFILL_THRESHOLD", Flag: "refill-threshold", Def: "2", Help: "while polling, run the next scanner when fewer issues than this are ready or proposed and unclaimed (0: no refill)", Kind: Int, Scope: Queue, to: field(func(s *Settings) *int { return &s.RefillThreshold })},
		{Env: "SCANNER_INTERVAL_MINUTES", Flag: "scanner-interval-minutes", Def: "60", Help: "minutes at least between two scanner runs of the refill", Kind: Int, Min: 1, Scope: Queue, to: field(func(s *Settings) *int { return &s.ScannerIntervalMinutes })},
		{Env: "SCANNER_MAX_ISSUES", Flag: "scanner-max-issues", Def: "5", Help: "proposals one scanner run files at most", Kind: Int, Min: 1, Scope: Queue, to: field(func(s *Settings) *int { return &s.ScannerMaxIssues })},
		{Env: "SCANNER_CMD", Flag: "scanner-cmd", Help: "command (sh -c, in the scanner's read-only checkout, prompt on stdin) that prints candidate issues as JSON lines, instead of the agent", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.ScannerCmd })},
		{Env: "SCANNER_FOCUS", Flag: "scanner-focus", Help: "comma-separated paths or globs the scanners look at (default: the whole repository)", Kind: Globs, Scope: Queue, to: field(func(s *Settings) *[]string { return &s.ScannerFocus })},
		{Env: "CAMPAIGN_LABEL_PREFIX", Flag: "campaign-label-prefix", Def: "campaign:", Help: "an issue labelled <prefix><name> is the campaign's: worked before any other ready issue, its agents given claudopilot/campaigns/<name>.md (docs/queue.md)", Kind: String, Scope: Queue, to: field(func(s *Settings) *string { return &s.CampaignPrefix })},
		{Env: "PROMOTE_TO", Flag: "promote-to", Help: "branches green work is promoted to from the base, in order (e.g. \"staging production\"): pull requests merged with a merge commit (docs/queue.md)", Kind: List, Scope: Queue, to: field(func(s *Settings) *[]string { return &s.PromoteTo })},
		{Env: "PROMOTE_EVERY_HOURS", Flag: "promote-every-hours", Def: "24", Help: "hours at least between two promotions of one step (a red step is tried again after as long)", Kind: Hours, Scope: Queue, to: field(func(s *Settings) *time.Duration { return &s.PromoteEvery })},
		{Env: "AGENT_ENV_ALLOW", Flag: "agent-env-allow", Help: "comma-separated variables agents, gates and prepare keep although their name says secret (GITHUB_TOKEN, …_TOKEN, …_SECRET, …_PASSWORD, …_API_KEY) or they hold the queue's token", Kind: List, Scope: rq, to: field(func(s *Settings) *[]string { return &s.AgentEnvAllow })},
	}
}

// laneKnobs are the lanes' and the pacer's (docs/lanes.md): no flags; set
// up once, in claudopilot.config or the environment.
func laneKnobs() []Knob {
	ks := []Knob{
		{Env: "LANES", Help: `lanes in order, e.g. "claude codex" (empty: one lane of AGENT_CMD and MAX_PARALLEL)`, Kind: String, to: field(func(s *Settings) *string { return &s.LaneIDs })},
		{Env: "PACE_SECONDS", Def: "300", Help: "seconds between pacer passes", Kind: Seconds, to: field(func(s *Settings) *time.Duration { return &s.Pace })},
		{Env: "CORES_PER_WORKER", Def: "2", Help: "cores one agent needs, for the resource budget", Kind: Number, to: field(func(s *Settings) *float64 { return &s.Resources.CoresPerWorker })},
		{Env: "MEM_MB_PER_WORKER", Def: "3000", Help: "MiB of memory one agent needs, for the resource budget", Kind: Number, to: field(func(s *Settings) *float64 { return &s.Resources.MemMBPerWorker })},
		{Env: "RESOURCE_MIN_BUDGET", Def: "3", Help: "least number of agents the resource budget allows", Kind: Int, to: field(func(s *Settings) *int { return &s.Resources.MinBudget })},
		{Env: "RESOURCE_PROBE_CMD", Help: "prints <cores> <load5> <mem_available_mb> instead of the machine's own figures", Kind: String, to: field(func(s *Settings) *string { return &s.ProbeCmd })},
	}
	for _, k := range pacer.Keys() {
		if k.Global == "" || k.Global == "AGENT_CMD" || k.Global == "SUPERVISOR_CMD" || k.Global == "AGENT_RESUME_CMD" {
			continue // no global, or a knob above
		}
		// Read by pacer.Parse, through the resolved values.
		ks = append(ks, Knob{Env: k.Global, Def: k.Default, Help: k.Help, Kind: String})
	}
	return ks
}

// Lookup returns the knob named env (its name or alias).
func Lookup(env string) (Knob, bool) {
	for _, k := range Knobs() {
		if k.Env == env || Aliases[k.Env] == env && env != "" {
			return k, true
		}
	}
	return Knob{}, false
}

// ForScope lists the knobs a command with scope sc takes as flags, with
// that command's defaults and help: for the queue, its own knobs first.
func ForScope(sc Scope) []Knob {
	var own, shared []Knob
	for _, k := range Knobs() {
		if k.Scope&sc == 0 || k.Flag == "" {
			continue
		}
		if sc == Queue {
			k = k.forQueue()
			if k.Scope == Queue {
				own = append(own, k)
				continue
			}
		}
		shared = append(shared, k)
	}
	return append(own, shared...)
}

// forQueue is the knob as the queue states it.
func (k Knob) forQueue() Knob {
	if k.QueueDef != "" {
		k.Def = k.QueueDef
	}
	if k.QueueHelp != "" {
		k.Help = k.QueueHelp
	}
	return k
}
