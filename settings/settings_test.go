package settings

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/manifest"
)

func writeFile(t *testing.T, top, rel, body string) {
	t.Helper()
	p := filepath.Join(top, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	AddFlags(fs, ForScope(Run))
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// Precedence: flags, then environment, then claudopilot.config, then the
// manifest's Gate/Prepare lines, then defaults; each value's source is
// recorded.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, ConfigFile, "# comment\n\nMAX_PARALLEL=5\nGATE_CMD='make check'\nexport WORKTREE_PREPARE_CMD=\"npm ci\"\nAGENT_CMD=from-file\n")
	m := &manifest.Manifest{Gate: manifest.Setting{Value: "from-manifest", Line: 3}, Prepare: manifest.Setting{Value: "from-manifest"}}
	s, err := Resolve(Input{Scope: Run, Flags: runFlags(t, "--max-parallel", "7", "--keep-going"), Top: top, Manifest: m,
		Env: map[string]string{"MAX_PARALLEL": "6", "AGENT_CMD": "from-env"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxParallel != 7 || s.Agent != "from-env" || s.Gate != "make check" || s.Prepare != "npm ci" || !s.KeepGoing || s.Poll != 5*time.Second {
		t.Errorf("resolved %d %q %q %q %v %v", s.MaxParallel, s.Agent, s.Gate, s.Prepare, s.KeepGoing, s.Poll)
	}
	for env, want := range map[string]string{"MAX_PARALLEL": "--max-parallel", "AGENT_CMD": "the environment", "GATE_CMD": "claudopilot.config:4", "POLL_SECONDS": "the default"} {
		if got := s.Source(env).String(); got != want {
			t.Errorf("%s from %q, want %q", env, got, want)
		}
	}
	s, err = Resolve(Input{Scope: Run, Manifest: m})
	if err != nil || s.Gate != "from-manifest" || s.Source("GATE_CMD").String() != "the manifest" {
		t.Errorf("manifest gate: %q from %s (%v)", s.Gate, s.Source("GATE_CMD"), err)
	}
	// The queue's own defaults.
	q, _ := Resolve(Input{Scope: Queue})
	if q.Poll != time.Minute || q.QueuePoll != time.Minute {
		t.Errorf("queue POLL_SECONDS = %v (queue poll %v), want 60s", q.Poll, q.QueuePoll)
	}
	// run --issues: the roadmap's poll is run's, the queue's its own
	// unless POLL_SECONDS is set.
	if r, _ := Resolve(Input{Scope: Run}); r.Poll != 5*time.Second || r.QueuePoll != time.Minute {
		t.Errorf("run: poll %v, queue poll %v", r.Poll, r.QueuePoll)
	}
	if r, _ := Resolve(Input{Scope: Run, Env: map[string]string{"POLL_SECONDS": "2"}}); r.QueuePoll != 2*time.Second {
		t.Errorf("run, POLL_SECONDS=2: queue poll %v", r.QueuePoll)
	}
}

// Every default in the table reads by its kind into its typed field (a
// knob whose field has another type panics here), and one rule makes the
// supervisor the agent.
func TestDefaultsRead(t *testing.T) {
	t.Parallel()
	s, err := Resolve(Input{Scope: Run, Env: map[string]string{"HOME": "/home/u"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxParallel != 3 || s.Agent != DefaultAgent || s.Supervisor != DefaultAgent || s.SupervisorSet != "" || s.GateSlots != min(2, runtime.NumCPU()) || s.TrainWait != 3*time.Second ||
		!s.SecretScan || s.ClaimStale != 6*time.Hour || s.Labels.Claim != "agent-running" || s.Pace != 300*time.Second || len(s.ReviewLenses) != 4 {
		t.Errorf("defaults: %+v", s)
	}
	if got := s.Rules(); got.Slots != 3 || len(got.Lanes) != 1 || got.Lanes[0].SupervisorCmd != DefaultAgent {
		t.Errorf("rules = %+v", got)
	}
	seen := map[string]bool{}
	for _, k := range Knobs() {
		if seen[k.Env] || seen["--"+k.Flag] && k.Flag != "" {
			t.Errorf("%s (--%s) is in the table twice", k.Env, k.Flag)
		}
		seen[k.Env], seen["--"+k.Flag] = true, true
	}
}

// Every problem is reported at once, each with its source: the files'
// bad lines (exit 3) and bad values from a flag, the environment and a
// file; the good lines are still read.
func TestEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	marker := filepath.Join(top, "ran")
	writeFile(t, top, ConfigFile, "MAX_PARALLEL=2\nNOT_A_KNOB=1\njust words\nGATE_CMD=$(touch "+marker+")\nBATCH_SIZE=none\n")
	s, err := Resolve(Input{Scope: Run, Top: top, Flags: runFlags(t, "--poll-seconds", "soon"), Env: map[string]string{"GATE_SLOTS": "all", "AGENT_DRIVER": "cluade"}})
	var e *Error
	if !errors.As(err, &e) || !e.Unreadable() {
		t.Fatalf("err = %v, want an unreadable *Error", err)
	}
	for _, want := range []string{
		ConfigFile + ":2: unknown setting NOT_A_KNOB",
		ConfigFile + ":3: want KEY=VALUE",
		`POLL_SECONDS="soon" from --poll-seconds: want seconds`,
		`GATE_SLOTS="all" from the environment: want a whole number ≥ 1`,
		`AGENT_DRIVER="cluade" from the environment: want claude, codex or opencode`,
		`BATCH_SIZE="none" from claudopilot.config:5: want a whole number ≥ 1`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	if s.MaxParallel != 2 || s.Gate != "$(touch "+marker+")" || s.Poll != 5*time.Second {
		t.Errorf("the good lines were not read, or a bad value kept: %d %q %v", s.MaxParallel, s.Gate, s.Poll)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the config file was run as shell")
	}
	// Bad values alone are misuse; CheckFlags keeps the flags' only.
	_, err = Resolve(Input{Scope: Run, Env: map[string]string{"MAX_PARALLEL": "lots"}})
	if !errors.As(err, &e) || e.Unreadable() || err.Error() != `MAX_PARALLEL="lots" from the environment: want a whole number ≥ 1` {
		t.Errorf("err = %v", err)
	}
	if err := CheckFlags(runFlags(t, "--agent", ""), Run); err == nil || err.Error() != "AGENT_CMD is empty (from --agent)" {
		t.Errorf("CheckFlags = %v", err)
	}
	if err := CheckFlags(runFlags(t, "--max-parallel", "2"), Run); err != nil {
		t.Errorf("CheckFlags = %v", err)
	}
}

// Claudopilot's claudopilot.config.sh is read as data: bash's quoting,
// export, comments, $REPO_ROOT and KEY="${KEY:-v}"; a line that needs a
// shell is an error naming file:line, and nothing in it ever runs.
func TestShellConfigAsData(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	marker := filepath.Join(top, "ran")
	sh := `#!/usr/bin/env bash
export MAX_ITER
export GATE_CMD='pnpm -s typecheck && pnpm -s test'   # trailing comment
export WORKTREE_PREPARE_CMD="pnpm install --prefer-offline"
MAX_PARALLEL=2
export MANIFEST="$REPO_ROOT/roadmap/EXECUTION-MANIFEST.md"
POLL_SECONDS="${POLL_SECONDS:-7}"
AGENT_TIMEOUT=1\2
LOCKFILE_REGEN_CMD="echo \"regen\" \$x"
MAX_ITER=500
STUCK_TIMEOUT=$(touch ` + marker + `)
AGENT_CMD=` + "`touch " + marker + "`" + `
BUILD_CMD=make build
BOOTSTRAP_CMD="npm ci; $HOME/x"
DEFAULT_RATE_LIMIT_SLEEP=1; touch ` + marker + `
source ./other.sh
LOG_CAP_MB=${OTHER:-3}
TRANSIENT_API_MAX_RETRIES="unterminated
`
	writeFile(t, top, "claudopilot.config.sh", sh)
	vals, notes, probs, _ := readFiles(top, nil)
	for k, want := range map[string]string{
		"GATE_CMD":             "pnpm -s typecheck && pnpm -s test",
		"WORKTREE_PREPARE_CMD": "pnpm install --prefer-offline",
		"MAX_PARALLEL":         "2",
		"POLL_SECONDS":         "7",
		"AGENT_TIMEOUT":        "12",
		"LOCKFILE_CMD":         `echo "regen" $x`,
		"MAX_ITER":             "500",
	} {
		if got, ok := vals[k]; got.v != want || !ok {
			t.Errorf("%s = %q (set %v), want %q", k, got.v, ok, want)
		}
	}
	if w := vals["GATE_CMD"].src.String(); w != "claudopilot.config.sh:3" {
		t.Errorf("GATE_CMD from %q", w)
	}
	if len(notes) != 0 || vals["MANIFEST"].v != top+"/roadmap/EXECUTION-MANIFEST.md" {
		t.Errorf("notes = %v, MANIFEST = %q: want none, and MANIFEST read", notes, vals["MANIFEST"].v)
	}
	err := (&Error{Problems: probs}).Error()
	for _, line := range []string{"11", "12", "13", "14", "15", "16", "17", "18"} {
		if !strings.Contains(err, "claudopilot.config.sh:"+line+": ") {
			t.Errorf("line %s is not reported:\n%v", line, err)
		}
	}
	for _, k := range []string{"STUCK_TIMEOUT", "AGENT_CMD", "BUILD_CMD", "BOOTSTRAP_CMD", "DEFAULT_RATE_LIMIT_SLEEP", "LOG_CAP_MB", "TRANSIENT_API_MAX_RETRIES"} {
		if v, ok := vals[k]; ok {
			t.Errorf("%s was taken from a line that needs a shell: %q", k, v.v)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the file was run as shell")
	}
}

// .claudopilot/config.json: camelCase keys, booleans and numbers; below
// claudopilot.config and above the shell files. Files lists them all.
func TestJSONConfigAndFileOrder(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, ".claudopilot/config.json", `{"gateCmd": "make check", "maxParallel": 4, "keepGoing": true,
		"ignoreLoopCheckpoints": "1", "maxSupervisorAttemptsPerPhase": 3, "agentDriver": "codex", "isolated": false}`)
	writeFile(t, top, "claudopilot.config.sh", "GATE_CMD='from sh'\nWORKTREE_PREPARE_CMD='npm ci'\nMAX_PARALLEL=9\n")
	writeFile(t, top, ConfigFile, "MAX_PARALLEL=5\n")
	s, err := Resolve(Input{Scope: Run, Top: top})
	if err != nil {
		t.Fatal(err)
	}
	if s.Gate != "make check" || s.MaxParallel != 5 || !s.KeepGoing || !s.IgnoreCheckpoints || s.MaxSupervisor != 3 || s.Prepare != "npm ci" || s.AgentDriver != "codex" {
		t.Errorf("resolved %+v", s)
	}
	if len(s.Notes) != 1 || s.Notes[0].Key != "CLAUDOPILOT_ISOLATED" {
		t.Errorf("notes = %v", s.Notes)
	}
	if s.Agent != "codex exec --json --dangerously-bypass-approvals-and-sandbox -" || s.Source("AGENT_CMD").String() != "AGENT_DRIVER=codex from .claudopilot/config.json" {
		t.Errorf("AGENT_CMD = %q (from %s)", s.Agent, s.Source("AGENT_CMD"))
	}
	if want := []string{ConfigFile, ".claudopilot/config.json", "claudopilot.config.sh"}; !reflect.DeepEqual(s.Read, want) {
		t.Errorf("read %v, want %v", s.Read, want)
	}
	files := Files(top)
	if len(files) != 5 || files[0] != filepath.Join(top, ConfigFile) || files[3] != filepath.Join(top, "claudopilot.config.sh") || files[4] != filepath.Join(top, IssuePilotConf) {
		t.Errorf("Files = %v", files)
	}
	writeFile(t, top, ".claudopilot/config.json", `{"gateCmd": ["a"], "nope": 1}`)
	_, err = Resolve(Input{Scope: Run, Top: top})
	if err == nil || !strings.Contains(err.Error(), ".claudopilot/config.json: gateCmd: want a string") || !strings.Contains(err.Error(), "unknown setting NOPE") {
		t.Errorf("err = %v", err)
	}
}

// AGENT_DRIVER and AGENT_MODEL build AGENT_CMD unless AGENT_CMD is set.
func TestAgentDriverPresets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENT_DRIVER": "claude", "AGENT_MODEL": "opus"}, DefaultAgent + " --model opus"},
		{map[string]string{"AGENT_MODEL": "sonnet"}, DefaultAgent + " --model sonnet"},
		{map[string]string{"AGENT_DRIVER": "codex", "AGENT_MODEL": "gpt-5 codex"}, "codex exec --json --dangerously-bypass-approvals-and-sandbox --model 'gpt-5 codex' -"},
		{map[string]string{"AGENT_DRIVER": "opencode", "AGENT_MODEL": "ollama/qwen2.5-coder"}, `opencode run --dangerously-skip-permissions --format json --model ollama/qwen2.5-coder "$(cat "$CLAUDOPILOT_PROMPT_FILE")"`},
		{map[string]string{"AGENT_DRIVER": "codex", "AGENT_CMD": "mine"}, "mine"},
		{map[string]string{}, DefaultAgent},
	} {
		s, err := Resolve(Input{Scope: Run, Env: c.env})
		if err != nil || s.Agent != c.want || s.Supervisor != c.want {
			t.Errorf("%v: AGENT_CMD = %q, supervisor %q (%v), want %q", c.env, s.Agent, s.Supervisor, err, c.want)
		}
	}
	// Claudopilot's LOCKFILE_REGEN_CMD is LOCKFILE_CMD's other name.
	s, _ := Resolve(Input{Scope: Run, Env: map[string]string{"LOCKFILE_REGEN_CMD": "pnpm i --lockfile-only"}})
	if s.LockfileCmd != "pnpm i --lockfile-only" || s.Source("LOCKFILE_CMD").String() != "the environment (LOCKFILE_REGEN_CMD)" {
		t.Errorf("LOCKFILE_CMD from LOCKFILE_REGEN_CMD = %q (from %s)", s.LockfileCmd, s.Source("LOCKFILE_CMD"))
	}
}

// LANES: the lanes' commands are what a run starts, so they are the
// programs checked (not AGENT_CMD's claude), and the rules carry them.
func TestLanesArePrograms(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, ConfigFile, "LANES=a b\nLANE_A_CMD=agent-a\nLANE_B_CMD=agent-b\nLANE_B_SUPERVISOR_CMD=super-b\n")
	bin := filepath.Join(top, "bin")
	for _, p := range []string{"agent-a", "agent-b"} {
		writeFile(t, bin, p, "#!/bin/sh\n")
		if err := os.Chmod(filepath.Join(bin, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Resolve(Input{Scope: Run, Top: top})
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	for _, p := range s.Programs() {
		whats = append(whats, p.What+"="+p.Cmd)
	}
	if want := []string{"lane a agent=agent-a", "lane b agent=agent-b", "lane b supervisor=super-b"}; !reflect.DeepEqual(whats, want) {
		t.Errorf("programs %v, want %v", whats, want)
	}
	err = s.Missing(bin, top)
	if err == nil || err.Error() != "lane b supervisor: super-b (from LANE_B_SUPERVISOR_CMD): super-b not found; fix: install it (and log in), or set LANE_B_SUPERVISOR_CMD" {
		t.Errorf("missing = %v", err)
	}
	if r := s.Rules(); len(r.Lanes) != 2 || r.Lanes[1].SupervisorCmd != "super-b" || r.Lanes[0].SupervisorCmd != "agent-a" {
		t.Errorf("rules = %+v", r)
	}
}

type fakeGit struct {
	cur      string
	branches map[string]bool
}

func (g fakeGit) CurrentBranch(context.Context) (string, error) { return g.cur, nil }
func (g fakeGit) BranchExists(_ context.Context, b string) (bool, error) {
	return g.branches[b], nil
}

// The one base rule: BASE_BRANCH, else the current branch when merging
// here, never main or master unless named; the queue alone takes
// GitHub's default branch.
func TestBaseRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	git := fakeGit{cur: "main", branches: map[string]bool{"main": true, "feature": true}}
	for _, c := range []struct {
		env   map[string]string
		git   fakeGit
		use   BaseUse
		want  string
		kind  BaseErrorKind
		fails bool
	}{
		{nil, git, MergeHere, "main", BaseTrunk, true},
		{nil, fakeGit{cur: "master", branches: map[string]bool{"master": true}}, MergeHere, "master", BaseTrunk, true},
		{nil, fakeGit{cur: "mainline", branches: map[string]bool{"mainline": true}}, MergeHere, "mainline", 0, false},
		{nil, git, ReadHere, "main", 0, false},
		{map[string]string{"BASE_BRANCH": "main"}, git, MergeHere, "main", 0, false},
		{nil, fakeGit{cur: "feature", branches: git.branches}, MergeHere, "feature", 0, false},
		{nil, fakeGit{cur: "", branches: git.branches}, MergeHere, "", BaseDetached, true},
		{map[string]string{"BASE_BRANCH": "nope"}, git, MergeHere, "nope", BaseMissing, true},
		{map[string]string{"BASE_BRANCH": "dev"}, fakeGit{cur: "dev"}, MergeHere, "dev", BaseUnborn, true},
		{nil, git, OnGitHub, "", 0, false},
		{map[string]string{"BASE_BRANCH": "dev"}, git, OnGitHub, "dev", 0, false},
	} {
		s, _ := Resolve(Input{Scope: Run, Env: c.env})
		b, err := s.Base(ctx, c.git, c.use)
		var be *BaseError
		if c.fails != (err != nil) || c.fails && (!errors.As(err, &be) || be.Kind != c.kind) || b.Branch != c.want {
			t.Errorf("%v on %q (use %d): base %q, err %v", c.env, c.git.cur, c.use, b.Branch, err)
		}
	}
}

func TestCommandWord(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
		ok        bool
	}{
		{DefaultAgent, "claude", true},
		{"FOO=1 BAR='a b' codex exec --full-auto", "codex", true},
		{"exec ./bin/agent.sh -x", "./bin/agent.sh", true},
		{`'my agent' -p`, "my agent", true},
		{`"$HOME/bin/agent"`, "", false},
		{"$AGENT --x", "", false},
		{"go test ./... && make lint", "go", true},
		{"npm ci; npm run build", "npm", true},
		{"( cd web && npm test )", "", false},
		{"X=1", "", false},
		{"'unclosed", "", false},
	} {
		got, ok := CommandWord(c.cmd)
		if got != c.want || ok != c.ok {
			t.Errorf("CommandWord(%q) = %q, %v; want %q, %v", c.cmd, got, ok, c.want, c.ok)
		}
	}
}

func TestLookPathIn(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	path := strings.Join([]string{filepath.Join(dir, "nothing"), bin}, string(os.PathListSeparator))
	if p, ok := lookPathIn("tool", path, ""); !ok || p != filepath.Join(bin, "tool") {
		t.Errorf("tool: %q, %v", p, ok)
	}
	if _, ok := lookPathIn("data", path, ""); ok {
		t.Error("a file without an executable bit was found")
	}
	if _, ok := lookPathIn("bin", path, dir); ok {
		t.Error("a folder was found")
	}
	if p, ok := lookPathIn("./bin/tool", "", dir); !ok || p != filepath.Join(dir, "bin", "tool") {
		t.Errorf("./bin/tool from the top: %q, %v", p, ok)
	}
}

// AGENT_RUNNER=kubernetes needs its three settings, and refuses ATTACH
// (no terminal here for an agent in a pod).
func TestKubernetesRunner(t *testing.T) {
	t.Parallel()
	_, err := Resolve(Input{Scope: Run, Top: t.TempDir(), Env: map[string]string{"AGENT_RUNNER": "kubernetes", "K8S_IMAGE": "agent:1", "ATTACH": "1"}})
	for _, want := range []string{"AGENT_RUNNER=kubernetes needs K8S_NAMESPACE", "needs K8S_REMOTE", "ATTACH=1 cannot be used with AGENT_RUNNER=kubernetes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	s, err := Resolve(Input{Scope: Run, Top: t.TempDir(), Env: map[string]string{"AGENT_RUNNER": "kubernetes", "K8S_NAMESPACE": "a", "K8S_IMAGE": "i", "K8S_REMOTE": "r", "K8S_PENDING_SECONDS": "30"}})
	if err != nil || s.AgentRunner != "kubernetes" || s.K8s.Pending != 30*time.Second || s.K8s.Namespace != "a" {
		t.Fatalf("%+v %v", s.K8s, err)
	}
	if s, _ := Resolve(Input{Scope: Run, Top: t.TempDir()}); s.AgentRunner != "local" || s.K8s.Pending != 600*time.Second {
		t.Fatalf("defaults: %q %v", s.AgentRunner, s.K8s.Pending)
	}
	// The agents run in the pods (K8S_IMAGE): a CLI missing here stops
	// no run; the reviewer runs here and is still looked up.
	env := map[string]string{"AGENT_RUNNER": "kubernetes", "K8S_NAMESPACE": "a", "K8S_IMAGE": "i", "K8S_REMOTE": "r",
		"AGENT_CMD": "no-such-agent-cli", "SUPERVISOR_CMD": "no-such-supervisor-cli", "REVIEW_CMD": "no-such-reviewer-cli"}
	s, err = Resolve(Input{Scope: Run, Top: t.TempDir(), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Missing("/nonexistent", t.TempDir())
	if err == nil || strings.Contains(err.Error(), "no-such-agent-cli") || strings.Contains(err.Error(), "no-such-supervisor-cli") || !strings.Contains(err.Error(), "no-such-reviewer-cli") {
		t.Fatalf("missing under kubernetes: %v", err)
	}
}

// MERGE_BATCH_GATE is retired (issue 25: GATE_SLOTS replaces it, and every
// first-parent commit is gated): set in a file or the environment it is
// accepted, with a note naming what replaced it, not an error.
func TestRetiredSettingIsNoted(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, ConfigFile, "MERGE_BATCH_GATE=each\n")
	s, err := Resolve(Input{Scope: Run, Top: top, Env: map[string]string{"MERGE_BATCH_GATE": "top"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) != 2 {
		t.Fatalf("notes = %v, want one for the file and one for the environment", s.Notes)
	}
	for _, n := range s.Notes {
		if !n.Retired || !strings.Contains(n.String(), "MERGE_BATCH_GATE is retired") || !strings.Contains(n.String(), "GATE_SLOTS") {
			t.Errorf("note %q", n)
		}
	}
}
