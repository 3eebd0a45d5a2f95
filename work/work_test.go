package work_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// The tests below drive Runner.Run against real repositories with fake
// agents: small shell scripts written into t.TempDir().

const manifestSrc = `# Execution Manifest

**Status:** in-progress

1. [pending] **p1** — first phase (deps: none)
2. [pending] **p2** — second phase (deps: p1)
`

const (
	manifestRel = "roadmap/EXECUTION-MANIFEST.md"
	docRel      = "roadmap/p1-first.md"
	doneRel     = "roadmap/DONE_p1-first.md"
)

// testEnv is the process environment without any GIT_* or CLAUDOPILOT_*
// variable, plus an isolated git config and a fixed identity.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "CLAUDOPILOT_") {
			env = append(env, kv)
		}
	}
	env = append(env, gittest.NoAutoMaintenance()...)
	return append(env,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.com",
	)
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	git    *worktree.Client
	top    string
	layout state.Layout
	runner *work.Runner
	tmp    string // a scratch folder outside the repository
}

// newFixture makes a repository with main checked out and the roadmap
// committed, and a Runner whose agent is `true` until a test sets one.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, "repo", nil)
}

// newFixtureWith is newFixture whose repository, once made, is changed
// by add (nil: not); key names add: the repository is made once per
// test binary (a template) and copied for each test.
func newFixtureWith(t *testing.T, key string, add func(ctx context.Context, dir string, env []string) error) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	env := testEnv()
	templates.Copy(t, key, dir, func(dir string) error {
		if err := makeRepo(ctx, dir, env); err != nil || add == nil {
			return err
		}
		return add(ctx, dir, env)
	})
	// The test made the copy: its top level and .git are known, and
	// Open's rev-parse was one git a test (worktree.Known).
	top, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	g := worktree.Known(top, filepath.Join(top, ".git"), env)
	// The long-lived cat-file lives as long as the test (as a run keeps
	// it, engine.Run): an agent or a kill grace longer than its idle time
	// started another, ~20 a package run. It ends before the test's folder
	// goes (cleanups run last-registered first).
	g.KeepResolvers(true)
	t.Cleanup(g.Close)
	f := &fixture{t: t, ctx: ctx, git: g, top: g.Dir, tmp: t.TempDir()}
	f.layout = state.Layout{Top: g.Dir, RoadmapRel: "roadmap", Base: "main"}
	f.runner = &work.Runner{
		Git: g, Layout: f.layout, Agent: "true", Super: "true",
		// A contract variable of an outer driver must not leak through.
		Env:       append(env, "CLAUDOPILOT_ROLE=leaked", "CLAUDOPILOT_OUTER=leaked"),
		KillGrace: 2 * time.Second, DefaultCooldown: time.Hour,
	}
	return f
}

// templates holds newFixture's repository, made once per test binary
// (TestMain) and copied for each test.
var templates *gittest.Templates

func TestMain(m *testing.M) {
	gittest.RunWithTemplates(m, "work-templates-", func(t *gittest.Templates) { templates = t })
}

// makeRepo makes newFixture's repository in dir: main checked out, the
// roadmap committed, .claudopilot/ excluded.
func makeRepo(ctx context.Context, dir string, env []string) error {
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %w\n%s", err, out)
	}
	g, err := worktree.Open(ctx, dir, env)
	if err != nil {
		return err
	}
	for p, c := range map[string]string{"README.md": "readme\n", manifestRel: manifestSrc, docRel: "# p1\n\nDo the first thing.\n", "roadmap/p2-second.md": "# p2\n"} {
		p = filepath.Join(g.Dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return err
		}
	}
	if _, err := g.Git(ctx, "add", "-A"); err != nil {
		return err
	}
	if _, err := g.Git(ctx, "commit", "-q", "-m", "initial"); err != nil {
		return err
	}
	return g.Exclude(ctx, "/.claudopilot/")
}

