package scanner

import (
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

//go:embed contract.md
var contractText string

// contract is parsed at its first use, not at every driver start (issue 23).
var contract = sync.OnceValue(func() *template.Template { return template.Must(template.New("contract").Parse(contractText)) })

// Runner runs one scanner: a read-only process in a detached, read-only
// checkout of the base's tip (the reviewers' kind of run: package work's
// ReviewProcess), confined by the sandbox when one is set; its output is
// its log.
type Runner struct {
	Git    *worktree.Client
	Layout state.Layout
	// Cmd is SCANNER_CMD: it runs every scanner whatever lane lends the
	// slot ("": the lane's worker command, else Agent).
	Cmd string
	// Agent is the agent command a scanner runs without a lane's (a run
	// by hand: the first lane's, else AGENT_CMD).
	Agent string
	// DefaultCooldown is DEFAULT_RATE_LIMIT_SLEEP: the hold after a
	// usage limit whose output names no reset.
	DefaultCooldown time.Duration
	// Env is the scanner's environment: the agents' (no token, no
	// secret-named variables); the contract's variables are added.
	Env    []string
	Redact *secret.Redactor
	// Head fetches the base and returns its tip, the commit scanned.
	Head func(ctx context.Context) (string, error)
	Base func() string // the base's name, for the prompt
	// Focus is SCANNER_FOCUS: the paths or globs scanners look at.
	Focus []string
	// Max is SCANNER_MAX_ISSUES: the findings a scanner is asked for.
	Max int

	StuckTimeout, Timeout, KillGrace time.Duration
	LogCap                           int64
	Sandbox                          *sandbox.Config
}

// Output is one scanner run's result.
type Output struct {
	Candidates []Candidate
	Problems   []string // lines that looked like candidates and were not
	Log        string
	Head       string
	// Cooldown > 0: the scanner hit a usage limit (Limit says so): its
	// lane's breaker holds launches that long.
	Cooldown time.Duration
	Limit    string
}

// Lane is where a scanner runs: the lane that lent the slot, its worker
// command and account ("" the user's own). The zero Lane: Agent, the
// user's account.
type Lane struct {
	ID, Cmd, Account string
}

// id is the scanner's node-like id, for its log folder and checkout.
func id(name string) string { return "scanner:" + name }

// Prompt is the scanner's full prompt: its own text, the project's
// CONTEXT.md, and the contract (focus, output format, bounds).
func (r *Runner) Prompt(set *Set, sc Scanner, head string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(strings.TrimRight(sc.Prompt, "\n") + "\n")
	if strings.TrimSpace(set.Context) != "" {
		b.WriteString("\n## About this project (" + Dir + "/" + ContextFile + ")\n\n")
		b.WriteString(strings.TrimRight(set.Context, "\n") + "\n")
	}
	err := contract().Execute(&b, map[string]any{"Base": r.base(), "Head": head, "Focus": strings.Join(r.Focus, ", "), "Max": max(r.Max, 1)})
	return b.Bytes(), err
}

// Run runs scanner sc of set on the base's tip, on lane on, and parses
// its output. A scanner that did not exit 0 yields no candidates: its
// error says why, and Output.Cooldown whether it hit a usage limit.
func (r *Runner) Run(ctx context.Context, set *Set, sc Scanner, on Lane) (Output, error) {
	var o Output
	head, err := r.Head(ctx)
	if err != nil {
		return o, fmt.Errorf("scanner %s: the base: %w", sc.Name, err)
	}
	o.Head = head
	prompt, err := r.Prompt(set, sc, head)
	if err != nil {
		return o, err
	}
	dir := r.Layout.LogDir(id(sc.Name))
	n, promptFile, err := work.ReserveRun(dir, "scanner")
	if err != nil {
		return o, fmt.Errorf("scanner %s: %w", sc.Name, err)
	}
	o.Log = filepath.Join(dir, fmt.Sprintf("scanner-%d.log", n))
	p := r.process(sc, on, head, prompt, promptFile, n, o.Log)
	if err := os.MkdirAll(filepath.Dir(p.Checkout), 0o755); err != nil {
		return o, err
	}
	out, res, err := p.Run(ctx)
	if err != nil {
		return o, fmt.Errorf("scanner %s: %w", sc.Name, err)
	}
	if why := ended(res); why != "" {
		o.Cooldown, o.Limit = r.limit(res)
		return o, fmt.Errorf("scanner %s %s (log %s)", sc.Name, why, o.Log)
	}
	o.Candidates, o.Problems = Parse(out)
	return o, nil
}

// process is scanner sc's run n on lane on: the read-only process in a
// detached checkout of head, with the lane's command (unless SCANNER_CMD)
// and account (CLAUDE_CONFIG_DIR; under the sandbox its private copy, as
// a worker's).
func (r *Runner) process(sc Scanner, on Lane, head string, prompt []byte, promptFile string, n int, log string) work.ReviewProcess {
	cmd := r.Cmd
	if strings.TrimSpace(cmd) == "" {
		cmd = cmp.Or(on.Cmd, r.Agent)
	}
	env := work.ReviewEnv(r.Env, "CLAUDOPILOT_ROLE=scanner", "CLAUDOPILOT_SCANNER="+sc.Name, "CLAUDOPILOT_PROMPT_FILE="+promptFile,
		"CLAUDOPILOT_BASE="+r.base(), "CLAUDOPILOT_SCANNER_HEAD="+head, "CLAUDOPILOT_SCANNER_MAX="+fmt.Sprint(max(r.Max, 1)))
	sb := r.Sandbox
	if on.Account != "" {
		env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") }), "CLAUDE_CONFIG_DIR="+on.Account)
		sb = sb.WithState(on.Account)
	}
	if on.ID != "" {
		env = append(env, "CLAUDOPILOT_LANE="+on.ID)
	}
	return work.ReviewProcess{
		Git: r.Git, Checkout: r.Layout.ReviewCheckout(id(sc.Name), n), Head: head, Cmd: cmd, Prompt: prompt, PromptFile: promptFile,
		LogPath: log, Redact: r.Redact, LogCap: r.LogCap, StuckTimeout: r.StuckTimeout, Timeout: r.Timeout, KillGrace: r.KillGrace,
		Sandbox: sb, Show: []string{r.Layout.LogDir(id(sc.Name))}, Env: env,
	}
}

// limit reads a failed scanner's last lines for a usage limit, as a
// worker's are read (proc.Classify): how long its lane is held, and why.
func (r *Runner) limit(res proc.Result) (time.Duration, string) {
	if proc.Classify(res.Tail) != proc.RateLimit {
		return 0, ""
	}
	now := time.Now()
	if d, ok := proc.ResetHint(res.Tail, now); ok {
		return d, "usage limit, resets " + now.Add(d).Local().Format("Jan 2 15:04")
	}
	return r.DefaultCooldown, "rate limited, no reset time given (DEFAULT_RATE_LIMIT_SLEEP)"
}

// ended says how a scanner process failed ("" when it exited 0).
func ended(res proc.Result) string {
	switch {
	case res.Reason != "" && res.Err != nil:
		return fmt.Sprintf("ended by %s: %v", res.Reason, res.Err)
	case res.Reason != "":
		return "ended by " + res.Reason
	case res.ExitCode != 0:
		return fmt.Sprintf("exited %d", res.ExitCode)
	}
	return ""
}

// ErrNoScanner: no scanner of that name.
var ErrNoScanner = errors.New("no scanner of that name")

func (r *Runner) base() string {
	if r.Base == nil {
		return ""
	}
	return r.Base()
}
