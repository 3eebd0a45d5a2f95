// Package work carries out one attempt at one phase for the scheduler: it
// makes or finds the phase's worktree, runs WORKTREE_PREPARE_CMD, starts the
// agent with the pinned contract (prompt, environment, log), commits what the
// agent left, and then checks "done" itself and runs the gate. The agent's
// word is never taken for it.
//
// It is apart from package supervisor, which only runs a process, and from
// the scheduler, which only decides what runs when.
package work

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// ScriptAgent is the AGENT_CMD value that selects the built-in agent: it
// runs the first ```sh block of the phase doc and, if that exits 0, renames
// the doc to DONE_ and commits.
const ScriptAgent = "script"

// Runner implements scheduler.Runner over git worktrees and agent processes.
type Runner struct {
	Git     *worktree.Client
	Layout  state.Layout
	Agent   string   // AGENT_CMD
	Super   string   // SUPERVISOR_CMD
	Prepare string   // WORKTREE_PREPARE_CMD
	Env     []string // the driver's environment; the contract's variables are added
	Prompts prompts.Set
	// Redact is the driver's redaction funnel: every log of an attempt
	// (agent, prepare, gate) and the failure log a supervisor is handed
	// go through it.
	Redact *secret.Redactor

	StuckTimeout    time.Duration
	AgentTimeout    time.Duration
	LogCap          int64
	KillGrace       time.Duration
	DefaultCooldown time.Duration // DEFAULT_RATE_LIMIT_SLEEP
	// ResumeCmd (AGENT_RESUME_CMD) relaunches a worker in its earlier
	// agent session; "{session}" is replaced by the session id.
	ResumeCmd string
	Now       func() time.Time
	// Attach (ATTACH) runs agents on a pseudo-terminal whose screen
	// `claudopilot attach` shows (proc.Spec.Attach).
	Attach bool
	// LogKeep (LOG_KEEP) is how many logs of a node's role are kept
	// whatever they say; older ones of passing attempts are rotated
	// away. 0 keeps all.
	LogKeep int

	// Sandbox confines agents (and, with its Gate set, gates and
	// WORKTREE_PREPARE_CMD) with bubblewrap; nil runs them as they are.
	Sandbox *sandbox.Config
	// Stray, when set, finds writes outside the worktree while an agent
	// runs without the sandbox; share it with the issue queue's workers.
	Stray *sandbox.Watch
	// Remote, when set, runs the agents elsewhere (AGENT_RUNNER=
	// kubernetes); everything else stays here.
	Remote Remote
}

var _ scheduler.Runner = (*Runner)(nil)

// Run carries out one attempt. It never panics on a bad worktree: every
// problem becomes an Outcome with a reason. The attempt's log ends with a
// stamped line saying how it ended (state.EndStamp), and LOG_KEEP rotates
// the role's older logs of passing attempts away.
func (r *Runner) Run(ctx context.Context, j scheduler.Job, started func(pgid int)) scheduler.Outcome {
	o := r.run(ctx, j, started)
	log := r.Layout.LogPath(j.ID, string(j.Role), j.Attempt)
	if _, err := os.Stat(log); err != nil {
		log = o.LogPath // no agent ran: the prepare's log, if any
	}
	what := fmt.Sprintf("%s attempt %d of %s finished: exit %d", j.Role, j.Attempt, j.ID, o.ExitCode)
	if !o.OK {
		what = fmt.Sprintf("%s attempt %d of %s failed: reason=%s: %s", j.Role, j.Attempt, j.ID, o.Reason, o.Detail)
	}
	if log != "" && !(o.OK && o.Found) {
		appendLine(log, state.EndStamp(r.now(), what))
	}
	if r.LogKeep > 0 {
		if _, err := r.Layout.RotateLogs(j.ID, string(j.Role), r.LogKeep, r.now()); err != nil {
			o.Warnings = append(o.Warnings, "LOG_KEEP: "+err.Error())
		}
	}
	return o
}

func (r *Runner) run(ctx context.Context, j scheduler.Job, started func(pgid int)) scheduler.Outcome {
	o := scheduler.Outcome{ID: j.ID, Role: j.Role, Attempt: j.Attempt, Started: r.now()}
	fail := func(s *stop) scheduler.Outcome {
		o.Reason, o.Detail, o.Ended = s.reason, s.detail, r.now()
		return o
	}
	wt := r.Layout.Worktree(j.ID)
	t := r.target(j)
	if err := checkOutside(j, r.command(j), r.Env); err != nil {
		return fail(&stop{state.ReasonExit, err.Error()})
	}
	// A driver killed while the agent ran in the sandbox left its tip in
	// the private ref folder: carry it back before anything reads the
	// branch (whatever SANDBOX says now).
	if note, err := sandbox.Recover(ctx, r.Git, r.Layout.SandboxDir(j.ID), t.branch); err != nil {
		return fail(worktreeStop(err))
	} else if note != "" {
		o.Warnings = append(o.Warnings, "sandbox: "+note)
	}
	if tip, ok := r.landedTip(ctx, j, t.branch); ok {
		o.OK, o.Tip, o.Ended, o.Found = true, tip, r.now(), true
		return o
	}
	fresh, kept, err := r.ensureWorktree(ctx, j, wt, t)
	if err != nil {
		return fail(worktreeStop(err))
	}
	if kept {
		// A branch left from an earlier run (parked, or its worktree
		// removed): carry on from its commits, brought up to date.
		j.Retry = true
	}
	if fresh {
		r.forgetNotes(j.ID)
	}
	if fresh && r.Prepare != "" {
		if s := r.prepare(ctx, j.ID, wt, &o); s != nil {
			return fail(s)
		}
	}
	if s := r.catchUp(ctx, &j, wt, t, kept, &o); s != nil {
		return fail(s)
	}
	if j.Resume && j.Role == state.Worker {
		// The driver died during this phase. If the branch is done, go
		// straight to the gate. (A resumed supervisor is owed for a
		// failure the journal recorded, of an attempt that ended: the
		// gate would only meet it again, or pass the branch's own gate
		// and meet the red merge again, with no agent run between.)
		if tip, ok, _ := r.doneCheck(ctx, j, t); ok {
			o.Found = true
			return r.gate(ctx, j, wt, tip, o)
		}
	}
	if j.Capped != "" {
		// Over a token or session cap: no agent starts (and none ran).
		o.Found = true
		return fail(&stop{state.ReasonBudget, j.Capped})
	}
	spec, s := r.agentSpec(j, wt, t)
	if s != nil {
		return fail(s)
	}
	spec.OnStart = started
	o.LogPath = spec.LogPath
	if err := r.recordAttemptStart(ctx, j.ID, wt, fresh); err != nil {
		return fail(worktreeStop(err))
	}
	// Only a killed driver leaves the note behind, for the resumed attempt.
	defer r.endAttempt(j.ID)
	if err := r.recordLane(ctx, j, wt, t.branch); err != nil {
		o.Warnings = append(o.Warnings, "lane record: "+err.Error())
	}
	res, s := r.runJailed(ctx, j, t, wt, spec, &o)
	if s != nil {
		return fail(s)
	}
	return r.afterAgent(ctx, j, wt, t, res, o)
}