func (f *fixture) gitIn(dir string, args ...string) string {
	f.t.Helper()
	out, err := f.git.GitIn(f.ctx, dir, args...)
	if err != nil {
		f.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// rev resolves spec to a commit through the fixture's long-lived
// cat-file (the runner's resolver): a `git rev-parse --verify` was one
// process a call, some 40 a package run.
func (f *fixture) rev(spec string) string {
	f.t.Helper()
	c, err := f.git.RevParse(f.ctx, spec)
	if err != nil {
		f.t.Fatalf("rev-parse %s: %v", spec, err)
	}
	return c
}

func (f *fixture) write(dir, rel, content string) {
	f.t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(p string) string {
	f.t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func (f *fixture) hasFile(rev, rel string) bool {
	f.t.Helper()
	_, ok, err := f.git.ReadFile(f.ctx, rev, rel)
	if err != nil {
		f.t.Fatal(err)
	}
	return ok
}

// commitOn commits files in worktree dir and returns HEAD. The hash is
// read from commit's own summary line ("[branch hash] msg", unabbreviated
// by core.abbrev=no): a rev-parse was one git more per commit.
func (f *fixture) commitOn(dir, msg string, files map[string]string) string {
	f.t.Helper()
	for p, c := range files {
		f.write(dir, p, c)
	}
	f.gitIn(dir, "add", "-A")
	out := f.gitIn(dir, "-c", "core.abbrev=no", "commit", "-m", msg)
	head, _, _ := strings.Cut(out, "]")
	fs := strings.Fields(head)
	if len(fs) == 0 || len(fs[len(fs)-1]) < 40 {
		f.t.Fatalf("git commit in %s: no hash in %q", dir, out)
	}
	return fs[len(fs)-1]
}

// moveMain commits files on main as someone else moves the base (a
// human's commit, another phase landing) and returns the commit: one
// Import, no process, where a commit in the base checkout was two (add,
// commit). The base checkout does not follow (as after an update-ref):
// nothing of the runner's reads it, its merges take refs/heads/main.
func (f *fixture) moveMain(msg string, files map[string]string) string {
	f.t.Helper()
	return gittest.Import(f.t, f.runner.Env, f.top, gittest.Commit{Ref: "main", From: "main^0", Message: msg, Files: files})[0]
}

// agent writes a fake agent script and returns the command that runs it:
// read by the shell the runner starts (`. 'path'`), where `sh 'path'`
// was a second shell per agent start. Its exit is the command's; a
// script that reads arguments ($1) takes argAgent.
func (f *fixture) agent(body string) string {
	f.t.Helper()
	return ". '" + f.agentFile(body) + "'"
}

// argAgent is agent for a script that reads its arguments (a resume
// command's {session}): a shell of its own, which `.` does not give.
func (f *fixture) argAgent(body string) string {
	f.t.Helper()
	return "sh '" + f.agentFile(body) + "'"
}

func (f *fixture) agentFile(body string) string {
	f.t.Helper()
	dir, err := os.MkdirTemp(f.tmp, "agent")
	if err != nil {
		f.t.Fatal(err)
	}
	p := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// doneBody finishes the phase the way the contract asks. The doc's folder
// and name by the shell's own expansion (the doc is always in the roadmap
// folder): dirname and basename were two processes an attempt. The
// rename is a plain mv, which the add -A that follows stages as git mv
// would have (a git process an attempt more).
const doneBody = `
d=${CLAUDOPILOT_PHASE_DOC%/*}; b=${CLAUDOPILOT_PHASE_DOC##*/}
mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b" || exit 20
git add -A && git commit -q -m "$CLAUDOPILOT_PHASE: done" || exit 21
`

func job() scheduler.Job {
	return scheduler.Job{ID: "p1", Title: "first phase", Doc: "p1-first.md", Role: state.Worker, Attempt: 1, Gate: "true"}
}

func (f *fixture) run(j scheduler.Job) scheduler.Outcome {
	f.t.Helper()
	return f.runner.Run(f.ctx, j, nil)
}

func (f *fixture) wt() string { return f.layout.Worktree("p1") }

// parkBranch makes auto/p1 with the given commit on it and no worktree, as a
// parked phase leaves it after `claudopilot clean` or a lost worktree. The
// commit is imported (one Import, no process; a worktree add -b, add,
// commit, rev-parse and worktree remove were eight), the kept worktree
// added on it.
func (f *fixture) parkBranch(files map[string]string, keepWorktree bool) string {
	f.t.Helper()
	tip := gittest.Import(f.t, f.runner.Env, f.top, gittest.Commit{Ref: "auto/p1", From: "main^0", Message: "earlier work", Files: files})[0]
	if keepWorktree {
		f.gitIn(f.top, "worktree", "add", "-q", f.wt(), "auto/p1")
	}
	return tip
}

func TestRunFreshWorktreeAndContract(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	base := f.rev("main")
	out := filepath.Join(f.tmp, "seen")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	prepCount := filepath.Join(f.tmp, "prepare-runs")
	f.runner.Prepare = "echo run >> '" + prepCount + "'"
	f.runner.Agent = f.agent(`
env | grep '^CLAUDOPILOT_' | sort > '` + out + `/env'
cat > '` + out + `/stdin'
cp "$CLAUDOPILOT_PROMPT_FILE" '` + out + `/promptfile'
pwd -P > '` + out + `/pwd'
echo work > feature.txt
` + doneBody)
	j := job()
	j.Gate = "test -f feature.txt"

	o := f.run(j)
	if !o.OK || o.Reason != "" {
		t.Fatalf("outcome = %+v, want OK", o)
	}
	wt := f.wt()
	if o.Tip != f.rev("auto/p1") {
		t.Errorf("Tip = %s, branch at %s", o.Tip, f.rev("auto/p1"))
	}
	if got := f.gitIn(wt, "symbolic-ref", "HEAD"); got != "refs/heads/auto/p1" {
		t.Errorf("worktree HEAD = %s", got)
	}
	if got := f.rev("auto/p1~1"); got != base {
		t.Errorf("the branch was not cut from the base tip: parent %s, base %s", got, base)
	}
	if !f.hasFile(o.Tip, doneRel) || f.hasFile(o.Tip, docRel) || !f.hasFile(o.Tip, "feature.txt") {
		t.Errorf("tip lacks the work or the rename")
	}
	if o.LogPath != f.layout.LogPath("p1", "worker", 1) || !exists(o.LogPath) {
		t.Errorf("LogPath = %q", o.LogPath)
	}
	if o.ID != "p1" || o.Role != state.Worker || o.Attempt != 1 || o.Started.IsZero() || o.Ended.Before(o.Started) {
		t.Errorf("outcome bookkeeping = %+v", o)
	}

	// The contract.
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(f.read(filepath.Join(out, "env"))), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	promptFile := filepath.Join(f.layout.LogDir("p1"), "worker-1.prompt.md")
	for k, want := range map[string]string{
		"CLAUDOPILOT_ROLE":        "worker",
		"CLAUDOPILOT_PHASE":       "p1",
		"CLAUDOPILOT_PHASE_DOC":   docRel,
		"CLAUDOPILOT_ATTEMPT":     "1",
		"CLAUDOPILOT_BRANCH":      "auto/p1",
		"CLAUDOPILOT_BASE":        "main",
		"CLAUDOPILOT_GATE":        "test -f feature.txt",
		"CLAUDOPILOT_PROMPT_FILE": promptFile,
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["CLAUDOPILOT_OUTER"]; ok {
		t.Errorf("an outer driver's CLAUDOPILOT_ variable leaked into the agent")
	}
	if _, ok := env["CLAUDOPILOT_FAILURE"]; ok {
		t.Errorf("a worker got CLAUDOPILOT_FAILURE")
	}
	stdin, pf := f.read(filepath.Join(out, "stdin")), f.read(filepath.Join(out, "promptfile"))
	if stdin == "" || stdin != pf {
		t.Errorf("stdin (%d bytes) differs from the prompt file (%d bytes)", len(stdin), len(pf))
	}
	if !strings.Contains(stdin, "p1") || !strings.Contains(stdin, docRel) || !strings.Contains(stdin, doneRel) {
		t.Errorf("prompt does not name the phase and its docs:\n%s", stdin)
	}
	wantDir, _ := filepath.EvalSymlinks(wt)
	if got := strings.TrimSpace(f.read(filepath.Join(out, "pwd"))); got != wantDir {
		t.Errorf("agent ran in %q, want the worktree %q", got, wantDir)
	}

	// WORKTREE_PREPARE_CMD ran once, in the new worktree, and not again
	// on a later attempt in the same worktree.
	if got := f.read(prepCount); got != "run\n" {
		t.Errorf("prepare runs after attempt 1: %q", got)
	}
	if !exists(f.layout.LogPath("p1", "prepare", 1)) {
		t.Errorf("no prepare-1.log")
	}
	f.runner.Agent = "true"
	j.Attempt = 2
	if o := f.run(j); !o.OK {
		t.Errorf("attempt 2 = %+v", o)
	}
	if got := f.read(prepCount); got != "run\n" {
		t.Errorf("prepare ran again on attempt 2: %q", got)
	}
}

func TestRunPrepareFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	marker := filepath.Join(f.tmp, "agent-ran")
	f.runner.Prepare = "echo installing; echo boom >&2; exit 3"
	f.runner.Agent = "touch '" + marker + "'"
	o := f.run(job())
	if o.OK || o.Reason != state.ReasonPrepare || !strings.Contains(o.Detail, "3") {
		t.Fatalf("outcome = %+v, want Reason prepare", o)
	}
	if o.LogPath != f.layout.LogPath("p1", "prepare", 1) {
		t.Errorf("LogPath = %q, want the prepare log", o.LogPath)
	}
	if log := f.read(o.LogPath); !strings.Contains(log, "boom") || !strings.Contains(log, "reason=prepare") {
		t.Errorf("prepare log:\n%s", log)
	}
	if exists(marker) {
		t.Errorf("the agent ran after a failed prepare")
	}
}

// The proofs TestRunOutcomes' cases under CLAUDOPILOT_SOAK=1 name.
const (
	unfinishedProof = "TestUnfinished (the outcome from this output and exit code) and the \"rate limit\", \"leftovers committed on failure\" (exit 1) and \"exit 0 without the rename\" cases of this test (a whole attempt's output and exit reach it)"
	checkHeadProof  = "TestCheckHead (a detached HEAD and a deleted worktree fail the check after the agent) and the \"HEAD switched away\" case of this test (a whole attempt's end runs it)"
)

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	leftover := "claudopilot: commit work left uncommitted by worker attempt 1 of p1"
	for _, tc := range []struct {
		name   string
		agent  string // script body
		gate   string
		check  func(t *testing.T, f *fixture, o scheduler.Outcome)
		reason state.Reason
		soak   string // whole attempt under CLAUDOPILOT_SOAK=1 only: the tests that prove it
	}{
		{
			name:  "done and green",
			soak:  "TestRunGateLogsNumbered (a gate's log, gate-N.log), TestRunFreshWorktreeAndContract and TestRunGitCalls (a done attempt is OK at the branch's tip) and the \"gate red\" case of this test (the gate after a done agent)",
			agent: "echo work > feature.txt\n" + doneBody,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !o.OK || o.Tip != f.rev("auto/p1") {
					t.Errorf("outcome = %+v", o)
				}
				if !exists(f.layout.LogPath("p1", "gate", 1)) {
					t.Errorf("no gate-1.log")
				}
			},
		},
		{
			name:   "gate red",
			agent:  "echo work > feature.txt\n" + doneBody,
			gate:   "echo the gate says no; exit 1",
			reason: state.ReasonGate,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if o.LogPath != f.layout.LogPath("p1", "gate", 1) {
					t.Errorf("LogPath = %q, want gate-1.log", o.LogPath)
				}
				if log := f.read(o.LogPath); !strings.Contains(log, "the gate says no") {
					t.Errorf("gate log:\n%s", log)
				}
				if o.Tip != "" {
					t.Errorf("Tip = %q on a red gate", o.Tip)
				}
			},
		},
		{
			name:   "exit 1",
			soak:   unfinishedProof,
			agent:  "echo giving up; exit 1",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if o.ExitCode != 1 || !strings.Contains(o.Detail, "exited 1") {
					t.Errorf("outcome = %+v", o)
				}
				if o.Cooldown != 0 || o.Transient {
					t.Errorf("a plain failure classified as rate limit or transient: %+v", o)
				}
			},
		},
		{
			name:   "exit 0 without the rename",
			agent:  "echo work > feature.txt && git add -A && git commit -q -m work",
			reason: state.ReasonNoDone,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !strings.Contains(o.Detail, doneRel) {
					t.Errorf("Detail = %q", o.Detail)
				}
				if log := f.read(o.LogPath); !strings.Contains(log, "reason=no-done") {
					t.Errorf("log lacks the reason line:\n%s", log)
				}
			},
		},
		{
			name:   "exit 0 having done nothing",
			soak:   unfinishedProof,
			agent:  "exit 0",
			reason: state.ReasonNoDone,
		},
		{
			name:   "leftovers committed on failure",
			agent:  "echo half > half.txt\necho 'cannot finish'\nexit 1",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if got := f.gitIn(f.top, "log", "-1", "--format=%s", "auto/p1"); got != leftover {
					t.Errorf("tip subject = %q, want %q", got, leftover)
				}
				if !f.hasFile("auto/p1", "half.txt") {
					t.Errorf("the leftover file was not committed")
				}
				if st := f.gitIn(f.wt(), "status", "--porcelain"); st != "" {
					t.Errorf("worktree not clean:\n%s", st)
				}
				log := f.read(o.LogPath)
				if !strings.Contains(log, "cannot finish") || !strings.Contains(log, ": worker attempt 1 of p1 failed: reason=exit: worker exited 1") {
					t.Errorf("log:\n%s", log)
				}
			},
		},
		{
			// The rename left uncommitted too: the leftover commit
			// takes it with the rest, then the phase is done.
			name:  "leftovers committed when done",
			agent: `git mv "$CLAUDOPILOT_PHASE_DOC" roadmap/DONE_p1-first.md` + "\necho late > late.txt\n",
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !o.OK || !f.hasFile(o.Tip, "late.txt") {
					t.Errorf("outcome = %+v; late.txt committed: %v", o, o.Tip != "" && f.hasFile(o.Tip, "late.txt"))
				}
				if got := f.gitIn(f.top, "log", "-1", "--format=%s", "auto/p1"); got != leftover {
					t.Errorf("tip subject = %q, want %q", got, leftover)
				}
			},
		},
		{
			name:  "the rename left uncommitted is committed for the agent",
			soak:  "the \"leftovers committed when done\" case of this test (its agent leaves the rename uncommitted too)",
			agent: `git mv "$CLAUDOPILOT_PHASE_DOC" roadmap/DONE_p1-first.md`,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !o.OK {
					t.Errorf("outcome = %+v", o)
				}
			},
		},
		{
			name:   "rate limit",
			agent:  "echo 'Error: rate limit exceeded, retry in 42 seconds'\nexit 1",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if o.Cooldown != 42*time.Second {
					t.Errorf("Cooldown = %v, want 42s", o.Cooldown)
				}
			},
		},
		{
			// Codex's usage_limit_reached (earendil-works/pi#4172), in
			// an exec --json error event: a reset time, so the detail
			// names it.
			name:   "a usage limit with its reset",
			soak:   unfinishedProof,
			agent:  `echo '{"type":"error","message":"{\"type\":\"error\",\"error\":{\"type\":\"usage_limit_reached\",\"resets_in_seconds\":5400}}"}'` + "\nexit 1",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if o.Cooldown != 90*time.Minute || !strings.HasPrefix(o.Detail, "usage limit, resets ") {
					t.Errorf("Cooldown = %v, detail %q; want 1h30m and the reset", o.Cooldown, o.Detail)
				}
			},
		},
		{
			name:   "rate limit without a hint",
			soak:   unfinishedProof,
			agent:  "echo '429 Too Many Requests'\nexit 2",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if o.Cooldown != time.Hour {
					t.Errorf("Cooldown = %v, want the default 1h", o.Cooldown)
				}
			},
		},
		{
			name:   "a done agent that printed 429 is not rate limited",
			agent:  "echo 'processed: 429 files'\necho 'rate limit: none'\n" + doneBody,
			reason: "",
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !o.OK || o.Cooldown != 0 {
					t.Errorf("outcome = %+v", o)
				}
			},
		},
		{
			name:   "overloaded",
			soak:   unfinishedProof,
			agent:  "echo 'API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}'\nexit 1",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !o.Transient || o.Cooldown != 0 {
					t.Errorf("outcome = %+v, want Transient", o)
				}
			},
		},
		{
			name:   "HEAD switched away",
			agent:  "git checkout -q -b elsewhere\n" + doneBody,
			reason: state.ReasonWorktree,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !strings.Contains(o.Detail, "elsewhere") {
					t.Errorf("Detail = %q", o.Detail)
				}
			},
		},
		{
			name:   "detached HEAD",
			soak:   checkHeadProof,
			agent:  "git checkout -q --detach",
			reason: state.ReasonWorktree,
		},
		{
			name:   "worktree deleted",
			soak:   checkHeadProof,
			agent:  `d=$(pwd); cd / && rm -rf "$d"`,
			reason: state.ReasonWorktree,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if !strings.Contains(o.Detail, "gone") {
					t.Errorf("Detail = %q", o.Detail)
				}
			},
		},
		{
			name:   "agent command not found",
			soak:   "TestUnfinished (a non-zero exit is reason exit with its code) and the \"leftovers committed on failure\" case of this test (a whole attempt's non-zero exit reaches it)",
			agent:  "no-such-agent-command-xyz",
			reason: state.ReasonExit,
			check: func(t *testing.T, f *fixture, o scheduler.Outcome) {
				if o.ExitCode != 127 {
					t.Errorf("ExitCode = %d, want 127", o.ExitCode)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.soak != "" && os.Getenv("CLAUDOPILOT_SOAK") != "1" {
				t.Skip("CLAUDOPILOT_SOAK=1 only; proved by " + tc.soak)
			}
			t.Parallel()
			f := newFixture(t)
			f.runner.Agent = f.agent(tc.agent)
			j := job()
			if tc.gate != "" {
				j.Gate = tc.gate
			}
			o := f.run(j)
			if o.Reason != tc.reason || (tc.reason == "") != o.OK {
				t.Fatalf("outcome = %+v, want Reason %q", o, tc.reason)
			}
			if tc.reason != "" && o.Detail == "" {
				t.Errorf("a failure without Detail: %+v", o)
			}
			if tc.check != nil {
				tc.check(t, f, o)
			}
		})
	}
}

