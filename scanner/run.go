package scanner

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

var contract = template.Must(template.New("contract").Parse(contractText))

// Runner runs one scanner: a read-only process in a detached, read-only
// checkout of the base's tip (the reviewers' kind of run: package work's
// ReviewProcess), confined by the sandbox when one is set; its output is
// its log.
type Runner struct {
	Git    *worktree.Client
	Layout state.Layout
	// Cmd runs the scanner: SCANNER_CMD, else the agent command.
	Cmd string
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
	err := contract.Execute(&b, map[string]any{"Base": r.base(), "Head": head, "Focus": strings.Join(r.Focus, ", "), "Max": max(r.Max, 1)})
	return b.Bytes(), err
}

// Run runs scanner sc of set on the base's tip and parses its output. A
// scanner that did not exit 0 yields no candidates: its error says why.
func (r *Runner) Run(ctx context.Context, set *Set, sc Scanner) (Output, error) {
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
	p := work.ReviewProcess{
		Git: r.Git, Checkout: r.Layout.ReviewCheckout(id(sc.Name), n), Head: head, Cmd: r.Cmd, Prompt: prompt, PromptFile: promptFile,
		LogPath: o.Log, Redact: r.Redact, LogCap: r.LogCap, StuckTimeout: r.StuckTimeout, Timeout: r.Timeout, KillGrace: r.KillGrace,
		Sandbox: r.Sandbox, Show: []string{dir},
		Env: work.ReviewEnv(r.Env, "CLAUDOPILOT_ROLE=scanner", "CLAUDOPILOT_SCANNER="+sc.Name, "CLAUDOPILOT_PROMPT_FILE="+promptFile,
			"CLAUDOPILOT_BASE="+r.base(), "CLAUDOPILOT_SCANNER_HEAD="+head, "CLAUDOPILOT_SCANNER_MAX="+fmt.Sprint(max(r.Max, 1))),
	}
	if err := os.MkdirAll(filepath.Dir(p.Checkout), 0o755); err != nil {
		return o, err
	}
	out, res, err := p.Run(ctx)
	if err != nil {
		return o, fmt.Errorf("scanner %s: %w", sc.Name, err)
	}
	if why := ended(res); why != "" {
		return o, fmt.Errorf("scanner %s %s (log %s)", sc.Name, why, o.Log)
	}
	o.Candidates, o.Problems = Parse(out)
	return o, nil
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