// stop ends an attempt before its gate: the reason and what happened.
type stop struct {
	reason state.Reason
	detail string
}

// worktreeStop is a stop for a problem with the worktree or the branch.
func worktreeStop(err error) *stop { return &stop{state.ReasonWorktree, err.Error()} }

// landedTip finds a resumed phase whose merge landed before the driver
// died: only the bookkeeping is left, which the merger does. No worktree,
// no prepare, no agent. (An outside node's landing is its Source's, which
// knows whether it merged.)
func (r *Runner) landedTip(ctx context.Context, j scheduler.Job, branch string) (string, bool) {
	if !j.Resume || j.Outside != nil || !Landed(ctx, r.Git, r.Layout, j.ID) {
		return "", false
	}
	tip, err := r.Git.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		tip, err = r.Git.RevParse(ctx, "refs/heads/"+r.Layout.Base)
	}
	return tip, err == nil
}

// prepare runs WORKTREE_PREPARE_CMD in a new worktree (in the gate's
// jail when the sandbox has one) and records the environment it made.
func (r *Runner) prepare(ctx context.Context, id, wt string, o *scheduler.Outcome) *stop {
	log := r.Layout.LogPath(id, "prepare", proc.NextLog(r.Layout.LogDir(id), "prepare"))
	jail, err := r.Sandbox.EnterGate(ctx, r.Git, wt, r.Layout.LogDir(id))
	if err != nil {
		return worktreeStop(err)
	}
	res := proc.Run(ctx, proc.Spec{Command: r.Prepare, Dir: wt, Env: r.Env, LogPath: log, LogCap: r.LogCap, Redact: r.Redact, KillGrace: r.KillGrace, Wrap: jail.Wrap()})
	o.LogPath = log
	if err := leaveJail(ctx, jail, r.Git, log, o); err != nil {
		return worktreeStop(err)
	}
	if ctx.Err() != nil {
		return &stop{state.ReasonExit, "interrupted"}
	}
	if res.ExitCode != 0 {
		return &stop{state.ReasonPrepare, fmt.Sprintf("WORKTREE_PREPARE_CMD exited %d", res.ExitCode)}
	}
	if err := r.recordEnvironment(ctx, id, wt); err != nil {
		return worktreeStop(err)
	}
	return nil
}

// catchUp brings the worktree to where the attempt starts: the branch
// checked out, a cut merge of the driver's made again, and the base (and
// a stacked-on tip) merged in when the job asks for it. A supervisor
// taking the base is told what the merge leaves as a conflict (j.Failure).
func (r *Runner) catchUp(ctx context.Context, j *scheduler.Job, wt string, t target, kept bool, o *scheduler.Outcome) *stop {
	if err := r.checkHead(ctx, wt, t.branch); err != nil {
		return worktreeStop(err)
	}
	// A merge of the driver's cut off by its death or an interrupt is
	// set back and made again before anything reads the worktree.
	if note, err := r.redoCutMerge(ctx, *j, wt); err != nil {
		return worktreeStop(err)
	} else if note != "" {
		o.Warnings = append(o.Warnings, note)
	}
	if j.Resume && (j.Role != state.Supervisor || j.Failure != state.ReasonConflict) {
		// A killed driver (or agent) left a merge of the base with
		// conflicts: it is the supervisor's, as a conflict. Neither the
		// done check nor a gate may run over the markers, and recovery
		// is no attempt.
		if paths, err := r.unfinishedMerge(ctx, wt); err != nil {
			return worktreeStop(err)
		} else if len(paths) > 0 {
			o.Found = true
			return &stop{state.ReasonConflict, "conflicts with " + t.base + " (an unfinished merge found on resume): " + strings.Join(paths, ", ")}
		}
	}
	if j.Retry {
		// A kept branch starts current: the base is merged in first. A
		// conflict there is left in place for the supervisor.
		if paths, err := r.mergeBase(ctx, *j, wt, t); err != nil {
			return worktreeStop(err)
		} else if len(paths) > 0 {
			return &stop{state.ReasonConflict, "conflicts with " + t.base + ": " + strings.Join(paths, ", ")}
		}
		if kept && j.StackOn != "" {
			// Stacked on a dep's tip: a kept branch takes it too.
			if paths, err := r.mergeRef(ctx, *j, wt, j.StackOn); err != nil {
				return worktreeStop(err)
			} else if len(paths) > 0 {
				return &stop{state.ReasonConflict, "conflicts with the tip it is stacked on: " + strings.Join(paths, ", ")}
			}
		}
	}
	return r.takeBase(ctx, j, wt, t)
}