// The check after an agent's run that its worktree is still there and on
// its branch, on the step: a HEAD switched to another branch, a detached
// HEAD and a deleted worktree each fail it, naming what it found.
// TestRunOutcomes' "HEAD switched away" runs one through a whole attempt.
func TestCheckHead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"kept.txt": "kept\n"}, true)
	wt := f.wt()
	if err := work.CheckHead(f.runner, wt, "auto/p1"); err != nil {
		t.Fatalf("on its branch: %v", err)
	}
	for _, c := range []struct {
		name string
		do   func()
		want string
	}{
		{"HEAD switched away", func() { f.gitIn(wt, "checkout", "-q", "-b", "elsewhere") }, "elsewhere"},
		{"detached HEAD", func() { f.gitIn(wt, "checkout", "-q", "--detach") }, "a detached HEAD"},
		{"worktree deleted", func() {
			if err := os.RemoveAll(wt); err != nil {
				t.Fatal(err)
			}
		}, "gone"},
	} {
		c.do()
		if err := work.CheckHead(f.runner, wt, "auto/p1"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// A failed attempt's outcome from its exit code and output tail: a rate
// limit with or without a reset time (a cooldown), an overload (transient),
// a plain failure (neither), a clean exit without the rename (no-done).
// TestRunOutcomes runs some of these as whole attempts.
func TestUnfinished(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	r := &work.Runner{DefaultCooldown: time.Hour, Now: func() time.Time { return now }}
	for _, tc := range []struct {
		name      string
		tail      string
		exit      int
		reason    state.Reason
		detail    string // a prefix
		cooldown  time.Duration
		transient bool
	}{
		{"exit 1", "giving up", 1, state.ReasonExit, "worker exited 1", 0, false},
		{"rate limit", "Error: rate limit exceeded, retry in 42 seconds", 1, state.ReasonExit, "usage limit, resets ", 42 * time.Second, false},
		{"a usage limit with its reset", `{"type":"error","message":"{\"type\":\"error\",\"error\":{\"type\":\"usage_limit_reached\",\"resets_in_seconds\":5400}}"}`, 1, state.ReasonExit, "usage limit, resets ", 90 * time.Minute, false},
		{"rate limit without a hint", "429 Too Many Requests", 2, state.ReasonExit, "rate limited, no reset time given", time.Hour, false},
		{"overloaded", `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 1, state.ReasonExit, "worker exited 1", 0, true},
		{"exit 0 having done nothing", "", 0, state.ReasonNoDone, "the doc", 0, false},
	} {
		var o scheduler.Outcome
		res := proc.Result{ExitCode: tc.exit, Tail: strings.Split(tc.tail, "\n")}
		reason, detail := work.Unfinished(r, job(), res, "the doc was not renamed", &o)
		if reason != tc.reason || !strings.HasPrefix(detail, tc.detail) || o.Cooldown != tc.cooldown || o.Transient != tc.transient {
			t.Errorf("%s: reason %s detail %q cooldown %v transient %v; want %s %q… %v %v", tc.name, reason, detail, o.Cooldown, o.Transient, tc.reason, tc.detail, tc.cooldown, tc.transient)
		}
		if tc.cooldown == 0 && o.ExitCode != tc.exit {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, o.ExitCode, tc.exit)
		}
	}
}

// A retry of a parked branch (its worktree gone) attaches the branch and
// merges the base in before the agent starts. Without asking git whether
// the branch landed (that is a first try's question: a merge-base), and
// the merge's record reads the tip it starts from through the resolver
// (a rev-parse HEAD in the worktree before).
func TestRunRetryMergesBaseIntoKeptBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	kept := f.parkBranch(map[string]string{"kept.txt": "kept\n"}, false)
	base := f.moveMain("human", map[string]string{"base.txt": "base\n"})
	trace := filepath.Join(t.TempDir(), "trace")
	f.runner.Git = f.git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	seen := filepath.Join(f.tmp, "seen")
	f.runner.Agent = f.agent(`
test -f kept.txt && test -f base.txt && echo both > '` + seen + `'
` + doneBody)
	j := job()
	j.Retry = true
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	if !exists(seen) {
		t.Errorf("the agent did not start on the kept work with the base merged in")
	}
	for _, a := range []string{kept, base} {
		if ok, _ := f.git.IsAncestor(f.ctx, a, o.Tip); !ok {
			t.Errorf("%s is not in the tip", a)
		}
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"built-in: git merge-base", "built-in: git rev-parse"} {
		if strings.Contains(string(b), c) {
			t.Errorf("%s ran:\n%s", strings.TrimPrefix(c, "built-in: "), b)
		}
	}
}

// A supervisor (no Retry, no Resume) whose worktree vanished while its
// branch is still there fails with Reason worktree; the branch is kept.
func TestRunSupervisorWorktreeGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	kept := f.parkBranch(map[string]string{"kept.txt": "kept\n"}, false)
	f.runner.Super = f.agent(doneBody)
	j := job()
	j.Role, j.Failure = state.Supervisor, state.ReasonExit
	o := f.run(j)
	if o.Reason != state.ReasonWorktree || !strings.Contains(o.Detail, "gone") {
		t.Fatalf("outcome = %+v, want Reason worktree", o)
	}
	if f.rev("auto/p1") != kept {
		t.Errorf("the kept branch moved")
	}
}

func TestRunRetryConflictThenSupervisor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tip := f.parkBranch(map[string]string{"README.md": "readme from p1\n"}, true)
	f.moveMain("human", map[string]string{"README.md": "readme from a human\n"})
	marker := filepath.Join(f.tmp, "worker-ran")
	f.runner.Agent = "touch '" + marker + "'"
	wt := f.wt()

	j := job()
	j.Retry = true
	o := f.run(j)
	if o.Reason != state.ReasonConflict || !strings.Contains(o.Detail, "README.md") {
		t.Fatalf("outcome = %+v, want Reason conflict naming README.md", o)
	}
	if exists(marker) {
		t.Errorf("the worker ran on a conflicted merge")
	}
	// The conflict is left in place for a supervisor.
	if _, err := f.git.GitIn(f.ctx, wt, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err != nil {
		t.Errorf("no merge in progress")
	}
	if !strings.Contains(f.read(filepath.Join(wt, "README.md")), "<<<<<<<") {
		t.Errorf("no markers left in README.md")
	}

	// A supervisor that gives up without resolving: the merge is aborted,
	// never concluded with the markers.
	seen := filepath.Join(f.tmp, "supervisor-saw")
	f.runner.Super = f.agent(`
git rev-parse -q --verify MERGE_HEAD >/dev/null && echo "$CLAUDOPILOT_FAILURE $CLAUDOPILOT_FAILURE_DETAIL $CLAUDOPILOT_ROLE" > '` + seen + `'
echo 'I cannot resolve this'
exit 1`)
	sj := job()
	sj.Role, sj.Mode, sj.Failure, sj.Detail, sj.FailureLog = state.Supervisor, "standard", state.ReasonConflict, o.Detail, ""
	so := f.run(sj)
	if so.Reason != state.ReasonExit {
		t.Fatalf("supervisor outcome = %+v, want Reason exit", so)
	}
	if got := strings.TrimSpace(f.read(seen)); !strings.HasPrefix(got, "conflict ") || !strings.Contains(got, "README.md") || !strings.HasSuffix(got, " supervisor") {
		t.Errorf("the supervisor saw %q, want the conflict in progress and its env", got)
	}
	if _, err := f.git.GitIn(f.ctx, wt, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err == nil {
		t.Errorf("the unfinished merge is still in progress")
	}
	if got := f.rev("auto/p1"); got != tip {
		t.Errorf("branch moved to %s (%s), want %s", got, f.gitIn(f.top, "log", "-1", "--format=%s", "auto/p1"), tip)
	}
	if out, err := f.git.GitIn(f.ctx, "", "grep", "-n", "<<<<<<<", "auto/p1"); err == nil {
		t.Errorf("markers on the branch:\n%s", out)
	}
	if st := f.gitIn(wt, "status", "--porcelain"); st != "" {
		t.Errorf("worktree not clean:\n%s", st)
	}

	// A second supervisor resolves it: the base is merged again for it,
	// it concludes the merge and finishes the phase.
	f.runner.Super = f.agent(`
git rev-parse -q --verify MERGE_HEAD >/dev/null || exit 30
echo resolved > README.md
git add README.md && git commit -q --no-edit || exit 31
` + doneBody)
	sj.Attempt = 2
	so = f.run(sj)
	if !so.OK {
		t.Fatalf("second supervisor outcome = %+v", so)
	}
	if ok, _ := f.git.IsAncestor(f.ctx, f.rev("main"), so.Tip); !ok {
		t.Errorf("the base is not merged into the tip")
	}
}

// A supervisor that resolves the conflict but leaves the merge for the
// driver to conclude: committing a merge with no unmerged paths left is
// fine.
func TestRunSupervisorResolvedMergeIsConcluded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"README.md": "readme from p1\n"}, true)
	f.moveMain("human", map[string]string{"README.md": "readme from a human\n"})
	j := job()
	j.Retry = true
	if o := f.run(j); o.Reason != state.ReasonConflict {
		t.Fatalf("outcome = %+v", o)
	}
	f.runner.Super = f.agent(`
echo resolved > README.md && git add README.md
d=${CLAUDOPILOT_PHASE_DOC%/*}; b=${CLAUDOPILOT_PHASE_DOC##*/}
git mv "$CLAUDOPILOT_PHASE_DOC" "$d/DONE_$b"
`)
	sj := job()
	sj.Role, sj.Mode, sj.Failure = state.Supervisor, "best-effort", state.ReasonConflict
	so := f.run(sj)
	if !so.OK {
		t.Fatalf("supervisor outcome = %+v", so)
	}
	if parents := strings.Fields(f.gitIn(f.top, "rev-list", "--parents", "-n", "1", so.Tip)); len(parents) != 3 {
		t.Errorf("the tip is not the concluded merge: %q", parents)
	}
	if got, _, _ := f.git.ReadFile(f.ctx, so.Tip, "README.md"); string(got) != "resolved\n" {
		t.Errorf("README.md = %q", got)
	}
}

func TestRunResume(t *testing.T) {
	t.Parallel()
	doneBranch := func(t *testing.T) (*fixture, string, string) {
		f := newFixture(t)
		// The done commit imported, the worktree added on it (a
		// worktree add -b, mv, add and commit were seven processes).
		tip := gittest.Import(t, f.runner.Env, f.top, gittest.Commit{Ref: "auto/p1", From: "main^0", Message: "done",
			Files: map[string]string{"feature.txt": "work\n"}, Renames: [][2]string{{docRel, doneRel}}})[0]
		f.gitIn(f.top, "worktree", "add", "-q", f.wt(), "auto/p1")
		marker := filepath.Join(f.tmp, "agent-ran")
		f.runner.Agent = "touch '" + marker + "'"
		return f, tip, marker
	}
	t.Run("done branch goes to the gate", func(t *testing.T) {
		t.Parallel()
		f, tip, marker := doneBranch(t)
		j := job()
		j.Resume = true
		j.Gate = "test -f feature.txt"
		o := f.run(j)
		if !o.OK || o.Tip != tip {
			t.Fatalf("outcome = %+v, want OK at %s", o, tip)
		}
		if exists(marker) {
			t.Errorf("the agent ran for a branch that was already done")
		}
		if !exists(f.layout.LogPath("p1", "gate", 1)) {
			t.Errorf("the gate did not run")
		}
	})
	t.Run("done branch with a red gate", func(t *testing.T) {
		t.Parallel()
		f, _, marker := doneBranch(t)
		j := job()
		j.Resume, j.Gate = true, "false"
		if o := f.run(j); o.Reason != state.ReasonGate {
			t.Fatalf("outcome = %+v, want Reason gate", o)
		}
		if exists(marker) {
			t.Errorf("the agent ran")
		}
	})
	// A supervisor the journal owed (a failure recorded, the driver gone
	// before it launched, or a drain) runs: its branch being done is why
	// it failed at the merge. Before, it went to the branch's gate (green),
	// ran no agent, and the merge sent supervisor #1 again.
	t.Run("done branch: a resumed supervisor runs", func(t *testing.T) {
		t.Parallel()
		f, _, marker := doneBranch(t)
		f.runner.Super = f.runner.Agent
		j := job()
		j.Role, j.Failure, j.Mode, j.Resume = state.Supervisor, state.ReasonGate, "standard", true
		o := f.run(j)
		if !exists(marker) || o.Found {
			t.Errorf("outcome = %+v; the supervisor's agent did not run", o)
		}
	})
	t.Run("already landed", func(t *testing.T) {
		t.Parallel()
		f, tip, marker := doneBranch(t)
		f.gitIn(f.top, "merge", "-q", "--no-ff", "--no-commit", "auto/p1")
		f.write(f.top, manifestRel, strings.Replace(manifestSrc, "[pending] **p1**", "[merged] **p1**", 1))
		f.gitIn(f.top, "add", manifestRel)
		f.gitIn(f.top, "commit", "-q", "-m", "Merge p1: first phase")
		// Its worktree is gone too.
		f.gitIn(f.top, "worktree", "remove", "--force", f.wt())
		j := job()
		j.Resume, j.Gate = true, "false"
		o := f.run(j)
		if !o.OK || o.Tip != tip {
			t.Fatalf("outcome = %+v, want OK at %s", o, tip)
		}
		if exists(marker) || exists(f.layout.LogPath("p1", "gate", 1)) {
			t.Errorf("the agent or the gate ran for a landed phase")
		}
		if !work.Landed(f.ctx, f.git, f.layout, "p1") || work.Landed(f.ctx, f.git, f.layout, "p2") {
			t.Errorf("Landed is wrong")
		}
	})
	t.Run("not done: the agent runs", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.parkBranch(map[string]string{"half.txt": "half\n"}, true)
		f.runner.Agent = f.agent(doneBody)
		j := job()
		j.Resume = true
		o := f.run(j)
		if !o.OK || !f.hasFile(o.Tip, "half.txt") || o.Usage.Sessions != 1 {
			t.Fatalf("outcome = %+v, want OK with one session", o)
		}
	})
	// Over a token or session cap (PHASE_MAX_SESSIONS): a done branch
	// still goes to the gate (no session), anything else starts no agent.
	t.Run("capped: done branch goes to the gate", func(t *testing.T) {
		t.Parallel()
		f, tip, marker := doneBranch(t)
		j := job()
		j.Resume, j.Capped = true, "started 3 agent sessions of 3 (PHASE_MAX_SESSIONS)"
		if o := f.run(j); !o.OK || o.Tip != tip || exists(marker) || o.Usage.Sessions != 0 {
			t.Fatalf("outcome = %+v, want OK at %s without an agent", o, tip)
		}
	})
	t.Run("capped: not done, no agent", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.parkBranch(map[string]string{"half.txt": "half\n"}, true)
		marker := filepath.Join(f.tmp, "agent-ran")
		f.runner.Agent = "touch '" + marker + "'"
		j := job()
		j.Resume, j.Capped = true, "started 3 agent sessions of 3 (PHASE_MAX_SESSIONS)"
		o := f.run(j)
		if o.Reason != state.ReasonBudget || !o.Found || o.Detail != j.Capped || exists(marker) || o.Usage.Sessions != 0 {
			t.Fatalf("outcome = %+v, want a budget failure found without an agent", o)
		}
	})
}

// A leftover branch of a phase that landed in an earlier run is replaced by
// a fresh one on a first try.
func TestRunFirstTryReplacesLandedLeftover(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := f.parkBranch(map[string]string{"old.txt": "old\n"}, false)
	// It landed (a merge as git merge --no-ff makes it), and main moved
	// on: one Import, no process (a merge and a commit were three).
	gittest.Import(t, f.runner.Env, f.top,
		gittest.Commit{Ref: "main", From: "main^0", Merge: []string{"auto/p1^0"}, Message: "landed", Files: map[string]string{"old.txt": "old\n"}},
		gittest.Commit{Ref: "main", Message: "later", Files: map[string]string{"later.txt": "later\n"}})
	f.runner.Agent = f.agent(doneBody)
	o := f.run(job())
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	if got := f.rev("auto/p1~1"); got != f.rev("main") {
		t.Errorf("the branch was not cut afresh from the base: parent %s", got)
	}
	if ok, _ := f.git.IsAncestor(f.ctx, old, o.Tip); !ok {
		t.Errorf("the old tip is not in the new branch")
	}
}

func TestRunFirstTryWorktreeGoneOnLaterAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	j := job()
	j.Attempt = 2
	o := f.run(j)
	if o.Reason != state.ReasonWorktree || !strings.Contains(o.Detail, "gone") {
		t.Fatalf("outcome = %+v, want Reason worktree", o)
	}
}

func TestScriptAgent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		doc    string
		reason state.Reason
		detail string
	}{
		{
			name: "runs the first sh block",
			doc:  "# p1\n\n```go\npanic(1)\n```\n\n```sh\necho scripted > out.txt\nmkdir -p gen && echo \"$CLAUDOPILOT_PHASE\" > gen/phase.txt\n```\n\n```sh\nexit 9\n```\n",
		},
		{
			name:   "no sh block",
			doc:    "# p1\n\nNothing to run.\n\n    echo indented\n",
			reason: state.ReasonExit,
			detail: "has no ```sh block",
		},
		{
			name:   "the script fails",
			doc:    "# p1\n\n```bash\necho partial > partial.txt\nfalse\necho never > never.txt\n```\n",
			reason: state.ReasonExit,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.commitOn(f.top, "doc", map[string]string{docRel: tc.doc})
			f.runner.Agent = work.ScriptAgent
			o := f.run(job())
			if o.Reason != tc.reason || (tc.reason == "") != o.OK {
				t.Fatalf("outcome = %+v, want Reason %q", o, tc.reason)
			}
			if !strings.Contains(o.Detail, tc.detail) {
				t.Errorf("Detail = %q, want %q in it", o.Detail, tc.detail)
			}
			switch tc.name {
			case "runs the first sh block":
				if got, _, _ := f.git.ReadFile(f.ctx, o.Tip, "out.txt"); string(got) != "scripted\n" {
					t.Errorf("out.txt = %q", got)
				}
				if got, _, _ := f.git.ReadFile(f.ctx, o.Tip, "gen/phase.txt"); string(got) != "p1\n" {
					t.Errorf("gen/phase.txt = %q", got)
				}
				if !f.hasFile(o.Tip, doneRel) || f.hasFile(o.Tip, docRel) {
					t.Errorf("the doc was not renamed")
				}
				if got := f.gitIn(f.top, "log", "-1", "--format=%s", o.Tip); got != "p1: done (script agent)" {
					t.Errorf("subject = %q", got)
				}
			case "the script fails":
				// sh -e stops at the failure; what it made is kept,
				// the doc is not renamed.
				if !f.hasFile("auto/p1", "partial.txt") || f.hasFile("auto/p1", "never.txt") || f.hasFile("auto/p1", doneRel) {
					t.Errorf("branch content wrong after a failed script")
				}
			}
		})
	}
}

func TestFirstShellBlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		src  string
		want string
		ok   bool
	}{
		{"sh", "# t\n\n```sh\necho a\n```\n", "echo a\n", true},
		{"bash", "```bash\necho b\necho c\n```\n", "echo b\necho c\n", true},
		{"shell", "```shell\necho s\n```\n", "echo s\n", true},
		{"tilde fence", "~~~sh\necho t\n~~~\n", "echo t\n", true},
		{"info with attributes", "```sh title=run.sh\necho attr\n```\n", "echo attr\n", true},
		{"first of several", "```sh\necho 1\n```\n\n```sh\necho 2\n```\n", "echo 1\n", true},
		{"other languages skipped", "```go\nfmt.Println()\n```\n\n```python\nprint()\n```\n\n```console\n$ ls\n```\n\n```bash\necho late\n```\n", "echo late\n", true},
		{"untagged fence skipped", "```\necho plain\n```\n\n```sh\necho tagged\n```\n", "echo tagged\n", true},
		{"indented code ignored", "Text.\n\n    ```sh\n    echo indented\n    ```\n", "", false},
		{"inside a list", "- step:\n\n  ```sh\n  echo listed\n  ```\n", "echo listed\n", true},
		{"empty block", "```sh\n```\n", "", true},
		{"unclosed fence runs to the end", "```sh\necho open\n", "echo open\n", true},
		{"none", "# nothing\n\nJust prose with `sh` inline.\n", "", false},
		{"shellscript is not sh", "```shellscript\necho x\n```\n", "", false},
	} {
		got, ok := work.FirstShellBlock([]byte(tc.src))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: FirstShellBlock = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRunGateLogsNumbered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dir := f.top
	for i := 1; i <= 3; i++ {
		ok, log, err := work.RunGate(f.ctx, f.layout, "p1", fmt.Sprintf("echo gate %d; exit %d", i, i%2), dir, testEnv(), nil, 0, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (i%2 == 0) {
			t.Errorf("gate %d ok = %v", i, ok)
		}
		if log != f.layout.LogPath("p1", "gate", i) || !strings.Contains(f.read(log), fmt.Sprintf("gate %d", i)) {
			t.Errorf("gate %d log = %q", i, log)
		}
	}
	// A gate with no command (empty, or GATE_CMD's default `true`) is
	// green and starts no process: not even in a folder that is not
	// there, where any process fails to start. Its log is numbered on
	// and says so. A real command there still fails to start.
	missing := filepath.Join(f.tmp, "not-there")
	for i, gate := range []string{"", "true", " true\n"} {
		ok, log, err := work.RunGate(f.ctx, f.layout, "p1", gate, missing, testEnv(), nil, 0, time.Second)
		if !ok || err != nil {
			t.Errorf("gate %q: %v, %v", gate, ok, err)
		}
		if log != f.layout.LogPath("p1", "gate", 4+i) || !strings.Contains(f.read(log), "nothing to run") {
			t.Errorf("gate %q: log %q", gate, log)
		}
	}
	if ok, _, err := work.RunGate(f.ctx, f.layout, "p1", "true; true", missing, testEnv(), nil, 0, time.Second); ok || err == nil {
		t.Errorf("a gate command in a missing folder: %v, %v; want a start error", ok, err)
	}
}

func TestRunStoppedAgents(t *testing.T) {
	t.Parallel()
	leftover := "claudopilot: commit work left uncommitted by worker attempt 1 of p1"
	for _, tc := range []struct {
		name   string
		setup  func(r *work.Runner)
		cancel bool
		reason state.Reason
		detail string
	}{
		// The timeouts are long enough for a loaded machine's bash to
		// write half.txt first (at load 50, 300 ms and 500 ms were not:
		// the agent was stopped before its first line).
		{"stuck", func(r *work.Runner) { r.StuckTimeout = 2 * time.Second }, false, state.ReasonStuck, "no output"},
		{"timeout", func(r *work.Runner) { r.AgentTimeout = 2 * time.Second }, false, state.ReasonTimeout, "ran longer"},
		{"interrupted", nil, true, state.ReasonExit, "interrupted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ready := filepath.Join(f.tmp, "ready")
			f.runner.KillGrace = 500 * time.Millisecond
			if tc.setup != nil {
				tc.setup(f.runner)
			}
			// Output keeps coming for the timeout case, so only the wall
			// clock can stop it; the stuck case goes silent.
			body := "echo half > half.txt\ntouch '" + ready + "'\n"
			if tc.name == "timeout" {
				body += "while :; do echo tick; sleep 0.1; done\n"
			} else {
				body += "sleep 300\n"
			}
			f.runner.Agent = f.agent(body)
			ctx, cancel := context.WithCancel(f.ctx)
			defer cancel()
			if tc.cancel {
				go func() {
					for !exists(ready) {
						time.Sleep(20 * time.Millisecond)
					}
					cancel()
				}()
			}
			start := time.Now()
			o := f.runner.Run(ctx, job(), nil)
			if o.Reason != tc.reason || !strings.Contains(o.Detail, tc.detail) {
				t.Fatalf("outcome = %+v, want Reason %q (%q)", o, tc.reason, tc.detail)
			}
			// The agent sleeps 300 s: returning well before proves it was
			// stopped, not waited for, with room for a loaded machine (at
			// load 50 the stop and the leftovers' commit took 17 s).
			if d := time.Since(start); d > 150*time.Second {
				t.Errorf("took %v", d)
			}
			// ready is written after half.txt: an agent stopped before it
			// had nothing to leave (a loaded machine's bash can start
			// later than the timeout).
			if !exists(ready) {
				t.Logf("the agent was stopped before it wrote half.txt; leftovers not checked")
				return
			}
			if got := f.gitIn(f.top, "log", "-1", "--format=%s", "auto/p1"); got != leftover {
				t.Errorf("tip subject = %q, want the leftovers committed", got)
			}
			if !f.hasFile("auto/p1", "half.txt") {
				t.Errorf("half.txt not committed")
			}
		})
	}
}

