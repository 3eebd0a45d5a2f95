package engine

import (
	"context"
	"regexp"
	"time"

	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Settings are the resolved values of one run. The command line resolves
// them (flags, environment, claudopilot.config, the manifest, defaults);
// the engine only uses them.
type Settings struct {
	Sandbox                                    *sandbox.Config // nil: SANDBOX=off
	Stray                                      *sandbox.Watch  // set when Sandbox is nil: writes outside a worktree are reported
	MaxParallel, MaxSuper, Transient, LogCapMB int
	LogKeep                                    int // LOG_KEEP
	StuckPokes                                 int // STUCK_POKES
	KeepGoing, IgnoreCheckpoints               bool
	SecretScan                                 bool
	// PushBase (PUSH_BASE) keeps the base level with origin's and pushes
	// it after each move (land.Upstream); PushCredential is the token of
	// the environment for it (nil: git's own helpers; under the queue,
	// the queue's credential).
	PushBase       bool
	PushCredential worktree.Credential
	// SecretAllow are SECRET_ALLOW's globs: the secret scan's hits in
	// files they match are accepted.
	SecretAllow []string
	// AgentEnvAllow (AGENT_ENV_ALLOW) names variables agents, gates and
	// prepare keep although their name says secret (work.AgentEnv).
	AgentEnvAllow []string
	// MergeBatch caps a merge train (MERGE_BATCH); GateSlots is how many
	// merge gates run at once (GATE_SLOTS); GateRetries reruns a red
	// merge gate (GATE_RETRIES); TrainWait is TRAIN_WAIT_SECONDS.
	MergeBatch, GateSlots, GateRetries int
	TrainWait                          time.Duration
	// Stack starts a phase on its one unmerged dep's gated tip (STACK).
	Stack                                bool
	Base, Gate, Prepare, Agent, Super    string
	Lockfile, Bootstrap, Build           string
	Derived                              *regexp.Regexp
	Poll, Stuck, AgentTimeout, RateSleep time.Duration
	BaseExplicit                         bool
	Lanes                                Lanes
	Review                               Review
	RunMaxCost, PhaseMaxCost             float64
	PhaseMaxTokens, PhaseMaxSessions     int64
	NeedsInputWait                       time.Duration // NEEDS_INPUT_HOURS
	Attach                               bool          // ATTACH: agents on a terminal
	ResumeCmd                            string
	Notify                               string
	// Listen serves the web page and API on this address ("" off);
	// ListenPublic allows an address that is not loopback.
	Listen       string
	ListenPublic bool
	// ListenOrigin is the page's public origin behind an HTTPS proxy
	// ("" the listen address's own).
	ListenOrigin string
	// Protect is the settings' part of the files no landing may change
	// (docs/landing.md): the files the settings model reads and
	// PROTECTED_PATHS, Off for PROTECTED_PATHS=none. The engine adds what
	// the other readers (prompts, roadmap, control files, git) declare.
	Protect protect.Set
	// PromptFiles are the prompt files the settings name, by role
	// ("worker", "supervisor", "worker.project", "supervisor.project"),
	// and V0Prompts Claudopilot v0.x's prompt folder (package prompts).
	PromptFiles map[string]string
	V0Prompts   string
	// Remote, when set, opens the runner of agents elsewhere
	// (AGENT_RUNNER=kubernetes: docs/cluster.md) once the repository
	// and the layout are known; stop ends it when the engine closes.
	Remote func(ctx context.Context, git *worktree.Client, l state.Layout) (r work.Remote, stop func(), err error)
}

// promptSet is the prompt loader over the override folders dirs, with the
// prompt files and the v0.x folder the settings give.
func (c Settings) promptSet(dirs []string) prompts.Set {
	return prompts.Set{Dirs: dirs, Files: c.PromptFiles, V0: c.V0Prompts}
}

// Review is the resolved review gate (docs/review.md): on when Cmd is set.
type Review struct {
	Cmd string
	Cfg scheduler.ReviewConfig
}

// SettingsError is a setting the engine found wrong only when building on
// it (settings.BuildError: the command line reports it as misuse).
type SettingsError = settings.BuildError