// takeBase merges the base into the branch between attempts when the job
// asks for it (TakeBase), or for a supervisor owed a conflict.
func (r *Runner) takeBase(ctx context.Context, j *scheduler.Job, wt string, t target) *stop {
	switch {
	case j.TakeBase && !j.Retry && j.Role == state.Worker:
		// The base holds a phase this branch was predicted to conflict
		// with: merged in now, between attempts, so the conflict is met
		// here rather than at the merge.
		if paths, err := r.mergeBase(ctx, *j, wt, t); err != nil {
			return worktreeStop(err)
		} else if len(paths) > 0 {
			return &stop{state.ReasonConflict, "conflicts with " + t.base + ", which has landed a phase predicted to conflict with this one: " + strings.Join(paths, ", ")}
		}
	case j.Role == state.Supervisor && j.Failure == state.ReasonConflict:
		if _, err := r.mergeBase(ctx, *j, wt, t); err != nil {
			return worktreeStop(err)
		}
	case j.Role == state.Supervisor && j.TakeBase:
		// A supervisor taking the base resolves what the merge leaves,
		// told as a conflict.
		if paths, err := r.mergeBase(ctx, *j, wt, t); err != nil {
			return worktreeStop(err)
		} else if len(paths) > 0 {
			j.Failure, j.Detail = state.ReasonConflict, "conflicts with "+t.base+": "+strings.Join(paths, ", ")
		}
	}
	return nil
}

// agentSpec builds the agent's process: its command, prompt, log and the
// contract's environment. (Its jail's Wrap and OnStart come later.)
func (r *Runner) agentSpec(j scheduler.Job, wt string, t target) (proc.Spec, *stop) {
	cmd := r.command(j)
	if j.Outside != nil {
		if err := writeDoc(wt, j.Outside); err != nil {
			return proc.Spec{}, worktreeStop(err)
		}
	}
	if cmd == ScriptAgent {
		var err error
		if cmd, err = r.scriptCommand(wt, t.docRel, t.doneRel, j.ID); err != nil {
			return proc.Spec{}, &stop{state.ReasonExit, err.Error()}
		}
	}
	prompt, failLog, err := r.prompt(j, wt, t)
	if err != nil {
		return proc.Spec{}, &stop{state.ReasonExit, err.Error()}
	}
	promptFile := filepath.Join(r.Layout.LogDir(j.ID), fmt.Sprintf("%s-%d.prompt.md", j.Role, j.Attempt))
	env := append(r.contractEnv(j, t), "CLAUDOPILOT_PROMPT_FILE="+promptFile)
	if failLog != "" {
		env = append(env, "CLAUDOPILOT_FAILURE_LOG="+failLog)
	}
	if len(j.Findings) > 0 {
		env = append(env, "CLAUDOPILOT_REVIEW_FINDINGS="+FindingsPath(r.Layout, j.ID, j.Attempt))
	}
	return proc.Spec{
		Command: cmd, Dir: wt, Env: env, Prompt: prompt, PromptFile: promptFile,
		LogPath: r.Layout.LogPath(j.ID, string(j.Role), j.Attempt),
		LogCap:  r.LogCap, Redact: r.Redact, StuckTimeout: r.StuckTimeout, Timeout: r.AgentTimeout, KillGrace: r.KillGrace,
		Attach: r.attachSocket(j),
	}, nil
}

// runJailed runs the agent in its sandbox (or watched for stray writes
// without one), books its usage and warnings, and brings the branch tip
// back. A stop when the tip cannot come back or the agent's processes
// could not all be stopped.
func (r *Runner) runJailed(ctx context.Context, j scheduler.Job, t target, wt string, spec proc.Spec, o *scheduler.Outcome) (proc.Result, *stop) {
	// The agent CLIs' sessions of the phase are kept with its logs, for
	// its next attempt to resume (AGENT_RESUME_CMD).
	sb := r.Sandbox
	if r.Remote != nil {
		sb = nil // the agent runs in a pod: the pod is its sandbox
	}
	jail, err := sb.WithState(accountState(j.Account)...).Enter(ctx, r.Git, wt, t.branch, r.Layout.SandboxDir(j.ID), filepath.Join(r.Layout.LogDir(j.ID), "sessions"), r.Layout.LogDir(j.ID))
	if err != nil {
		return proc.Result{}, worktreeStop(err)
	}
	var snap *sandbox.Snapshot
	if r.Sandbox == nil && r.Stray != nil && r.Remote == nil {
		snap = r.Stray.Begin(ctx, r.Git, r.Layout.Top, wt)
	}
	log := spec.LogPath
	logStart := fileSize(log) // a relaunch appends: read only this run's output
	spec.Wrap = jail.Wrap()
	res := r.runAgent(ctx, j, t, wt, spec)
	if j.Finishing != nil && res.Reason == "" && res.ExitCode == 0 {
		j.Finishing() // the checks that follow take moments: a train may wait for them
	}
	var costNotes []string
	o.Usage, costNotes = usageOf(log, logStart)
	if res.Reason != proc.ReasonStart {
		o.Usage.Sessions = 1 // an agent process started (PHASE_MAX_SESSIONS)
	}
	o.Warnings = append(o.Warnings, costNotes...)
	if j.Lane != "" {
		noteInLog(log, fmt.Sprintf("claudopilot: %s attempt %d of %s ran on lane %s", j.Role, j.Attempt, j.ID, j.Lane))
	}
	o.ExitCode = res.ExitCode
	// The branch tip comes back from the sandbox before anything reads it.
	if err := leaveJail(ctx, jail, r.Git, log, o); err != nil {
		return res, worktreeStop(err)
	}
	r.warnWrites(ctx, snap, log, o)
	if res.Stray != nil {
		// Something of the agent's still runs: its worktree is not
		// finished work, and the gate must not run beside it.
		return res, &stop{state.ReasonWorktree, "the agent's processes could not all be stopped: " + res.Stray.Error()}
	}
	return res, nil
}