func TestRunSupervisorContract(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"half.txt": "half\n"}, true)
	failing := filepath.Join(f.tmp, "worker-1.log")
	var b strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	if err := os.WriteFile(failing, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(f.tmp, "seen")
	f.runner.Agent = "exit 99" // the worker command must not be used
	f.runner.Super = f.agent(`env | grep '^CLAUDOPILOT_' | sort > '` + seen + `'
cp "$CLAUDOPILOT_FAILURE_LOG" '` + seen + `.log'
` + doneBody)
	j := job()
	j.Role, j.Attempt, j.Mode = state.Supervisor, 2, "best-effort"
	j.Failure, j.FailureLog, j.Detail = state.ReasonGate, failing, "the gate is red: make test"
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	if o.LogPath != f.layout.LogPath("p1", "supervisor", 2) {
		t.Errorf("LogPath = %q", o.LogPath)
	}
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(f.read(seen)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	for k, want := range map[string]string{
		"CLAUDOPILOT_ROLE":            "supervisor",
		"CLAUDOPILOT_ATTEMPT":         "2",
		"CLAUDOPILOT_SUPERVISOR_MODE": "best-effort",
		"CLAUDOPILOT_FAILURE":         "gate",
		"CLAUDOPILOT_FAILURE_DETAIL":  "the gate is red: make test",
		"CLAUDOPILOT_PROMPT_FILE":     filepath.Join(f.layout.LogDir("p1"), "supervisor-2.prompt.md"),
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	tail := f.read(seen + ".log")
	if lines := strings.Split(strings.TrimSuffix(tail, "\n"), "\n"); len(lines) != 200 || lines[0] != "line 101" || lines[199] != "line 300" {
		t.Errorf("failure log: %d lines, %q … %q; want the last 200", len(lines), lines[0], lines[len(lines)-1])
	}
}

// A worktree folder without its .git link (a `git worktree add` a killed
// driver cut off) is moved aside, and the resumed phase gets a working
// worktree on its kept branch.
func TestRunResumeOverHalfMadeWorktree(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tip := f.parkBranch(map[string]string{"work.txt": "earlier\n"}, false)
	f.write(f.wt(), "partial.txt", "half a checkout\n") // no .git in it
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent(doneBody)
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v, want OK", o)
	}
	if f.gitIn(f.top, "merge-base", "--is-ancestor", tip, o.Tip) != "" {
		t.Fatal("unreachable")
	}
	aside, _ := filepath.Glob(f.wt() + ".broken-*")
	if len(aside) != 1 || f.read(filepath.Join(aside[0], "partial.txt")) != "half a checkout\n" {
		t.Errorf("the half-made folder was not kept aside: %v", aside)
	}
}

// Lock files a killed git left (index, HEAD, the branch ref) do not fail the next
// attempt: no process of the phase runs then, so the lock is stale.
func TestRunClearsStaleIndexLock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"work.txt": "earlier\n"}, true)
	gitDir := f.gitIn(f.wt(), "rev-parse", "--absolute-git-dir")
	for _, l := range []string{"index.lock", "HEAD.lock"} {
		if err := os.WriteFile(filepath.Join(gitDir, l), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	common := f.gitIn(f.top, "rev-parse", "--git-common-dir")
	if !filepath.IsAbs(common) {
		common = filepath.Join(f.top, common)
	}
	if err := os.WriteFile(filepath.Join(common, "refs", "heads", "auto", "p1.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent("echo more > more.txt\n" + doneBody)
	if o := f.run(j); !o.OK {
		t.Fatalf("outcome = %+v, want OK", o)
	}
}

// A worktree left detached at a merge commit by a driver killed during the
// merge gate is put back on its branch when the phase resumes; without the
// merge owner's mark, a detached HEAD stays a failure.
func TestRunResumeAfterInterruptedMergeGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"work.txt": "earlier\n"}, true)
	f.gitIn(f.wt(), "checkout", "-q", "--detach", "HEAD")
	mark := work.GatingMark(f.layout, "p1")
	if err := os.MkdirAll(filepath.Dir(mark), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j := job()
	j.Resume = true
	f.runner.Agent = f.agent(doneBody)
	if o := f.run(j); !o.OK {
		t.Fatalf("outcome = %+v, want OK", o)
	}
	if exists(mark) {
		t.Error("the gating mark is still there")
	}
	// The same detached HEAD without the mark: an agent did it.
	f.gitIn(f.wt(), "checkout", "-q", "--detach", "HEAD")
	if o := f.run(j); o.Reason != state.ReasonWorktree {
		t.Fatalf("outcome = %+v, want Reason worktree", o)
	}
}

// A later attempt with TakeBase (a phase predicted to conflict with this
// one has landed) starts in the same worktree with the base merged in.
func TestRunTakeBaseMergesTheBaseBetweenAttempts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	kept := f.parkBranch(map[string]string{"kept.txt": "kept\n"}, true)
	base := f.moveMain("the other phase", map[string]string{"base.txt": "base\n"})
	seen := filepath.Join(f.tmp, "seen")
	f.runner.Agent = f.agent(`
test -f kept.txt && test -f base.txt && echo both > '` + seen + `'
` + doneBody)
	j := job()
	j.Attempt, j.TakeBase = 2, true
	o := f.run(j)
	if !o.OK {
		t.Fatalf("outcome = %+v", o)
	}
	if !exists(seen) {
		t.Errorf("the agent did not start on its work with the base merged in")
	}
	for _, a := range []string{kept, base} {
		if ok, _ := f.git.IsAncestor(f.ctx, a, o.Tip); !ok {
			t.Errorf("%s is not in the tip", a)
		}
	}
}

