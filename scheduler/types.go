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
	// ResumeCmd is the lane's command that carries on in a worker's
	// Session (LANE_<id>_RESUME_CMD); with LANES it alone resumes, since
	// the session is that lane's CLI's. Without LANES the runner's
	// AGENT_RESUME_CMD does.
	ResumeCmd string
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
	// Finishing, when set, is called once the agent has ended, as the
	// attempt's checks start: the phase may be done in moments (a merge
	// train waits for it, TRAIN_WAIT_SECONDS). Any goroutine.
	Finishing func()
	// NoGate: the merge owner gates this phase's merge on top of the
	// base (speculative gates), which proves what the branch's own gate
	// would, on the tree that lands: the runner does not run the gate in
	// the worktree (and the agent's slot is free sooner).
	NoGate bool
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
	// Again: the merge owner did not get to this phase (its branch
	// moved, a lockfile regenerated): nothing happened to it, and it goes
	// back to the front of the merge queue.
	Again bool
	// Ahead: the phase conflicts with a car ahead of it in the
	// speculation, which has not landed: it goes back to the queue and
	// is built on the base once those have landed (or left).
	Ahead bool
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

// SpecMerger lands done phases through speculative parallel gates
// (GATE_SLOTS, docs/landing.md): the scheduler's loop decides which
// phases go together and on top of what (spec.go); the merger does the
// git work, each step called from a goroutine of the loop's.
//
//   - Build makes a car's commit: one first-parent commit that lands a
//     train of one or more done phases on the commit of the car ahead
//     (or on the base tip).
//   - GateCar gates that exact commit in a gate worktree of its own (one
//     per slot), so up to GATE_SLOTS gates run at once.
//   - Publish moves the base in one compare-and-swap to the top of a run
//     of green cars, every first-parent commit of which passed its gate.
type SpecMerger interface {
	Merger
	Build(ctx context.Context, c CarJob) CarBuild
	GateCar(ctx context.Context, g CarGate) CarGated
	Publish(ctx context.Context, p CarPublish) CarPublished
}

// CarJob asks for a car's commit: Jobs, in order, on On (the commit of the
// car ahead; "" for the base tip, read now).
type CarJob struct {
	On   string
	Jobs []MergeJob
}

// CarBuild is how a car's build ended.
type CarBuild struct {
	// Base is the base tip the car was built on, when On was "".
	Base string
	// Commit is the car's first-parent commit and Tree its tree; "" when
	// no job joined.
	Commit, Tree string
	// Joined are the indexes in CarJob.Jobs of the phases Commit lands,
	// in order, with the tip each merged and what each warns of (secrets
	// an allow accepted).
	Joined []int
	Tips   []string
	Notes  []string
	// Outs has one outcome per job in CarJob.Jobs; a joined job's is
	// empty. One that did not join says why: landed already (OK: only
	// the bookkeeping was left), refused (Reason, Detail), its branch
	// moved (Again), or it conflicts with a car ahead (Ahead).
	Outs []MergeOutcome
	// Waiting: nothing could be built yet (the base checkout lags behind
	// a move, a lock): the phases go back to the queue and wait.
	Waiting string
	// Err: the build could not run; the run stops.
	Err error
}

// CarGate asks for the gate of a built car in gate slot Slot (0-based).
type CarGate struct {
	Commit, Tree string
	Jobs         []MergeJob // the car's phases; the first's logs hold the gate's
	Slot         int
}

// CarGated is how a car's gate ended.
type CarGated struct {
	OK     bool
	Log    string
	Detail string // red: what to tell (the gate is red on the merge with <base>: see <log>)
	Flaky  string // red, then green on a rerun (GATE_RETRIES)
	Err    error  // the gate could not run (or was stopped)
}

// CarPublish asks for the base to move From (the base tip the front car
// was built on) To (the top green car's commit), landing Jobs (every phase
// of those cars, in order; Tips are the tips they merged).
type CarPublish struct {
	From, To string
	Jobs     []MergeJob
	Tips     []string
}

// CarPublished is how a publish ended: Out.OK, a wait (Out.Wait,
// Out.Waiting, Out.Changed), Out.Err, or Moved (the base moved since the
// cars were built: they are all built again).
type CarPublished struct {
	Out   MergeOutcome
	Moved bool
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