// warnWrites notes in the log and the outcome what the agent wrote where
// it should not have: outside its worktree (snap, without the sandbox) and
// to files the driver reverted.
func (r *Runner) warnWrites(ctx context.Context, snap *sandbox.Snapshot, log string, o *scheduler.Outcome) {
	if snap != nil {
		manifest := filepath.Join(r.Layout.Top, filepath.FromSlash(r.Layout.ManifestRel()))
		for _, p := range r.Stray.End(context.WithoutCancel(ctx), r.Git, r.Layout.Top, snap, manifest) {
			noteInLog(log, "claudopilot: warning: "+sandbox.StrayWarning(p))
			o.Warnings = append(o.Warnings, sandbox.StrayWarning(p))
		}
	}
	for _, rv := range r.Git.Reverted(o.Started) {
		w := sandbox.RevertWarning(rv.Path, rv.What)
		noteInLog(log, "claudopilot: warning: "+w)
		o.Warnings = append(o.Warnings, w)
	}
}

// afterAgent judges what the agent left: a question, a stop (interrupt,
// stuck, timeout, a remote runner's refusal), an unfinished or failed
// attempt, or a done branch, which goes to the gate.
func (r *Runner) afterAgent(ctx context.Context, j scheduler.Job, wt string, t target, res proc.Result, o scheduler.Outcome) scheduler.Outcome {
	fail := func(s *stop) scheduler.Outcome {
		o.Reason, o.Detail, o.Ended = s.reason, s.detail, r.now()
		return o
	}
	// The question file goes before anything is committed: it never lands.
	question, err := takeQuestion(wt)
	if err != nil {
		return fail(worktreeStop(err))
	}
	if question == "" {
		question = questionIn(res.Tail)
	}
	if question != "" && res.Reason != "canceled" && res.Reason != "start" {
		// Asked, even if it then hung waiting for an answer (stuck).
		return r.asked(ctx, j, wt, r.Redact.String(question), o)
	}
	if s := r.stopped(ctx, j, wt, res); s != nil {
		return fail(s)
	}
	if err := r.checkHead(ctx, wt, t.branch); err != nil {
		return fail(worktreeStop(err))
	}
	if err := r.commitLeftovers(ctx, j, wt); err != nil {
		return fail(worktreeStop(err))
	}
	tip, done, why := r.doneCheck(ctx, j, t)
	if res.ExitCode != 0 || !done {
		return fail(r.unfinished(j, res, why, &o))
	}
	return r.gate(ctx, j, wt, tip, o)
}

// stopped is the stop for an agent that did not end on its own (res.Reason
// set); nil for one that did. Leftovers are committed on every path the
// agent ran, each check of commitLeftovers first (a stopped agent may have
// left anything).
func (r *Runner) stopped(ctx context.Context, j scheduler.Job, wt string, res proc.Result) *stop {
	var refused *refusedError
	switch res.Reason {
	case "canceled":
		err := r.commitLeftovers(context.WithoutCancel(ctx), j, wt)
		if errors.As(err, &refused) {
			return &stop{state.ReasonWorktree, "interrupted; " + err.Error()}
		}
		return &stop{state.ReasonExit, "interrupted"}
	case "stuck", "timeout":
		err := r.commitLeftovers(ctx, j, wt)
		if errors.As(err, &refused) {
			return worktreeStop(err)
		}
		if res.Reason == "stuck" {
			return &stop{state.ReasonStuck, "no output for " + r.StuckTimeout.String()}
		}
		return &stop{state.ReasonTimeout, "ran longer than " + r.AgentTimeout.String()}
	case "start":
		return &stop{state.ReasonExit, fmt.Sprintf("could not start the agent: %v", res.Err)}
	case RemoteOOM:
		return &stop{state.ReasonOOM, res.Err.Error()}
	case RemoteUnschedulable:
		return &stop{state.ReasonUnschedulable, res.Err.Error()}
	case RemoteRefused:
		return worktreeStop(res.Err)
	}
	return nil
}

// unfinished is the stop for an agent that exited non-zero or left the
// phase not done (why). Only a failed attempt is read for rate limits: an
// agent that finished may well have printed "429" along the way.
func (r *Runner) unfinished(j scheduler.Job, res proc.Result, why string, o *scheduler.Outcome) *stop {
	switch proc.Classify(res.Tail) {
	case proc.RateLimit:
		d, hinted := proc.ResetHint(res.Tail, r.now())
		if !hinted {
			o.Cooldown = r.DefaultCooldown
			return &stop{state.ReasonExit, "rate limited, no reset time given (DEFAULT_RATE_LIMIT_SLEEP)"}
		}
		o.Cooldown = d
		return &stop{state.ReasonExit, "usage limit, resets " + r.now().Add(d).Local().Format("Jan 2 15:04")}
	case proc.Transient:
		o.Transient = true
	}
	if res.ExitCode != 0 {
		o.ExitCode = res.ExitCode
		return &stop{state.ReasonExit, fmt.Sprintf("%s exited %d", j.Role, res.ExitCode)}
	}
	return &stop{state.ReasonNoDone, why}
}

