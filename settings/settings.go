package settings

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/state"
)

// Settings are the resolved settings of one command: every knob typed,
// with where its value came from (Source). The fields are filled from the
// table in knobs.go; the ones marked "derived" follow from others by the
// one rule that lives here.
type Settings struct {
	MaxParallel          int
	BaseBranch           string // BASE_BRANCH as set ("": the base rule decides, see Base)
	Gate, Prepare        string
	Agent                string // AGENT_CMD, or what AGENT_DRIVER built
	AgentDriver          string
	AgentModel           string
	SupervisorSet        string // SUPERVISOR_CMD as set ("" when not set)
	Supervisor           string // derived: SUPERVISOR_CMD, else the agent
	MaxSupervisor        int
	KeepGoing            bool
	Poll                 time.Duration
	QueuePoll            time.Duration // derived: POLL_SECONDS when set, else the queue's default (GitHub is read less often than a file)
	IgnoreCheckpoints    bool
	StuckTimeout         time.Duration
	AgentTimeout         time.Duration
	RateLimitSleep       time.Duration
	TransientRetries     int
	LogCapMB             int
	LogKeep              int      // LOG_KEEP: 0 keeps every log
	ForeignClaims        []string // FOREIGN_CLAIM_LABELS
	LockfileCmd          string
	MergeBatch           int
	GateSlots            int           // GATE_SLOTS; its default is min(2, cores) (derive)
	TrainWait            time.Duration // TRAIN_WAIT_SECONDS
	Stack                bool
	GateRetries          int
	SecretScan           bool
	PushBase             bool // PUSH_BASE
	SecretAllow          []string
	ProtectedPaths       protect.Set    // PROTECTED_PATHS: more protected files, Off for none (see Protected)
	DerivedConflictFiles *regexp.Regexp // nil: the known lockfiles
	Bootstrap, Build     string
	MaxIter              int
	ReviewCmd            string // "": no review gate
	ReviewLenses         []string
	ReviewSkeptics       int
	ReviewSlots          int
	ReviewMaxRounds      int
	RunMaxCost           float64
	PhaseMaxCost         float64
	PhaseMaxTokens       int
	PhaseMaxSessions     int
	NeedsInputWait       time.Duration // NEEDS_INPUT_HOURS
	Attach               bool          // ATTACH
	Notify               string
	Listen               string
	ListenPublic         bool
	ListenOrigin         string
	ResumeCmd            string
	ResumePreset         bool   // derived: ResumeCmd is the claude preset's default (a changed default: ResumeNote)
	StuckPokes           int    // STUCK_POKES
	Sandbox              string // a sandbox mode (sandbox.ParseMode)
	SandboxNet           string // SANDBOX_NET as given (sandbox.NetChoices): SandboxNetMode reads it
	SandboxGate          bool
	SandboxRW            string
	SandboxPaths         []string // derived: the writable paths besides the worktree (sandbox.HomeRW)

	// The issue queue's.
	Repo           string // GH_REPO ("": from the origin remote)
	Labels         Labels
	IssueOrder     string // oldest or newest
	BatchSize      int
	AutoMerge      bool
	MergeMethod    string
	APIURL         string
	ClaimStale     time.Duration
	ChecksGrace    time.Duration
	ChecksTimeout  time.Duration
	TrustedAuthors []string
	AgentEnvAllow  []string
	// The scanners' refill (docs/queue.md).
	ScannerLabel           string
	RefillThreshold        int
	ScannerIntervalMinutes int
	ScannerMaxIssues       int
	ScannerCmd             string
	ScannerFocus           []string
	CampaignPrefix         string // CAMPAIGN_LABEL_PREFIX
	// The promote loop (docs/queue.md).
	PromoteTo    []string
	PromoteEvery time.Duration
	// A GitHub App's expiring installation tokens, instead of
	// GITHUB_TOKEN: a command that prints one, or the app's id,
	// installation and private key to mint them.
	AppTokenCmd     string
	AppID           string
	AppInstallation string
	AppKeyFile      string

	// Where the roadmap and the prompts are (Claudopilot's settings).
	RoadmapDir, Manifest string // as set ("": the default folders)
	// PromptFiles are the prompt files the settings name (absolute once
	// derived; "" none).
	PromptFiles PromptFiles
	// V0Prompts is Claudopilot v0.x's prompt folder, <top>/claudopilot/prompts:
	// its worker.md and supervisor.md (PROMPT_FILE's default there) are
	// read after the roadmap's and .claudopilot's prompt folders ("" without
	// a top).
	V0Prompts string

	// Where agents run (docs/cluster.md): AGENT_RUNNER, local or
	// kubernetes, and the cluster's K8S_* settings.
	AgentRunner string
	K8s         K8s

	// The lanes' and the pacer's.
	LaneIDs   string             // LANES as set
	Lanes     []pacer.LaneConfig // derived: LANES read with every LANE_<id>_<KEY> (empty: one lane)
	Pace      time.Duration
	Resources pacer.Resources
	ProbeCmd  string

	// Notes are settings read under another tool's name or form, and
	// other tools' settings that have no effect here.
	Notes []Note
	// Read are the settings files that were read, relative to the top
	// (or as the environment named them).
	Read []string
	// Claudopilot is the Claudopilot settings file read (ClaudopilotFile),
	// "" when none: a Claudopilot layout.
	Claudopilot string
	// named are the settings files the environment names
	// (ISSUE_PILOT_CONF, CLAUDOPILOT_CONFIG), protected too when they
	// are in the repository.
	named []string

	vals map[string]Value
}

