package issues

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/prompts"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// PromptData is what the issue prompt templates (issue-worker.md,
// issue-supervisor.md) can use.
type PromptData struct {
	ID         string // "#12"
	Number     int
	Title, URL string
	Role       string // worker or supervisor
	Attempt    int
	Mode       string // supervisor: standard or best-effort
	Doc        string // the issue body's file, relative to the worktree root
	Worktree   string
	Branch     string
	Base       string
	Gate       string
	Failure    string   // supervisor: exit, no-commit, gate, checks
	FailureLog string   // supervisor: a file with the failing log's tail (or the failing checks)
	Detail     string   // supervisor: more about the failure
	Checks     []string // supervisor: the failing checks' names
	Findings   string   // worker sent back by the review gate: a file with the findings
}

// failure is why an attempt did not succeed.
type failure struct {
	reason string // the scheduler's reasons (state.Reason: exit, no-done, gate, prepare, worktree, …), then the landing's: push, checks, merge, pull request
	detail string
	log    string // the log that shows it
	checks []string
	// head is the commit whose checks (or review) failed: a repair must
	// go beyond it. red: the checks were red (not pending).
	head string
	red  bool
}

func (f *failure) Error() string {
	if f.detail == "" {
		return f.reason
	}
	return f.reason + ": " + f.detail
}

// worker works one claimed issue. It reads the Queue's configuration and
// clients but owns no queue state: its Result goes back over a channel.
type worker struct {
	q      *Queue
	is     *Issue
	n      int
	id     string // "#n"
	branch string
	wt     string
	round  int64
	pr     *PR
	pushed bool
	stopHB func()
	// findings are the reviewers' findings for the next worker attempt.
	findings []string
	// outside: the worker only lands (Queue.Land); the scheduler runs the
	// agents, so the review gate's findings end the landing instead of
	// going to a worker attempt here.
	outside bool
}

func (q *Queue) logIssue(n int, format string, args ...any) {
	q.logf("#%d: %s", n, fmt.Sprintf(format, args...))
}

// work claims issue is and, if the claim holds, works it to a merged or
// review-ready pull request, or blocks it.
func (q *Queue) work(ctx context.Context, is *Issue) Result {
	res := Result{Number: is.Number}
	won, round, why, err := q.claim(ctx, is.Number)
	switch {
	case ctx.Err() != nil:
		if won {
			q.release(ctx, is.Number, round, "interrupted")
		}
		res.Kind = Interrupted
		return res
	case errors.Is(err, ErrNotFound):
		q.logIssue(is.Number, "vanished; dropped")
		res.Kind = Dropped
		return res
	case err != nil:
		q.logIssue(is.Number, "claim failed: %v", err)
		res.Kind, res.Reason = Errored, err.Error()
		return res
	case !won:
		q.logIssue(is.Number, "not claimed: %s", why)
		res.Kind, res.Reason = Lost, why
		return res
	}
	q.logIssue(is.Number, "claimed by %s", q.instance)
	w := &worker{q: q, is: is, n: is.Number, id: IssueID(is.Number), branch: Branch(is.Number), wt: q.WorktreePath(is.Number), round: round}
	w.stopHB = w.heartbeat(ctx)
	defer w.stopHB()
	kind, f := w.run(ctx)
	w.stopHB()
	if w.pr != nil {
		res.PR = w.pr.Number
	}
	// The bookkeeping must happen even when we were interrupted.
	fin, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	switch {
	case ctx.Err() != nil:
		q.release(ctx, is.Number, round, "interrupted")
		res.Kind = Interrupted
	case kind == Dropped:
		q.logIssue(is.Number, "dropped: %v", f)
		res.Kind, res.Reason = Dropped, f.Error()
		// A closed issue keeps nothing of ours; a vanished one cannot.
		_ = q.gh.RemoveLabel(fin, is.Number, q.cfg.Labels.Claim)
	case f != nil:
		res.Kind, res.Reason = Blocked, f.Error()
		q.logIssue(is.Number, "blocked: %s", f.Error())
		w.pushKept(fin)
		if err := w.block(fin, f); err != nil {
			q.logIssue(is.Number, "could not record the block on GitHub: %v", err)
		}
	default:
		res.Kind = kind
		if err := w.finish(fin, kind); err != nil {
			q.logIssue(is.Number, "could not record the result on GitHub: %v", err)
		}
	}
	return res
}

