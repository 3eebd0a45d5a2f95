package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/claudopilot/claudopilot/ledger"
	"github.com/claudopilot/claudopilot/state"
)

// Job asks a Runner for one attempt at one phase.
type Job struct {
	ID      string
	Title   string
	Doc     string   // the phase doc's file name, without DONE_
	Owns    []string // the declared scope; empty = anything
	Role    state.Role
	Attempt int // 1-based, counted per role
	// Mode is "standard", or "best-effort" on a phase's last supervisor
	// attempt.
	Mode string
	// Failure and FailureLog tell a supervisor what went wrong.
	Failure    state.Reason
	FailureLog string
	Detail     string // e.g. the conflicting paths
	Gate       string // the gate for this phase (its own, or GATE_CMD)
	// Retry is set when a parked or failed phase was flipped back to
	// pending: its kept branch is brought up to date with the base first.
	Retry bool
	// TakeBase is set for a later attempt of a phase predicted to
	// conflict with a phase that has landed since (or with the base): the
	// base is merged into its branch before the agent starts, as for
	// Retry. A conflict there is a worker's failure (reason conflict), and
	// is left in place for a supervisor to resolve.
	TakeBase bool
	// StackOn is the commit a first attempt's new branch starts from
	// instead of the base: its one unmerged dep's gated tip (STACK=1). A
	// kept branch gets it merged in.
	StackOn string
	// Fresh sets the branch aside first (kept under stacked/<id>-<time>)
	// and starts over: the phase was stacked on a dep that then failed.
	Fresh bool
	// StackedOn is the dep tip the phase was stacked on, when the dep
	// landed from another tip (its branch repaired, maybe rewritten): if
	// the base does not contain it, the branch is set aside and the phase
	// starts over, as for Fresh.
	StackedOn string
	// Resume is set for a phase found [running] at start: the driver died
	// during it. If its branch already passes the done check, the runner
	// skips the agent and goes to the gate.
	Resume bool
	// Lane is the lane the attempt runs on ("" without LANES) and Cmd the
	// command the lane runs for the role; an empty Cmd leaves the choice
	// to the runner's own AGENT_CMD/SUPERVISOR_CMD.
	Lane string
	Cmd  string
	// Account is the lane's account's configuration folder
	// (LANE_<id>_CREDENTIALS): the agent gets it as CLAUDE_CONFIG_DIR
	// (under the sandbox, its private copy). "" the user's own.
	Account string
	// Findings are the reviewers' findings for a worker sent back by the
	// review gate (CLAUDOPILOT_REVIEW_FINDINGS).
	Findings []string
	// Session is the agent session to resume (AGENT_RESUME_CMD), set for
	// a relaunch after a rate-limit cooldown or a crash.
	Session string
	// Gating, when set, is called as the attempt's gate starts, so the
	// progress shows "gate" rather than a finished agent. Any goroutine.
	Gating func()
	// Outside is set for a node from a Source (an issue): its branch,
	// doc, prompts and done rule differ from a phase's.
	Outside *OutsideWork
	// Since is the commit a repair must go beyond (an outside node's red
	// head after its checks failed); "" the base.
	Since string
	// Checks names the failing checks a supervisor repairs.
	Checks []string
	// Capped, set on a resumed attempt of a phase that reached a token
	// or session cap, says which: the runner may find the branch done
	// (no agent), but starts no agent; it fails with reason budget and
	// Found instead.
	Capped string
	// Attach: the lane runs its agents on a pseudo-terminal
	// (LANE_<id>_ATTACH; ATTACH turns it on for every agent).
	Attach bool
	// Question and Answer: the attempt goes on after the agent asked
	// (CLAUDOPILOT-NEEDS-INPUT) and the user answered. With Session and a
	// resume command the answer is the session's next message; otherwise
	// the prompt carries both.
	Question, Answer string
}

// Outcome is how an attempt ended. OK means the driver's own checks all
// passed: exit 0, the DONE_ rename on the branch tip, at least one commit,
// and a green gate.
type Outcome struct {
	ID       string
	Role     state.Role
	Attempt  int
	OK       bool
	Reason   state.Reason
	ExitCode int
	Detail   string // a short human explanation
	LogPath  string // the log to read first
	Tip      string // branch tip when OK
	// Cooldown > 0 means the agent hit a rate limit: no attempt is spent,
	// and no agent on the same command starts before it has passed.
	Cooldown time.Duration
	// Transient means a passing API error: retry with backoff.
	Transient bool
	// Warnings are emitted as they are (EvWarn): a sandbox that undid a
	// change, a write outside the worktree.
	Warnings []string
	// Usage is what the agent reported it spent (unknown figures nil).
	Usage   ledger.Usage
	Started time.Time
	Ended   time.Time
	// Away means the node left the driver's hands before any work (an
	// issue claimed by another instance, closed, or its labels changed):
	// it is dropped from the graph, and no attempt is counted.
	Away bool
	// Question is set when the agent asked for a decision (the marker
	// line or the question file): the attempt ends as needs-input, is not
	// counted, and the phase waits for an answer.
	Question string
	// Found means no agent ran: a resumed phase's branch was found
	// already done (or landed), or stopped mid-way (an unfinished merge
	// of the base, a failure). It is not an attempt.
	Found bool
}