// K8s are the K8S_* settings of AGENT_RUNNER=kubernetes.
type K8s struct {
	Namespace, Image, Remote, Kubeconfig, Context   string
	Secret, GitSecret, ServiceAccount, RuntimeClass string
	CPU, Memory                                     string
	SessionClaim                                    string
	Pending                                         time.Duration
}

// PromptFiles are the prompt files PROMPT_FILE, SUPERVISOR_PROMPT_FILE,
// WORKER_PROJECT_PROMPT and SUPERVISOR_PROJECT_PROMPT name.
type PromptFiles struct{ Worker, Supervisor, WorkerProject, SupervisorProject string }

// Labels are the queue's labels.
type Labels struct{ Ready, Claim, Blocked, Review, Approval string }

// Value is one knob's value as written, and where it came from.
type Value struct {
	Raw string
	Src Source
}

// Value returns the value of knob env as written and its source.
func (s *Settings) Value(env string) Value { return s.vals[env] }

// SandboxNetMode is SANDBOX_NET's mode: sandbox.NetOutside, NetHost or
// NetNone.
func (s *Settings) SandboxNetMode() string { return sandbox.ParseNet(s.SandboxNet) }

// Source says where knob env's value came from.
func (s *Settings) Source(env string) Source { return s.vals[env].Src }

// Set lists the knobs whose value is not their default, in table order,
// with their values: what doctor shows.
func (s *Settings) Set() []Named {
	var out []Named
	for _, k := range Knobs() {
		if v, ok := s.vals[k.Env]; ok && v.Src.Kind != FromDefault {
			out = append(out, Named{Env: k.Env, Value: v})
		}
	}
	return out
}

// Named is a knob's value with its name.
type Named struct {
	Env string
	Value
}

// DefaultNotes announce the changed defaults the user has not set: run
// prints each in one line at its start, doctor lists them.
func (s *Settings) DefaultNotes() []string {
	var n []string
	if s.Source("GATE_SLOTS").Kind == FromDefault {
		n = append(n, fmt.Sprintf("merge gates run %d at once now, each on top of those ahead of it; a merge train lands as one gated first-parent commit, and a phase's gate runs once, on its merge (GATE_SLOTS, was 1; MERGE_BATCH_GATE is retired); a gate that uses shared resources (a database, fixed ports) needs GATE_SLOTS=1; set GATE_SLOTS to hide this note", s.GateSlots))
	}
	if s.Claudopilot != "" && s.Source("PUSH_BASE").Kind == FromDefault {
		n = append(n, PushBaseNote(s.Claudopilot))
	}
	return n
}

// PushBaseNote says that a Claudopilot layout (its settings file read)
// pushed the base after every merge and this run does not.
func PushBaseNote(file string) string {
	return "PUSH_BASE is off: Claudopilot (" + file + ") pushed the base to origin after every merge; claudopilot keeps it local unless PUSH_BASE=1 (claudopilot migrate writes it); set PUSH_BASE to choose and silence this line (docs/migrating.md)"
}

// ReviewOn is true when the review gate runs (REVIEW_CMD is set).
func (s *Settings) ReviewOn() bool { return s.ReviewCmd != "" }

// Rules are the rules a run with these settings decides eligibility by,
// as the scheduler journals them (explain and status use them before any
// run has): one lane of the agent and MAX_PARALLEL slots, or the LANES.
func (s *Settings) Rules() state.Rules {
	r := state.Rules{KeepGoing: s.KeepGoing, IgnoreCheckpoints: s.IgnoreCheckpoints}
	if len(s.Lanes) == 0 {
		r.Lanes = []state.RuleLane{{Cmd: s.Agent, SupervisorCmd: s.Supervisor, Slots: s.MaxParallel}}
		r.Slots = s.MaxParallel
		return r
	}
	for _, l := range s.Lanes {
		r.Lanes = append(r.Lanes, state.RuleLane{ID: l.ID, Cmd: l.Cmd, SupervisorCmd: l.SupervisorCmd, Fallback: l.Fallback, Account: l.Credentials})
	}
	return r
}

// LaneIDList lists the lanes' ids, in order.
func (s *Settings) LaneIDList() []string {
	var ids []string
	for _, l := range s.Lanes {
		ids = append(ids, l.ID)
	}
	return ids
}

// HasLane is true when LANES names id.
func (s *Settings) HasLane(id string) bool {
	return slices.ContainsFunc(s.Lanes, func(l pacer.LaneConfig) bool { return l.ID == id })
}