// release gives up our claim (on interrupt): a release comment, then the
// labels back to READY_LABEL.
func (q *Queue) release(ctx context.Context, n int, round int64, why string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf("claudopilot instance %s stopped (%s) and released its claim; the issue is queued again.\n%s", q.instance, why, releaseMarker(q.instance, q.instance, round))
	if _, err := q.gh.PostComment(ctx, n, body); err != nil {
		q.logIssue(n, "could not release the claim: %v", err)
		return
	}
	if err := q.requeueLabels(ctx, n); err != nil {
		q.logIssue(n, "could not restore the labels: %v", err)
	}
	q.logIssue(n, "released the claim (%s)", why)
}

// heartbeat repeats our claim comment every ClaimStale/2 until a pull
// request is open (which keeps the claim from going stale on its own) or
// the work ends, so a long agent run is not mistaken for a crash.
func (w *worker) heartbeat(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(w.q.cfg.ClaimStale/2, time.Second))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := w.q.gh.PostComment(ctx, w.n, claimBody(w.q.instance, w.round)); err != nil && ctx.Err() == nil {
					w.q.logIssue(w.n, "claim heartbeat: %v", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// run does the work. kind is Merged, Review or Dropped; f is why it
// failed (the issue gets blocked) or, for Dropped, what vanished.
func (w *worker) run(ctx context.Context) (string, *failure) {
	q := w.q
	if err := q.fetch(ctx, q.cfg.Base); err != nil {
		return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
	}
	if note, err := sandbox.Recover(ctx, q.git, q.SandboxDir(w.n), w.branch); err != nil {
		return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
	} else if note != "" {
		q.logIssue(w.n, "warning: sandbox: %s", note)
	}
	fresh, err := w.ensureWorktree(ctx)
	if err != nil {
		return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
	}
	if fresh && q.cfg.Prepare != "" {
		log := w.logPath("prepare")
		jail, err := q.cfg.Sandbox.EnterGate(ctx, q.git, w.wt, q.LogDir(w.n))
		if err != nil {
			return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
		}
		r := proc.Run(ctx, proc.Spec{Command: q.cfg.Prepare, Dir: w.wt, Env: q.agentEnv, LogPath: log, LogCap: q.cfg.LogCap, KillGrace: q.cfg.KillGrace, Wrap: jail.Wrap()})
		if err := w.leave(ctx, jail); err != nil {
			return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error(), log: log}
		}
		if ctx.Err() != nil {
			return "", &failure{reason: "interrupted"}
		}
		if r.ExitCode != 0 {
			return "", &failure{reason: string(state.ReasonPrepare), detail: fmt.Sprintf("WORKTREE_PREPARE_CMD exited %d", r.ExitCode), log: log}
		}
	}
	docRel := filepath.ToSlash(filepath.Join(".claudopilot", fmt.Sprintf("issue-%d.md", w.n)))
	doc := fmt.Sprintf("# %s: %s\n\n%s\n", w.id, w.is.Title, strings.TrimSpace(w.is.Body))
	if err := os.MkdirAll(filepath.Join(w.wt, ".claudopilot"), 0o755); err != nil {
		return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
	}
	if err := os.WriteFile(filepath.Join(w.wt, filepath.FromSlash(docRel)), []byte(doc), 0o644); err != nil {
		return "", &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
	}

	// The agent, then local repairs.
	f := w.attempt(ctx, "worker", docRel, nil)
	for s := 1; f != nil && s <= q.cfg.MaxSupervisorAttempts && ctx.Err() == nil; s++ {
		mode := "standard"
		if s == q.cfg.MaxSupervisorAttempts {
			mode = "best-effort"
		}
		q.logIssue(w.n, "%s; repair supervisor %d/%d", f.Error(), s, q.cfg.MaxSupervisorAttempts)
		f = w.attempt(ctx, "supervisor", docRel, &supervisorJob{mode: mode, f: f})
	}
	if ctx.Err() != nil {
		return "", &failure{reason: "interrupted"}
	}
	if f != nil {
		return "", f
	}
	return w.land(ctx, docRel)
}

// supervisorJob is what a supervisor attempt repairs.
type supervisorJob struct {
	mode     string
	f        *failure
	sinceSHA string // checks: the supervisor must add commits beyond this
}

// attempt runs one agent (worker, or supervisor when sj is set), commits
// what it left, and checks the result: exit 0, at least one commit (beyond
// the base; for a checks repair, beyond the red commit), the gate green.
func (w *worker) attempt(ctx context.Context, role, docRel string, sj *supervisorJob) *failure {
	q := w.q
	cmd := q.cfg.Agent
	if role == "supervisor" {
		cmd = q.cfg.Supervisor
	}
	lane, lc, laned := q.cfg.laneOf(w.is)
	switch {
	case laned && role == "supervisor":
		cmd = lc.Supervisor
	case laned:
		cmd = lc.Agent
	case lane != "":
		q.logIssue(w.n, "label %s%s names no lane in LANES: the default agent runs", LaneLabel, lane)
	}
	var res proc.Result
	var log string
	for waits := 0; ; waits++ {
		attempt := proc.NextLog(q.LogDir(w.n), role)
		log = filepath.Join(q.LogDir(w.n), fmt.Sprintf("%s-%d.log", role, attempt))
		promptFile := filepath.Join(q.LogDir(w.n), fmt.Sprintf("%s-%d.prompt.md", role, attempt))
		d := PromptData{
			ID: w.id, Number: w.n, Title: w.is.Title, URL: w.is.URL, Role: role, Attempt: attempt, Doc: docRel,
			Worktree: w.wt, Branch: w.branch, Base: q.cfg.Base, Gate: q.cfg.Gate,
		}
		if d.Gate == "" {
			d.Gate = "true"
		}
		env := append(append([]string(nil), q.agentEnv...),
			"CLAUDOPILOT_ROLE="+role,
			"CLAUDOPILOT_PHASE="+w.id,
			"CLAUDOPILOT_PHASE_DOC="+docRel,
			"CLAUDOPILOT_ATTEMPT="+strconv.Itoa(attempt),
			"CLAUDOPILOT_BRANCH="+w.branch,
			"CLAUDOPILOT_BASE="+q.cfg.Base,
			"CLAUDOPILOT_GATE="+d.Gate,
			"CLAUDOPILOT_PROMPT_FILE="+promptFile,
		)
		if laned {
			env = append(env, "CLAUDOPILOT_LANE="+lane)
		}
		if role == "worker" && len(w.findings) > 0 {
			ff := filepath.Join(q.LogDir(w.n), fmt.Sprintf("worker-%d.findings.md", attempt))
			if err := writeFindings(ff, w.id, w.findings); err != nil {
				return &failure{reason: string(state.ReasonExit), detail: err.Error()}
			}
			d.Findings = ff
			env = append(env, "CLAUDOPILOT_REVIEW_FINDINGS="+ff)
		}
		if sj != nil {
			d.Mode, d.Failure, d.Detail, d.Checks = sj.mode, sj.f.reason, sj.f.detail, sj.f.checks
			env = append(env, "CLAUDOPILOT_SUPERVISOR_MODE="+sj.mode, "CLAUDOPILOT_FAILURE="+sj.f.reason)
			if sj.f.detail != "" {
				env = append(env, "CLAUDOPILOT_FAILURE_DETAIL="+sj.f.detail)
			}
			if sj.f.log != "" {
				fl := filepath.Join(q.LogDir(w.n), fmt.Sprintf("supervisor-%d.failure.log", attempt))
				if err := w.writeTail(sj.f.log, fl); err == nil {
					d.FailureLog = fl
					env = append(env, "CLAUDOPILOT_FAILURE_LOG="+fl)
				}
			}
		}
		prompt, err := q.renderPrompt(role, d)
		if err != nil {
			return &failure{reason: string(state.ReasonExit), detail: err.Error()}
		}
		q.logIssue(w.n, "%s %d started", role, attempt)
		jail, err := q.cfg.Sandbox.Enter(ctx, q.git, w.wt, w.branch, q.SandboxDir(w.n), q.LogDir(w.n))
		if err != nil {
			return &failure{reason: string(state.ReasonWorktree), detail: err.Error()}
		}
		var snap *sandbox.Snapshot
		if q.cfg.Sandbox == nil && q.cfg.Stray != nil {
			snap = q.cfg.Stray.Begin(ctx, q.git, q.git.Dir, w.wt)
		}
		res = proc.Run(ctx, proc.Spec{
			Command: cmd, Dir: w.wt, Env: env, Prompt: prompt, PromptFile: promptFile, LogPath: log,
			LogCap: q.cfg.LogCap, StuckTimeout: q.cfg.StuckTimeout, Timeout: q.cfg.AgentTimeout, KillGrace: q.cfg.KillGrace,
			Wrap: jail.Wrap(), Slots: q.cfg.Slots,
		})
		// The branch tip comes back from the sandbox before anything reads it.
		if err := w.leave(ctx, jail); err != nil {
			return &failure{reason: string(state.ReasonWorktree), detail: err.Error(), log: log}
		}
		if snap != nil {
			for _, p := range q.cfg.Stray.End(context.WithoutCancel(ctx), q.git, q.git.Dir, snap) {
				q.logIssue(w.n, "warning: %s", sandbox.StrayWarning(p))
			}
		}
		if ctx.Err() != nil {
			_, _ = q.git.CommitAll(context.WithoutCancel(ctx), w.wt, fmt.Sprintf("claudopilot: commit work left uncommitted by %s %d of %s", role, attempt, w.id))
			return &failure{reason: "interrupted"}
		}
		// A rate-limited agent costs no attempt: wait for the hinted time.
		if res.Reason == "" && res.ExitCode != 0 && waits < 3 && proc.Classify(res.Tail) == proc.RateLimit {
			wait := proc.CooldownHint(res.Tail, time.Now(), q.cfg.RateLimitSleep)
			q.logIssue(w.n, "%s %d was rate limited; waiting %s", role, attempt, wait.Round(time.Second))
			if err := (RealClock{}).Sleep(ctx, wait); err != nil {
				return &failure{reason: "interrupted"}
			}
			continue
		}
		break
	}
	if _, err := q.git.CommitAll(ctx, w.wt, fmt.Sprintf("claudopilot: commit work left uncommitted by the %s of %s", role, w.id)); err != nil {
		return &failure{reason: string(state.ReasonWorktree), detail: err.Error(), log: log}
	}
	switch res.Reason {
	case proc.ReasonStuck:
		return &failure{reason: string(state.ReasonStuck), detail: "no output for " + q.cfg.StuckTimeout.String(), log: log}
	case proc.ReasonTimeout:
		return &failure{reason: string(state.ReasonTimeout), detail: "ran longer than " + q.cfg.AgentTimeout.String(), log: log}
	case proc.ReasonStart:
		return &failure{reason: string(state.ReasonExit), detail: fmt.Sprintf("could not start the %s: %v", role, res.Err), log: log}
	}
	if res.ExitCode != 0 {
		return &failure{reason: string(state.ReasonExit), detail: fmt.Sprintf("the %s exited %d", role, res.ExitCode), log: log}
	}
	from := "refs/remotes/" + q.cfg.Remote + "/" + q.cfg.Base
	if sj != nil && sj.sinceSHA != "" {
		from = sj.sinceSHA
	}
	n, err := q.git.CountCommits(ctx, from, "refs/heads/"+w.branch)
	if err != nil {
		return &failure{reason: string(state.ReasonWorktree), detail: err.Error(), log: log}
	}
	if n == 0 {
		return &failure{reason: string(state.ReasonNoDone), detail: fmt.Sprintf("the %s exited 0 without a commit", role), log: log}
	}
	ok, glog, err := work.RunGateIn(ctx, q.cfg.Sandbox, q.git, state.Layout{Top: q.git.Dir}, w.id, q.cfg.Gate, w.wt, q.agentEnv, q.cfg.LogCap, q.cfg.KillGrace)
	if ctx.Err() != nil {
		return &failure{reason: "interrupted"}
	}
	if err != nil {
		return &failure{reason: string(state.ReasonGate), detail: err.Error(), log: glog}
	}
	if !ok {
		gate := q.cfg.Gate
		if gate == "" {
			gate = "true"
		}
		return &failure{reason: string(state.ReasonGate), detail: "the gate is red: " + gate, log: glog}
	}
	return nil
}

// leave ends a sandboxed process's jail (nothing for a nil one) and logs
// what the sandbox undid or discarded.
func (w *worker) leave(ctx context.Context, jail *sandbox.Jail) error {
	notes, err := jail.Leave(context.WithoutCancel(ctx), w.q.git)
	for _, n := range notes {
		w.q.logIssue(w.n, "warning: sandbox: %s", n)
	}
	return err
}

// renderPrompt renders issue-<role>.md: an override from PromptDirs, or
// the built-in one; issue-<role>.project.md there is appended.
func (q *Queue) renderPrompt(role string, d PromptData) ([]byte, error) {
	return prompts.Set{Dirs: q.cfg.PromptDirs}.Render("issue-"+role, d)
}

// writeTail writes the scrubbed last 200 lines of log to dst.
func (w *worker) writeTail(log, dst string) error {
	lines, err := proc.TailFile(log, 200)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	body := strings.Join(w.q.scrub.ScrubLines(lines), "\n")
	if len(lines) > 0 {
		body += "\n"
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, []byte(body), 0o644)
}

// checksLog writes the failing checks, for the supervisor, and returns
// its path.
func (w *worker) checksLog(checks []Check) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%s: %s: %s\n", c.Name, c.State, c.Detail)
	}
	p := w.logPath("checks")
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		return ""
	}
	return p
}

