package scheduler

import (
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/state"
)

// Event is one thing that happened in a run, for progress output and
// --json. The scheduler loop is the only sender.
type Event struct {
	Time    time.Time    `json:"time"`
	Kind    string       `json:"event"`
	Phase   string       `json:"phase,omitempty"`
	State   string       `json:"state,omitempty"`
	Role    state.Role   `json:"role,omitempty"`
	Attempt int          `json:"attempt,omitempty"`
	Reason  state.Reason `json:"reason,omitempty"`
	Detail  string       `json:"detail,omitempty"`
	LogPath string       `json:"log,omitempty"`
	Until   time.Time    `json:"until,omitzero"`
	Files   []string     `json:"files,omitempty"`
	Lane    string       `json:"lane,omitempty"`
	// Title, Deps and Campaign describe an outside node (EvNode).
	Title    string   `json:"title,omitempty"`
	Deps     []string `json:"deps,omitempty"`
	Campaign string   `json:"campaign,omitempty"`
	// Lanes are the lanes a usage limit holds (cooldown events): every
	// lane on the account that hit it.
	Lanes []string `json:"lanes,omitempty"`
	// Usage is an ended attempt's reported spend (exit events).
	Usage *ledger.Usage `json:"usage,omitempty"`
}

// Event kinds.
const (
	EvStart    = "start"    // the run began
	EvLaunch   = "launch"   // an agent started (Role, Attempt)
	EvExit     = "exit"     // an attempt ended (Reason empty when OK)
	EvGate     = "gate"     // a gate started: the attempt's (Role, Attempt), or the merge commit's (Detail "merge")
	EvMerging  = "merging"  // the merge owner took the phase
	EvMerged   = "merged"   // the phase landed on the base
	EvWait     = "wait"     // a merge waits for uncommitted files to go
	EvCooldown = "cooldown" // a usage limit: no launches on its account's lanes (Lanes) until Until
	EvRetry    = "retry"    // a transient error: relaunch after a backoff
	EvFailed   = "failed"   // the phase is [failed] (halt)
	EvBlocked  = "blocked"  // the phase is [blocked] (keep-going), or waits on one
	EvHalt     = "halt"     // no new launches: a phase failed
	EvEdit     = "edit"     // the manifest changed on disk
	EvWarn     = "warn"     // something worth a line that changes nothing
	EvEnd      = "end"      // the run is over
	EvPaused   = "paused"   // no new launches until resumed
	EvResumed  = "resumed"  // launches go on
	EvLanes    = "lanes"    // the pacer changed lanes' concurrency
	EvBudget   = "budget"   // a cost budget was reached
	EvDrain    = "drain"    // no new launches; the run ends when what runs is done
	EvAsk      = "ask"      // an agent asked a question (Detail): the phase waits on an answer until Until
	EvAnswer   = "answer"   // the question was answered (Detail): the phase goes on
	EvNode     = "node"     // an outside node joined the graph, or its title, deps or campaign changed (Title, Deps, Campaign)
)

// PhaseSummary is one phase's line in the end-of-run summary.
type PhaseSummary struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Attempts int    `json:"attempts"` // in this run
	// AttemptsInAll counts earlier runs' attempts too (a resumed run).
	AttemptsInAll int           `json:"attempts_in_all"`
	Spent         time.Duration `json:"spent_ns"` // in this run
	Reason        state.Reason  `json:"reason,omitempty"`
	WaitsOn       string        `json:"waits_on,omitempty"`
	LogPath       string        `json:"log,omitempty"`
	// Usage is what the phase's agents reported spending in this run;
	// ByRole splits it by worker, supervisor and reviewer.
	Usage  ledger.Usage                `json:"usage"`
	ByRole map[state.Role]ledger.Usage `json:"usage_by_role,omitempty"`
}

// Summary is how the run ended.
type Summary struct {
	Counts map[string]int `json:"counts"`
	Wall   time.Duration  `json:"wall_ns"`
	Phases []PhaseSummary `json:"phases"`
	// Usage is this run's spend (this driver's attempts only); Total adds
	// earlier runs' spend from the journal.
	Usage ledger.Usage `json:"usage"`
	Total ledger.Usage `json:"total_usage"`
	// Waiting counts the phases whose agent asked a question still
	// unanswered: "waiting on you".
	Waiting int `json:"waiting_on_you,omitempty"`
}
