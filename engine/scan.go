package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/syncw"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// ScanSettings are the scanners' refill settings (docs/queue.md,
// "Scanners and refill").
type ScanSettings struct {
	Threshold int           // REFILL_THRESHOLD (0: no refill)
	Interval  time.Duration // SCANNER_INTERVAL_MINUTES
	Max       int           // SCANNER_MAX_ISSUES
	Cmd       string        // SCANNER_CMD ("": the agent)
	Focus     []string      // SCANNER_FOCUS
}

// Scanners is what `claudopilot scanners` works with: the repository's
// scanners and a refill bound to a queue.
type Scanners struct {
	Set    *scanner.Set
	Refill *scanner.Refill
	Ledger *scanner.Ledger
}

// tracker files the scanners' proposals into the queue's GitHub.
type tracker struct{ t *issues.Tracker }

func (t tracker) OpenIssues(ctx context.Context) ([]scanner.Open, error) {
	is, err := t.t.OpenIssues(ctx)
	var out []scanner.Open
	for _, i := range is {
		out = append(out, scanner.Open{Number: i.Number, Title: i.Title, Body: i.Body})
	}
	return out, err
}

func (t tracker) FileIssue(ctx context.Context, title, body string, labels []string) (int, error) {
	return t.t.FileIssue(ctx, title, body, labels)
}

// newRefill composes the refill of queue q: the repository's scanners,
// run as read-only agents on the base's tip (SCANNER_CMD, else the
// command of the lane that lends the slot; by hand, the first lane's) in
// the run's sandbox, filing into q's
// repository with SCANNER_LABEL. A scanner file that cannot be read is an
// error naming it.
func (e *Engine) newRefill(q *issues.Queue, qs *QueueSetup) (*scanner.Refill, error) {
	set, err := scanner.Load(e.Layout.Top)
	if err != nil {
		return nil, &SettingsError{Err: err}
	}
	sc := qs.Scan
	agent := e.Settings.Agent
	if ls := e.Settings.Lanes.Lanes; len(ls) > 0 {
		agent = ls[0].Cmd
	}
	labels := qs.Cfg.Labels
	refused := []string{labels.Ready, labels.Claim, labels.Blocked, labels.Review, labels.Approval}
	ledger := &scanner.Ledger{Path: scanner.LedgerPath(e.Layout.StateDir())}
	logw := syncw.New(e.log)
	return &scanner.Refill{
		Set: set, Ledger: ledger, Threshold: sc.Threshold, Interval: sc.Interval,
		Log: func(format string, args ...any) {
			fmt.Fprintf(logw, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
		},
		Runner: &scanner.Runner{
			Git: e.Git.WithEnv(q.AgentEnvironment()), Layout: e.Layout, Cmd: sc.Cmd, Agent: agent, DefaultCooldown: e.Settings.RateSleep,
			Env: q.AgentEnvironment(), Redact: e.redact,
			Head: q.BaseTip, Base: q.Base, Focus: sc.Focus, Max: sc.Max,
			StuckTimeout: e.Settings.Stuck, Timeout: e.Settings.AgentTimeout, LogCap: int64(e.Settings.LogCapMB) << 20,
			KillGrace: 5 * time.Second, Sandbox: e.Settings.Sandbox,
		},
		Filer: &scanner.Filer{
			Tracker: tracker{q.Tracker()}, Ledger: ledger, Label: qs.Cfg.ScannerLabel, Redact: e.redact, Max: sc.Max,
			Refused: func(l string) bool {
				for _, r := range refused {
					if strings.EqualFold(l, r) {
						return true
					}
				}
				return false
			},
		},
	}, nil
}

// OpenScanners composes the refill outside a run, for `claudopilot
// scanners run`: the repository's scanners, the queue's GitHub (its base:
// BASE_BRANCH, else the repository's default branch), the run's agent,
// sandbox and redaction. It takes no lock: a scanner writes nothing in
// the repository but its log, its checkout and the ledger.
func OpenScanners(ctx context.Context, git *worktree.Client, s Settings, qs *QueueSetup, env []string, log io.Writer) (*scanner.Refill, error) {
	e := &Engine{Git: git, Layout: state.Layout{Top: git.Dir}, Settings: s}
	e.funnel(env, qs)
	e.log = logWriter{e: e, w: log}
	qs.Cfg.Base = s.Base
	q, _, err := qs.build(e.log, git)
	if err != nil {
		return nil, err
	}
	if err := q.ResolveBase(ctx); err != nil {
		return nil, err
	}
	return e.newRefill(q, qs)
}

// ScannerLedger is the scanner ledger of the repository at top.
func ScannerLedger(top string) *scanner.Ledger {
	return &scanner.Ledger{Path: scanner.LedgerPath(state.Layout{Top: top}.StateDir())}
}