// A conflict met taking the base: a worker fails with reason conflict
// without running (the markers stay); a supervisor sent for another
// reason runs on the markers, told it is a conflict.
func TestRunTakeBaseConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.parkBranch(map[string]string{"README.md": "readme from p1\n"}, true)
	f.moveMain("the other phase", map[string]string{"README.md": "readme from p2\n"})
	marker := filepath.Join(f.tmp, "worker-ran")
	f.runner.Agent = "touch '" + marker + "'"
	j := job()
	j.Attempt, j.TakeBase = 2, true
	o := f.run(j)
	if o.Reason != state.ReasonConflict || !strings.Contains(o.Detail, "README.md") {
		t.Fatalf("worker outcome = %+v, want Reason conflict naming README.md", o)
	}
	if exists(marker) {
		t.Errorf("the worker ran on a conflicted merge")
	}
	seen := filepath.Join(f.tmp, "seen")
	f.runner.Super = f.agent(`
echo "$CLAUDOPILOT_FAILURE" > '` + seen + `'
grep -q '^<<<<<<<' README.md || exit 9
echo resolved > README.md
git add README.md && git commit -qm resolve
` + doneBody)
	s := job()
	s.Role, s.Attempt, s.Failure, s.TakeBase = state.Supervisor, 1, state.ReasonGate, true
	o = f.run(s)
	if !o.OK {
		t.Fatalf("supervisor outcome = %+v", o)
	}
	if b, _ := os.ReadFile(seen); strings.TrimSpace(string(b)) != "conflict" {
		t.Errorf("the supervisor was told %q, want conflict", b)
	}
}