// command is the agent command the job runs: the lane's, else
// AGENT_CMD or SUPERVISOR_CMD; AGENT_RESUME_CMD to carry on in a worker's
// earlier session.
func (r *Runner) command(j scheduler.Job) string {
	cmd := r.Agent
	if j.Role == state.Supervisor {
		cmd = r.Super
	}
	if j.Cmd != "" {
		cmd = j.Cmd // the lane's command
	}
	if r.resumes(j) {
		// Carry on in the agent's own session (after a rate limit, a
		// transient error, a poke or a crash) instead of starting over.
		cmd = strings.ReplaceAll(r.resumeCmd(j), "{session}", shellQuote(j.Session))
	}
	return cmd
}

// resumeCmd is the command that carries on in j's session: its lane's
// (LANE_<id>_RESUME_CMD, whose CLI made the session) with LANES, else
// AGENT_RESUME_CMD.
func (r *Runner) resumeCmd(j scheduler.Job) string {
	if j.Lane != "" {
		return j.ResumeCmd
	}
	return r.ResumeCmd
}

// attachSocket is where the agent's terminal is served, or "" (no ATTACH).
func (r *Runner) attachSocket(j scheduler.Job) string {
	if !r.Attach && !j.Attach {
		return ""
	}
	return r.Layout.AttachSocket(j.ID)
}

// resumes is true when the job carries on in the agent's own session:
// a worker's after a rate limit or a crash, any role's after its question
// was answered.
func (r *Runner) resumes(j scheduler.Job) bool {
	return j.Session != "" && r.resumeCmd(j) != "" && (j.Role == state.Worker || j.Answer != "")
}

// asked ends an attempt whose agent asked a question: what it left is
// committed (the question file already removed), and the attempt ends as
// needs-input.
func (r *Runner) asked(ctx context.Context, j scheduler.Job, wt, question string, o scheduler.Outcome) scheduler.Outcome {
	o.Question = question
	o.Reason, o.Detail = state.ReasonNeedsInput, "asked: "+question
	if err := r.commitLeftovers(context.WithoutCancel(ctx), j, wt); err != nil {
		o.Question = ""
		o.Reason, o.Detail = state.ReasonWorktree, err.Error()
	}
	o.Ended = r.now()
	return o
}

// resumeNudge is what a resumed session is told on stdin.
func resumeNudge(docRel, doneRel string) string {
	return fmt.Sprintf("claudopilot: you were stopped mid-run (a rate limit, a passing API error, no output for too long, or the driver's restart) and this is your session again, its context intact. "+
		"Look at what you have done so far (git log, git status, the checklist in %s) and carry on from there, under the same contract: "+
		"keep the gate green, commit your work, and when every slice is done rename %s to %s, commit, and exit 0. Do not start over, merge, or edit the manifest.\n", docRel, docRel, doneRel)
}

// gate runs the phase's gate in its worktree at the branch tip, unless
// the merge owner gates the merge on top of the base (Job.NoGate), which
// proves the same on the tree that lands.
func (r *Runner) gate(ctx context.Context, j scheduler.Job, wt, tip string, o scheduler.Outcome) scheduler.Outcome {
	if j.NoGate {
		o.OK, o.Tip, o.Ended = true, tip, r.now()
		return o
	}
	if j.Gating != nil {
		j.Gating()
	}
	ok, log, err := RunGateIn(ctx, r.Sandbox, r.Git, r.Layout, j.ID, j.Gate, wt, r.Env, r.Redact, r.LogCap, r.KillGrace)
	o.Ended = r.now()
	if err != nil || !ok {
		o.Reason, o.LogPath = state.ReasonGate, log
		o.Detail = "the gate is red: " + j.Gate
		if err != nil {
			o.Detail = err.Error()
		}
		return o
	}
	o.OK, o.Tip = true, tip
	return o
}

// RunGateIn is RunGate under sb's sandbox for gates, or as it is when sb
// is nil or SANDBOX_GATE is off. What the sandbox undid goes to the log.
func RunGateIn(ctx context.Context, sb *sandbox.Config, git *worktree.Client, l state.Layout, id, gate, dir string, env []string, red *secret.Redactor, logCap int64, grace time.Duration) (ok bool, log string, err error) {
	if NoGateCommand(gate) {
		return RunGate(ctx, l, id, gate, dir, env, red, logCap, grace) // nothing runs: no jail
	}
	jail, err := sb.EnterGate(ctx, git, dir, l.LogDir(id))
	if err != nil {
		return false, "", fmt.Errorf("gate: %w", err)
	}
	ok, log, err = RunGate(ctx, l, id, gate, dir, env, red, logCap, grace, jail.Wrap()...)
	notes, lerr := jail.Leave(context.WithoutCancel(ctx), git)
	for _, n := range notes {
		noteInLog(log, "claudopilot: sandbox: "+n)
	}
	return ok, log, errors.Join(err, lerr)
}

// RunGate runs a gate command in dir, logging to the phase's next
// gate-<n>.log through red (the redaction funnel; nil: none). ok is
// false when the gate exits non-zero. wrap, when given, is the sandbox's
// command prefix (sandbox.Jail.Wrap). A gate with no command
// (NoGateCommand) starts no process.
func RunGate(ctx context.Context, l state.Layout, id, gate, dir string, env []string, red *secret.Redactor, logCap int64, grace time.Duration, wrap ...string) (ok bool, log string, err error) {
	log = l.LogPath(id, "gate", proc.NextLog(l.LogDir(id), "gate"))
	if NoGateCommand(gate) {
		if err := ctx.Err(); err != nil {
			return false, log, err
		}
		if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
			return false, log, fmt.Errorf("gate: %w", err)
		}
		note := fmt.Sprintf("=== claudopilot: the gate is %q: no command, nothing to run; green\n", gate)
		if err := os.WriteFile(log, []byte(note), 0o644); err != nil {
			return false, log, fmt.Errorf("gate: %w", err)
		}
		return true, log, nil
	}
	res := proc.Run(ctx, proc.Spec{Command: gate, Dir: dir, Env: env, LogPath: log, LogCap: logCap, Redact: red, KillGrace: grace, Wrap: wrap})
	if res.Reason == "start" {
		return false, log, fmt.Errorf("gate: %w", res.Err)
	}
	if ctx.Err() != nil {
		return false, log, ctx.Err()
	}
	return res.ExitCode == 0, log, nil
}

