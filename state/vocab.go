package state

// Role says who runs in a phase's worktree.
type Role string

const (
	Worker     Role = "worker"
	Supervisor Role = "supervisor"
	// ReviewerRole is the role that reads a green phase before it lands.
	ReviewerRole Role = "reviewer"
)

// Reason is why an attempt failed. Every failure carries exactly one.
type Reason string

const (
	ReasonNone     Reason = ""
	ReasonNoDone   Reason = "no-done"  // exited 0 without the DONE_ rename
	ReasonExit     Reason = "exit"     // exited non-zero
	ReasonGate     Reason = "gate"     // the gate is red
	ReasonPrepare  Reason = "prepare"  // WORKTREE_PREPARE_CMD failed
	ReasonStuck    Reason = "stuck"    // no output for STUCK_TIMEOUT
	ReasonTimeout  Reason = "timeout"  // ran longer than AGENT_TIMEOUT
	ReasonWorktree Reason = "worktree" // the worktree vanished or HEAD moved off auto/<id>
	ReasonConflict Reason = "conflict" // the merge into the base conflicts
	ReasonScope    Reason = "scope"    // the branch changed files outside (owns: …)
	ReasonSecret   Reason = "secret"   // the merge would add a secret (a token, a key) to the base
	// ReasonProtected: the landing would change a file that steers the
	// next run (a setting, a prompt override, another phase's doc:
	// package protect).
	ReasonProtected Reason = "protected"
	ReasonBudget    Reason = "budget" // the phase spent PHASE_MAX_COST_USD
	ReasonReview    Reason = "review" // the reviewers still blocked after the last round
	// ReasonNeedsInput: the agent asked a question (CLAUDOPILOT-NEEDS-INPUT)
	// and no answer came within NEEDS_INPUT_HOURS.
	ReasonNeedsInput Reason = "needs-input"
	// The cluster's (AGENT_RUNNER=kubernetes), not the agent's:
	ReasonOOM           Reason = "oom"           // the agent's pod ran out of memory (K8S_MEMORY)
	ReasonUnschedulable Reason = "unschedulable" // its pod stayed Pending past K8S_PENDING_SECONDS
	// A worker's own report, by its exit code (Claudopilot's contract):
	ReasonCheckpoint Reason = "checkpoint" // exited 2: a checkpoint, for a person to look at
	ReasonDeps       Reason = "dependency" // exited 4: a dependency it needs is not there
	// The landing on GitHub (an outside node's pull request):
	ReasonChecks Reason = "checks"       // the pull request's checks are red, or still pending after CHECKS_TIMEOUT
	ReasonPush   Reason = "push"         // the branch could not be pushed
	ReasonPR     Reason = "pull request" // the pull request could not be opened, readied, or was closed
	ReasonMerge  Reason = "merge"        // GitHub refused the merge, or the base kept moving
)

// FoundDone marks a "done" record whose attempt found the branch already
// done, without running an agent: it is not counted as an attempt.
const FoundDone = "found done"