// Every agent's log ends with a stamped line, passing attempts too; with
// LOG_KEEP the older logs of passing attempts are rotated away (each
// recorded), never a failed attempt's nor the latest.
func TestRunLogsStampedAndRotated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.runner.LogKeep = 1
	f.runner.Now = func() time.Time { return time.Date(2026, 12, 4, 22, 5, 4, 0, time.UTC) }
	pass := f.agent(`echo working; date > "f-$CLAUDOPILOT_ATTEMPT"; git add -A; git commit -qm work` + doneBody)
	again := f.agent(`echo again; date > "g-$CLAUDOPILOT_ATTEMPT"; git add -A; git commit -qm more`)
	fails := f.agent("echo cannot; exit 1")
	logOf := func(n int) string { return f.layout.LogPath("p1", "worker", n) }
	for i, agent := range []string{pass, again, fails, again} {
		f.runner.Agent = agent
		j := job()
		j.Attempt = i + 1
		o := f.run(j)
		if o.OK != (i != 2) {
			t.Fatalf("attempt %d: %+v", i+1, o)
		}
	}
	if exists(logOf(1)) || exists(logOf(2)) {
		t.Error("the older logs of passing attempts were kept")
	}
	if !exists(logOf(3)) || !exists(logOf(4)) {
		t.Error("a failed attempt's log, or the latest, was rotated away")
	}
	want := "\n=== claudopilot 2026-12-04T22:05:04Z: worker attempt 4 of p1 finished: exit 0\n"
	if got := f.read(logOf(4)); !strings.HasSuffix(got, want) {
		t.Errorf("the latest log ends:\n%s\nwant %q", got, want)
	}
	if !strings.HasSuffix(f.read(logOf(3)), "\n=== claudopilot 2026-12-04T22:05:04Z: worker attempt 3 of p1 failed: reason=exit: worker exited 1\n") {
		t.Errorf("the failed log ends:\n%s", f.read(logOf(3)))
	}
	rot, ok := f.layout.RotatedLog("p1", "worker", 2)
	if !ok || rot.End != "=== claudopilot 2026-12-04T22:05:04Z: worker attempt 2 of p1 finished: exit 0" {
		t.Errorf("rotated record of attempt 2: %+v %v", rot, ok)
	}
}