// NoGateCommand is true for a gate that checks nothing: empty, or
// `true` (GATE_CMD's default), which sh runs as a builtin that exits 0.
// Such a gate starts no process (it was an `sh -c true`, and under
// SANDBOX_GATE a bubblewrap jail, for every phase and merge gate): its
// gate-<n>.log says so and it is green. Any other command runs.
func NoGateCommand(gate string) bool {
	g := strings.TrimSpace(gate)
	return g == "" || g == "true"
}

// ensureWorktree finds or makes the phase's worktree. fresh is true when it
// was made now (so WORKTREE_PREPARE_CMD must run).
func (r *Runner) ensureWorktree(ctx context.Context, j scheduler.Job, wt string, t target) (fresh, kept bool, err error) {
	branch := t.branch
	over, err := r.startsOver(ctx, j, t)
	if err != nil {
		return false, false, err
	}
	if over {
		if err := r.setAsideStacked(ctx, j, wt, branch); err != nil {
			return false, false, err
		}
		j.Fresh = true
	}
	if reused, err := r.reuseWorktree(ctx, j.ID, wt, branch); err != nil || reused {
		return false, false, err
	}
	exists, err := r.Git.BranchExists(ctx, branch)
	if err != nil {
		return false, false, err
	}
	firstTry := j.Role == state.Worker && (j.Attempt == 1 || j.Fresh) && !j.Resume && !j.Retry
	if exists && firstTry {
		// Whether it landed matters only to a first try (a merge-base
		// process; a retry or resume carries the branch on either way).
		tip, err := r.Git.RevParse(ctx, "refs/heads/"+branch)
		if err != nil {
			return false, false, err
		}
		merged, err := r.Git.IsAncestor(ctx, tip, t.from)
		if err != nil {
			return false, false, err
		}
		if merged {
			// A leftover of an earlier run that landed: start afresh.
			if err := r.Git.DeleteBranch(ctx, branch); err != nil {
				return false, false, err
			}
			exists = false
		}
	} else if exists && !j.Retry && !j.Resume {
		return false, false, fmt.Errorf("the worktree %s is gone", wt)
	} else if !exists && !firstTry && !j.Resume && !j.Retry {
		return false, false, fmt.Errorf("the worktree %s and branch %s are gone", wt, branch)
	}
	if exists {
		// A kept (parked) branch: attach it, keeping its commits.
		return true, !j.Resume, r.Git.AddWorktreeKnown(ctx, wt, branch, "", &exists)
	}
	start, err := r.startOf(ctx, j, t)
	if err != nil {
		return false, false, err
	}
	// The branch is made here, by update-ref (which reads no worktree,
	// unlike the `git branch` that `worktree add -b` runs), outside the
	// repository's worktree lock: the lock then covers `worktree add` and
	// its symbolic-ref, two processes of three, and a level's adds queue
	// less (issue 25 §2). A driver killed between the two leaves what a
	// killed `worktree add -b` did: the branch at its start, no worktree.
	if err := r.Git.UpdateRef(ctx, "refs/heads/"+branch, start, strings.Repeat("0", len(start))); err != nil {
		return false, false, err
	}
	exists = true
	return true, false, r.Git.AddWorktreeKnown(ctx, wt, branch, "", &exists)
}

// reuseWorktree uses the phase's worktree folder as it is when it is a
// usable worktree (true), after clearing stale locks and a gate's mark;
// anything else found there is set aside for the worktree to be made
// again (false).
func (r *Runner) reuseWorktree(ctx context.Context, id, wt, branch string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(wt, ".git")); err == nil {
		why, err := r.usable(ctx, wt)
		if err != nil {
			return false, err
		}
		if why == "" {
			gd, err := OwnGitDir(ctx, r.Git, wt)
			if err != nil {
				return false, err
			}
			if err := r.clearStaleLocks(ctx, wt, gd, branch); err != nil {
				return false, err
			}
			if err := r.endGating(ctx, id, wt, branch); err != nil {
				return false, err
			}
			return true, nil
		}
		// A worktree git does not list, that is locked, or whose
		// checkout was never populated (a `git worktree add` cut off by
		// Ctrl-C): used as it is, its empty checkout would be committed
		// as the deletion of every file. Its work is on the branch; the
		// folder is set aside and the worktree made again.
		if err := r.setAside(ctx, wt); err != nil {
			return false, fmt.Errorf("the worktree %s cannot be used (%s): %w", wt, why, err)
		}
	} else if _, err := os.Stat(wt); err == nil {
		// A folder without its .git link: a `git worktree add` that a
		// killed driver cut off. It holds no commits (those are on the
		// branch); it is moved aside, not deleted, and the stale
		// registration pruned, so the add below can succeed.
		if err := r.setAside(ctx, wt); err != nil {
			return false, err
		}
	}
	return false, nil
}

// leaveJail ends a sandboxed process's jail (nothing for a nil one): what
// it undid or discarded goes to the log and becomes a warning.
func leaveJail(ctx context.Context, jail *sandbox.Jail, git *worktree.Client, log string, o *scheduler.Outcome) error {
	notes, err := jail.Leave(context.WithoutCancel(ctx), git)
	for _, n := range notes {
		noteInLog(log, "claudopilot: sandbox: "+n)
		o.Warnings = append(o.Warnings, "sandbox: "+n)
	}
	return err
}