// Runner carries out one attempt: worktree, prepare, agent, done check,
// gate. It blocks; the scheduler calls it from a goroutine of its own and
// gets the result over a channel. started is called with the agent's
// process group id as soon as it runs, so a restarted driver can find it.
type Runner interface {
	Run(ctx context.Context, j Job, started func(pgid int)) Outcome
}

// MergeJob asks the Merger to land one done phase.
type MergeJob struct {
	ID    string
	Title string
	Owns  []string
	Tip   string // the branch tip that passed the checks
	Gate  string
	// Complete is set when this merge lands the last unmerged phase, so
	// the same commit can mark the manifest complete.
	Complete bool
	// ReviewHead and ReviewBase are the branch tip and base tip the
	// review gate passed; the merge lands only while both still hold.
	// Empty: no review gate.
	ReviewHead, ReviewBase string
	// ReviewFirst (an outside node's landing, the review gate on): a green
	// head is not landed but handed back (MergeOutcome.Review) for the
	// loop's reviewers, unless the source holds its own PASS for exactly
	// it (a restarted driver).
	ReviewFirst bool
	// Verdict (an outside node's landing): the review gate's decision on
	// the head the source handed back, for the source to record (its own
	// comment on the pull request) before it lands, reworks or ends the
	// node.
	Verdict *Verdict
	// Gating, when set, is called as the merge commit's gate starts.
	Gating func()
}

// MergeOutcome is how a merge ended.
type MergeOutcome struct {
	ID     string
	OK     bool
	Commit string // the new base tip
	// Wait lists uncommitted files in the base checkout that the merge
	// would overwrite; the merge is retried once they are gone.
	Wait []string
	// Waiting says, in words, what else the merge waits for and what the
	// user can do (a lock held in the base checkout, a base that keeps
	// moving); it is retried later.
	Waiting string
	// Changed, when set with Wait, is closed once what the merge waits on
	// may have changed (a watch on the files and the index): the merge is
	// then tried again at once instead of at the next poll.
	Changed <-chan struct{}
	Reason  state.Reason // conflict, gate, scope, worktree
	Detail  string
	LogPath string // the log to read first (the merge gate's)
	Err     error  // git or I/O failure
	// Stale: the base or the branch moved since the review passed, so
	// nothing landed and the phase is reviewed again.
	Stale bool
	// Again: a merge train did not get to this phase (a culprit before
	// it, a branch that moved): nothing happened to it, and it goes back
	// to the front of the merge queue.
	Again bool
	// Flaky says the merge gate was red and then green on a rerun
	// (GATE_RETRIES); journaled.
	Flaky string
	// Review (an outside node's landing with ReviewFirst): green, to be
	// reviewed before it lands; Commit is the head.
	Review bool
	// Away (an outside node's landing): the node left the driver's hands
	// (a pull request handed to a human for review, an issue closed): it
	// is dropped from the graph without a state.
	Away bool
	// Checks names the failing checks (Reason ReasonChecks), or holds
	// the reviewers' findings (Reason ReasonReview).
	Checks []string
}

// Merger lands done phases on the base branch. The scheduler calls it for
// one phase at a time, so merges are serial by construction. ctx is
// cancelled by an interrupt: the merger then stops what it can (the gate)
// and returns, but never cuts off a ref move or a checkout move it has
// begun.
type Merger interface {
	Merge(ctx context.Context, j MergeJob) MergeOutcome
}

// BatchMerger lands several done phases at once, as a merge train (see
// docs/landing.md): their merge commits are built as one first-parent
// chain, in the order given, and the chain's top is gated; a red top is
// bisected. It returns one outcome per job, in order. The scheduler uses
// it only when MERGE_BATCH > 1.
type BatchMerger interface {
	Merger
	MergeBatch(ctx context.Context, js []MergeJob) []MergeOutcome
}

// Errors that end a run; the command tree maps them to exit codes (internal/cli/cmdutil).
var (
	// ErrParked: keep-going finished and the manifest holds [blocked] phases.
	ErrParked = errors.New("finished with parked phases")
	// ErrNoProgress: phases remain but none can start.
	ErrNoProgress = errors.New("nothing can progress")
	// ErrCheckpoint: the run stopped at a LOOP-CHECKPOINT marker.
	ErrCheckpoint = errors.New("stopped at a LOOP-CHECKPOINT")
	// ErrInterrupted: the run was cancelled by a signal.
	ErrInterrupted = errors.New("interrupted")
	// ErrBudget: RUN_MAX_COST_USD was reached; running attempts finished
	// and nothing new started.
	ErrBudget = errors.New("run budget reached")
)

// HaltError ends a run that stopped on a failed phase (halt mode).
type HaltError struct {
	ID      string
	Reason  state.Reason
	LogPath string
	// NoDone: the phase never produced its DONE_ doc and its repairs
	// could not make it (Claudopilot's exit 6), whatever the last
	// failure's own reason.
	NoDone bool
}

func (e *HaltError) Error() string {
	return fmt.Sprintf("halted: phase %s failed (%s); see %s", e.ID, e.Reason, e.LogPath)
}