// A worker relaunched in its session runs AGENT_RESUME_CMD with the
// session and is told a short nudge, not the whole prompt again.
func TestRunResumesSessionWithNudge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.runner.Agent = f.agent("echo fresh; exit 9")
	f.runner.ResumeCmd = f.argAgent(`echo "session=$1"; cat`+doneBody) + " {session}"
	j := job()
	j.Session = "sess-1"
	o := f.run(j)
	log := f.read(o.LogPath)
	if !o.OK {
		t.Fatalf("%+v\n%s", o, log)
	}
	if !strings.Contains(log, "session=sess-1\n") || !strings.Contains(log, "this is your session again") || strings.Contains(log, "first phase") {
		t.Errorf("the resumed session's log:\n%s", log)
	}
}

// TestLaneResumesWithItsOwnCommand: with LANES the session is the lane's
// CLI's, so a worker on a lane carries on with the lane's resume command;
// a lane without one starts over even when AGENT_RESUME_CMD is set.
func TestLaneResumesWithItsOwnCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.runner.Agent = f.agent("echo fresh; exit 9")
	f.runner.ResumeCmd = f.agent("echo global; exit 9") + " {session}"
	j := job()
	j.Lane, j.Cmd, j.Session = "claude", f.agent("echo fresh-lane; exit 9"), "sess-1"
	j.ResumeCmd = f.argAgent(`echo "lane-session=$1"; cat`+doneBody) + " {session}"
	o := f.run(j)
	log := f.read(o.LogPath)
	if !o.OK || !strings.Contains(log, "lane-session=sess-1\n") {
		t.Fatalf("the lane's resume: %+v\n%s", o, log)
	}
	g := newFixture(t)
	g.runner.ResumeCmd = g.agent("echo global; exit 9") + " {session}"
	k := job()
	k.Lane, k.Cmd, k.Session = "codex", g.agent(`echo "fresh-lane"; cat`+doneBody), "sess-2"
	o = g.run(k)
	log = g.read(o.LogPath)
	if !o.OK || !strings.Contains(log, "fresh-lane") || strings.Contains(log, "global") {
		t.Fatalf("a lane without a resume command: %+v\n%s", o, log)
	}
}