// appendLine adds a line at the end of a log.
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "\n%s\n", line)
}

// noteInLog appends one line of the driver's to an attempt's log, so the
// log tells the whole story of the attempt.
func noteInLog(path, line string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "\n=== %s\n", line)
}

// checkHead fails when the worktree is gone or no longer on its branch.
func (r *Runner) checkHead(ctx context.Context, wt, branch string) error {
	if _, err := os.Stat(wt); err != nil {
		return fmt.Errorf("the worktree %s is gone", wt)
	}
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return err
	}
	head, err := r.Git.HeadIs(ctx, wt, gd, "refs/heads/"+branch)
	if err != nil || head != "refs/heads/"+branch {
		if head == "" {
			head = "a detached HEAD"
		}
		return fmt.Errorf("the worktree's HEAD is %s, not %s", head, branch)
	}
	return nil
}

// mergeBase merges the base (an outside node's From) into the branch in
// its worktree (mergeRef).
func (r *Runner) mergeBase(ctx context.Context, j scheduler.Job, wt string, t target) ([]string, error) {
	return r.mergeRef(ctx, j, wt, t.from)
}

// unfinishedMerge lists the conflicting paths of a merge in progress in
// wt (none when no merge is in progress). Whether one is under way is
// read from the worktree's own admin folder (OwnGitDir, no git process;
// git is asked only when a MERGE_HEAD is there): a rev-parse per resumed
// attempt before.
func (r *Runner) unfinishedMerge(ctx context.Context, wt string) ([]string, error) {
	gd, err := OwnGitDir(ctx, r.Git, wt)
	if err != nil {
		return nil, err
	}
	if !r.Git.MergeInProgressIn(ctx, wt, gd) {
		return nil, nil
	}
	return r.unmerged(ctx, wt)
}

func (r *Runner) unmerged(ctx context.Context, wt string) ([]string, error) {
	return r.Git.Unmerged(ctx, wt)
}

// doneCheck is the driver's own test of "done": the branch tip has
// DONE_<doc>, no longer has <doc>, and holds at least one commit the base
// does not. An outside node has its own rule (outsideDone).
func (r *Runner) doneCheck(ctx context.Context, j scheduler.Job, t target) (tip string, ok bool, why string) {
	if j.Outside != nil {
		return r.outsideDone(ctx, j, t)
	}
	tip, err := r.Git.RevParse(ctx, "refs/heads/"+t.branch)
	if err != nil {
		return "", false, err.Error()
	}
	docRel, doneRel := t.docRel, t.doneRel
	// Both paths in one git process.
	fs, err := r.Git.ReadFiles(ctx, tip, doneRel, docRel)
	if err != nil || fs[0].Err != nil || !fs[0].OK {
		return tip, false, fmt.Sprintf("the branch has no %s: the phase doc was not renamed", doneRel)
	}
	if fs[1].OK {
		return tip, false, fmt.Sprintf("the branch still has %s beside its DONE_ copy", docRel)
	}
	// A tip the sandbox's absorb brought in new is beyond the base
	// (worktree.NoteFresh); any other is counted.
	if r.Git.TakeFresh(tip) || r.onTopOfBase(ctx, tip) {
		return tip, true, ""
	}
	n, err := r.Git.CountCommits(ctx, "refs/heads/"+r.Layout.Base, tip)
	if err != nil || n == 0 {
		return tip, false, "the branch has no commits beyond " + r.Layout.Base
	}
	return tip, true, ""
}

// onTopOfBase is beyond for the base branch.
func (r *Runner) onTopOfBase(ctx context.Context, tip string) bool {
	return r.beyond(ctx, "refs/heads/"+r.Layout.Base, tip)
}

// beyond is true when base's commit is among tip's ancestors of the first
// onTopSteps generations (any parent: a merge of the base into the branch
// counts), and is not tip itself: then tip holds a commit base does not
// (were tip reachable from base, each would descend from the other, and
// be the same). The lookups go through the resolver already running for
// the done check, where a rev-list --count was one git process an
// attempt; anything else (base moved on, a longer branch, an octopus, a
// lookup that fails) is left to the count.
func (r *Runner) beyond(ctx context.Context, base, tip string) bool {
	b, err := r.Git.RevParse(ctx, base)
	if err != nil || b == tip {
		return false
	}
	seen := map[string]bool{tip: true}
	gen := []string{tip}
	for range onTopSteps {
		var next []string
		for _, c := range gen {
			for p := 1; p <= 2; p++ {
				up, err := r.Git.RevParse(ctx, c+"^"+strconv.Itoa(p))
				if err != nil {
					break // no such parent
				}
				if up == b {
					return true
				}
				if !seen[up] {
					seen[up] = true
					next = append(next, up)
				}
			}
		}
		gen = next
	}
	return false
}

// onTopSteps bounds beyond's walk: an agent's few commits (its work,
// its DONE_ rename, the driver's leftover commit, a merge of the base)
// on the base it started from.
const onTopSteps = 4