// logPath is the next <kind>-<n>.log of the issue.
func (w *worker) logPath(kind string) string {
	return filepath.Join(w.q.LogDir(w.n), fmt.Sprintf("%s-%d.log", kind, proc.NextLog(w.q.LogDir(w.n), kind)))
}

// fetch updates refs/remotes/<remote>/<branch>. Fetches run one at a time
// (git locks refs) and never beside a worktree add, which the repository's
// shared worktree lock sees to (worktree.Client.Fetch).
func (q *Queue) fetch(ctx context.Context, branch string) error {
	err := q.net.Fetch(ctx, q.cfg.Remote, fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", branch, q.cfg.Remote, branch))
	if err != nil {
		return fmt.Errorf("fetch %s from %s: %w", branch, q.cfg.Remote, err)
	}
	return nil
}

// remoteHas reports whether the remote has branch.
func (q *Queue) remoteHas(ctx context.Context, branch string) (bool, error) {
	has, err := q.net.RemoteHasBranch(ctx, q.cfg.Remote, branch)
	if err != nil {
		return false, fmt.Errorf("ls-remote %s: %w", q.cfg.Remote, err)
	}
	return has, nil
}

// ensureWorktree makes or finds the issue's worktree on its branch: a
// kept worktree or branch (an earlier attempt), else the remote's branch
// (another machine's attempt), else a new branch from <remote>/<base>. A
// branch that existed gets <remote>/<base> merged in (a conflicting merge
// is abandoned: the pull request will show the conflict). fresh is true
// when the worktree was made now.
// moveOldWorktree moves the issue's worktree from where versions before
// the one layout put it (.claudopilot/worktrees/issue-N), when it is there
// on the issue's branch: a phase's worktree (on auto/…) is never touched.
func (q *Queue) moveOldWorktree(ctx context.Context, w *worker) error {
	old := q.oldWorktreePath(w.n)
	if old == w.wt {
		return nil
	}
	if _, err := os.Stat(filepath.Join(w.wt, ".git")); err == nil {
		return nil
	}
	at, ok, err := q.git.WorktreeOf(ctx, w.branch)
	if err != nil || !ok {
		return err
	}
	if ra, _ := filepath.EvalSymlinks(at); ra != "" {
		at = ra
	}
	if ro, _ := filepath.EvalSymlinks(old); ro != "" {
		old = ro
	}
	if at != old {
		return nil
	}
	return q.git.MoveWorktree(ctx, old, w.wt)
}

func (w *worker) ensureWorktree(ctx context.Context) (fresh bool, err error) {
	q := w.q
	remoteBase := "refs/remotes/" + q.cfg.Remote + "/" + q.cfg.Base
	remoteBranch := "refs/remotes/" + q.cfg.Remote + "/" + w.branch
	onRemote, err := q.remoteHas(ctx, w.branch)
	if err != nil {
		return false, err
	}
	if onRemote {
		if err := q.fetch(ctx, w.branch); err != nil {
			return false, err
		}
	}
	local, err := q.git.BranchExists(ctx, w.branch)
	if err != nil {
		return false, err
	}
	if err := q.moveOldWorktree(ctx, w); err != nil {
		return false, err
	}
	_, statErr := os.Stat(filepath.Join(w.wt, ".git"))
	switch {
	case statErr == nil:
	case local:
		fresh = true
		if err := q.git.AddWorktree(ctx, w.wt, w.branch, ""); err != nil {
			return false, err
		}
	case onRemote:
		fresh = true
		if err := q.git.AddWorktree(ctx, w.wt, w.branch, remoteBranch); err != nil {
			return false, err
		}
	default:
		base, err := q.git.RevParse(ctx, remoteBase)
		if err != nil {
			return false, err
		}
		return true, q.git.AddWorktree(ctx, w.wt, w.branch, base)
	}
	head, err := q.git.HeadRef(ctx, w.wt)
	if err != nil || head != "refs/heads/"+w.branch {
		return false, fmt.Errorf("the worktree %s is not on %s", w.wt, w.branch)
	}
	if _, err := q.git.CommitAll(ctx, w.wt, "claudopilot: commit work left uncommitted in "+w.wt); err != nil {
		return false, err
	}
	if onRemote {
		// Another machine may have gone further on the branch.
		_ = q.git.FastForward(ctx, w.wt, remoteBranch)
	}
	if err := q.git.MergeInto(ctx, w.wt, remoteBase); err != nil {
		_ = q.git.MergeAbort(ctx, w.wt)
		q.logIssue(w.n, "merging %s into %s conflicts; going on without it", q.cfg.Base, w.branch)
	}
	return fresh, nil
}

// push pushes the branch to the remote (a fast-forward; never forced).
func (w *worker) push(ctx context.Context) *failure {
	q := w.q
	err := q.net.PushBranch(ctx, q.cfg.Remote, w.branch)
	if err != nil {
		if ctx.Err() != nil {
			return &failure{reason: "interrupted"}
		}
		return &failure{reason: "push", detail: err.Error()}
	}
	return nil
}

// pushKept pushes a failed attempt's branch, if it has work beyond the
// base, so it is kept where people and other instances can see it.
func (w *worker) pushKept(ctx context.Context) {
	q := w.q
	if ok, err := q.git.BranchExists(ctx, w.branch); err != nil || !ok {
		return
	}
	n, err := q.git.CountCommits(ctx, "refs/remotes/"+q.cfg.Remote+"/"+q.cfg.Base, "refs/heads/"+w.branch)
	if err != nil || n == 0 {
		return
	}
	if f := w.push(ctx); f != nil {
		q.logIssue(w.n, "could not push the kept branch: %v", f)
		return
	}
	w.pushed = true
}

// follow brings the local branch to the remote's head sha after someone
// else pushed to the pull request.
func (w *worker) follow(ctx context.Context, sha string) error {
	q := w.q
	if err := q.fetch(ctx, w.branch); err != nil {
		return err
	}
	if err := q.git.FastForward(ctx, w.wt, sha); err != nil {
		return fmt.Errorf("the pull request's branch moved to %s, which is not a fast-forward of ours: %w", short(sha), err)
	}
	return nil
}

// block records a failure on GitHub: ONE comment with the reason and the
// scrubbed tail of the log (ending our round), BLOCKED_LABEL on,
// CLAIM_LABEL off. The branch and the pull request stay.
func (w *worker) block(ctx context.Context, f *failure) error {
	q := w.q
	var b strings.Builder
	fmt.Fprintf(&b, "claudopilot could not finish this issue: **%s**", f.reason)
	if f.detail != "" {
		fmt.Fprintf(&b, " (%s)", f.detail)
	}
	b.WriteString(".\n")
	if f.log != "" {
		if lines, err := proc.TailFile(f.log, 40); err == nil && len(lines) > 0 {
			tail := strings.Join(q.scrub.ScrubLines(lines), "\n")
			fence := "```"
			for strings.Contains(tail, fence) {
				fence += "`"
			}
			fmt.Fprintf(&b, "\n<details><summary>The last lines of %s</summary>\n\n%s\n%s\n%s\n\n</details>\n", filepath.Base(f.log), fence, tail, fence)
		}
	}
	var keep string
	switch {
	case w.pr != nil:
		keep = fmt.Sprintf("The branch `%s` and pull request #%d are kept", w.branch, w.pr.Number)
	case w.pushed:
		keep = fmt.Sprintf("The branch `%s` is pushed and kept", w.branch)
	default:
		keep = "Nothing was committed"
	}
	fmt.Fprintf(&b, "\n%s. To try again, remove `%s` and add `%s`.\n%s", keep, q.cfg.Labels.Blocked, q.cfg.Labels.Ready, endMarker(q.instance, w.round))
	if _, err := q.gh.PostComment(ctx, w.n, b.String()); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := q.gh.AddLabels(ctx, w.n, q.cfg.Labels.Blocked); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := q.gh.RemoveLabel(ctx, w.n, q.cfg.Labels.Claim); err != nil {
		return err
	}
	return q.gh.RemoveLabel(ctx, w.n, q.cfg.Labels.Ready)
}

// finish records a merged or review-ready pull request: a comment ending
// our round, the labels, the issue closed after a merge (GitHub closes it
// itself only for the default branch), and the local worktree removed.
func (w *worker) finish(ctx context.Context, kind string) error {
	q := w.q
	var msg string
	switch kind {
	case Merged:
		msg = "Merged."
		if w.pr != nil {
			msg = fmt.Sprintf("Merged in pull request #%d.", w.pr.Number)
		}
	case Review:
		msg = fmt.Sprintf("Pull request #%d is ready for review: its checks are green. Merge it to close this issue.", w.pr.Number)
		for _, n := range []int{w.n, w.pr.Number} {
			if err := q.gh.AddLabels(ctx, n, q.cfg.Labels.Review); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		q.logIssue(w.n, "pull request #%d is ready for review", w.pr.Number)
	}
	if _, err := q.gh.PostComment(ctx, w.n, msg+"\n"+endMarker(q.instance, w.round)); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err := q.gh.RemoveLabel(ctx, w.n, q.cfg.Labels.Claim); err != nil {
		return err
	}
	if kind == Merged {
		if is, err := q.gh.Issue(ctx, w.n); err == nil && is.State == "open" {
			if err := q.gh.CloseIssue(ctx, w.n); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	if err := q.git.RemoveWorktree(ctx, w.wt); err != nil {
		return err
	}
	if ok, _ := q.git.BranchExists(ctx, w.branch); ok {
		return q.git.DeleteBranch(ctx, w.branch)
	}
	return nil
}