func (r *Runner) contractEnv(j scheduler.Job, t target) []string {
	env := make([]string, 0, len(r.Env)+12)
	for _, kv := range r.Env {
		// A driver started by another claudopilot must not leak its
		// contract into this agent.
		if !strings.HasPrefix(kv, "CLAUDOPILOT_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"CLAUDOPILOT_ROLE="+string(j.Role),
		"CLAUDOPILOT_PHASE="+j.ID,
		"CLAUDOPILOT_PHASE_DOC="+t.docRel,
		"CLAUDOPILOT_ATTEMPT="+strconv.Itoa(j.Attempt),
		"CLAUDOPILOT_BRANCH="+t.branch,
		"CLAUDOPILOT_BASE="+t.base,
		"CLAUDOPILOT_GATE="+j.Gate,
	)
	if j.Lane != "" {
		env = append(env, "CLAUDOPILOT_LANE="+j.Lane)
	}
	if j.Account != "" {
		// The lane's account (LANE_<id>_CREDENTIALS): Claude Code reads
		// its configuration and login there. Under the sandbox the path
		// holds the attempt's private copy, the original read-only.
		env = withoutVar(env, "CLAUDE_CONFIG_DIR")
		env = append(env, "CLAUDE_CONFIG_DIR="+j.Account)
	}
	if j.Role == state.Supervisor {
		env = append(env,
			"CLAUDOPILOT_SUPERVISOR_MODE="+j.Mode,
			"CLAUDOPILOT_FAILURE="+string(j.Failure),
		)
		if j.Detail != "" {
			env = append(env, "CLAUDOPILOT_FAILURE_DETAIL="+j.Detail)
		}
	}
	return append(env, outsideEnv(j)...)
}

// prompt renders the role's prompt. For a supervisor it also writes the
// failing log's last 200 lines to a file and returns its path.
func (r *Runner) prompt(j scheduler.Job, wt string, t target) ([]byte, string, error) {
	d := prompts.Data{
		ID: j.ID, Title: j.Title, Role: string(j.Role), Attempt: j.Attempt, Mode: j.Mode,
		Doc: t.docRel, DoneDoc: t.doneRel, Manifest: r.Layout.ManifestRel(), Worktree: wt,
		Branch: t.branch, Base: t.base, Gate: j.Gate, Owns: j.Owns,
		Failure: string(j.Failure), Detail: j.Detail, Checks: j.Checks,
	}
	if o := j.Outside; o != nil {
		d.Number, d.URL = o.Number, o.URL
	}
	if d.Gate == "" {
		d.Gate = "true"
	}
	var failLog string
	if j.Role == state.Supervisor && j.FailureLog != "" {
		lines, err := proc.TailFile(j.FailureLog, 200)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, "", err
		}
		failLog = filepath.Join(r.Layout.LogDir(j.ID), fmt.Sprintf("supervisor-%d.failure.log", j.Attempt))
		if err := os.MkdirAll(filepath.Dir(failLog), 0o755); err != nil {
			return nil, "", err
		}
		// Through the funnel again: a log written before it knew a
		// value, or by an older driver, is handed on scrubbed too.
		body := strings.Join(r.Redact.Lines(lines), "\n")
		if len(lines) > 0 {
			body += "\n"
		}
		if err := os.WriteFile(failLog, []byte(body), 0o644); err != nil {
			return nil, "", err
		}
		d.FailureLog = failLog
	}
	if len(j.Findings) > 0 {
		f, err := writeFindings(r.Layout, j)
		if err != nil {
			return nil, "", err
		}
		d.Findings = f
	}
	if j.Answer != "" && r.resumes(j) {
		// The session goes on: the answer is its next message.
		return []byte(fmt.Sprintf("You asked: %s\n\nThe answer: %s\n\nCarry on with the task.\n", j.Question, j.Answer)), failLog, nil
	}
	if r.resumes(j) {
		// The resumed session holds the task: a short nudge re-orients
		// it (Claudopilot sent one too) instead of the whole prompt again.
		return []byte(resumeNudge(t.docRel, t.doneRel)), failLog, nil
	}
	p, err := r.Prompts.Render(t.tmpl, d)
	if err == nil && j.Answer != "" {
		// A fresh attempt: told what was asked and answered.
		p = fmt.Appendf(p, "\n## Your question, answered\nAn earlier attempt at this task stopped to ask:\n\n    %s\n\nThe answer:\n\n    %s\n", j.Question, j.Answer)
	}
	return p, failLog, err
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Landed reports whether the phase's merge is on the base: the base's
// committed manifest marks it [merged], which the merge commit alone does.
// (A branch being contained in the base proves nothing: a branch with no
// commits yet is contained too.)
func Landed(ctx context.Context, git *worktree.Client, l state.Layout, id string) bool {
	src, ok, err := git.ReadFile(ctx, "refs/heads/"+l.Base, l.ManifestRel())
	if err != nil || !ok {
		return false
	}
	// A manifest with problems elsewhere still tells this phase's state.
	m, _ := manifest.Parse(src)
	if m == nil {
		return false
	}
	p := m.Phase(id)
	return p != nil && p.State == manifest.Merged
}

// GatingMark is the file the merge owner keeps while a phase's worktree is
// detached at a merge commit for its gate.
func GatingMark(l state.Layout, id string) string {
	return filepath.Join(l.StateDir(), "gating-"+state.SafeName(id))
}

// endGating puts a worktree the merge owner left detached (the driver was
// killed during the merge gate) back on its branch. Only the driver's own
// detach is undone; a HEAD an agent moved stays a failure.
func (r *Runner) endGating(ctx context.Context, id, wt, branch string) error {
	mark := GatingMark(r.Layout, id)
	if _, err := os.Stat(mark); err != nil {
		return nil
	}
	if _, err := OwnGitDir(ctx, r.Git, wt); err != nil {
		return err
	}
	if err := r.Git.ForceCheckout(ctx, wt, branch); err != nil {
		return fmt.Errorf("put %s back on %s after an interrupted merge gate: %w", wt, branch, err)
	}
	return os.Remove(mark)
}

// withoutVar drops name's entries from env.
func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// accountState is a lane's account folder, as CLI state the sandbox gives
// each agent its own copy of (none for the user's own account).
func accountState(account string) []string {
	if account == "" {
		return nil
	}
	return []string{account}
}
