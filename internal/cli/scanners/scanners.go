// Package scanners is `claudopilot scanners`: the scanners that refill
// the issue queue (docs/queue.md), listed, run by hand, switched off and
// on.
package scanners

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/scanner"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// Options are what scanners' arguments and flags say.
type Options struct {
	App    *cmdutil.App
	Verb   string // "" (list), run, off, on
	Name   string
	DryRun bool
	Flags  settings.Flags
}

// NewCmd is `claudopilot scanners`; runF runs the parsed options (Run
// when nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("scanners", "list the scanners that refill the issue queue, run one, switch one off or on", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "scanners", "scanners [run NAME [--dry-run] | off NAME | on NAME]", `
List the scanners: read-only agent runs that look at the base and file
what they find as issues labelled SCANNER_LABEL (agent-proposed), for a
maintainer to queue by adding READY_LABEL. The built-in ones are bugs,
missing-tests, docs-drift, security, performance, dependencies and todo;
claudopilot/scanners/NAME.md replaces or adds one, and
claudopilot/scanners/CONTEXT.md is given to every scanner. The list shows
each scanner's last run (from .claudopilot/state/scans.jsonl).

scanners run NAME runs one scanner now, on a read-only checkout of the
base's tip, and files what it found that is not filed already (the scanner
ledger, an open issue's fingerprint or title); with --dry-run it prints
what it would file and files nothing. scanners off NAME keeps the refill
from running it; on NAME lets it again.

The queue's settings apply (GITHUB_TOKEN, GH_REPO, SCANNER_CMD, SCANNER_FOCUS,
SCANNER_MAX_ISSUES, …: docs/queue.md). Exit codes: 0 done; 1 a scanner or
GitHub failed; 64 misuse (no such scanner).`,
		"  claudopilot scanners\n  claudopilot scanners run security --dry-run\n  claudopilot scanners off performance")
	settings.AddFlags(fs, settings.ForScope(settings.Queue))
	dry := fs.Bool("dry-run", false, "scanners run: print what the scanner would file, file nothing")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	o := &Options{App: a, DryRun: *dry, Flags: fs}
	switch {
	case fs.NArg() == 0:
	case fs.NArg() == 2 && (fs.Arg(0) == "run" || fs.Arg(0) == "off" || fs.Arg(0) == "on"):
		o.Verb, o.Name = fs.Arg(0), fs.Arg(1)
	default:
		return nil, cmdutil.UsageErrorf("scanners: want `scanners`, `scanners run NAME [--dry-run]`, `scanners off NAME` or `scanners on NAME`")
	}
	if o.DryRun && o.Verb != "run" {
		return nil, cmdutil.UsageErrorf("scanners: --dry-run goes with `scanners run NAME`")
	}
	return o, nil
}

// Run lists, runs or switches the scanners.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	git, err := a.OpenRepo(ctx, a.Cwd)
	if err != nil {
		return err
	}
	set, err := scanner.Load(git.Dir)
	if err != nil {
		return err
	}
	ledger := engine.ScannerLedger(git.Dir)
	if o.Name != "" {
		if _, ok := set.Find(o.Name); !ok {
			return cmdutil.UsageErrorf("scanners: no scanner %q (scanners: %s)", o.Name, strings.Join(set.Names(), ", "))
		}
	}
	switch o.Verb {
	case "":
		return list(a, set, ledger)
	case "off", "on":
		r := &scanner.Refill{Set: set, Ledger: ledger}
		if err := r.Switch(o.Name, o.Verb == "on"); err != nil {
			return err
		}
		fmt.Fprintf(a.S.Out, "scanner %s %s\n", o.Name, o.Verb)
		return nil
	}
	return runOne(ctx, o, git)
}

// list prints each scanner with where its prompt comes from and its last
// run.
func list(a *cmdutil.App, set *scanner.Set, ledger *scanner.Ledger) error {
	st, err := ledger.Read()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(a.S.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCANNER\tPROMPT\tSWITCH\tLAST RUN\tFILED")
	for _, sc := range set.Scanners {
		sw, last, filed := "on", "never", "-"
		if st.Off[sc.Name] {
			sw = "off"
		}
		if r, ok := st.LastRun[sc.Name]; ok {
			last = r.At.Local().Format("2006-01-02 15:04")
			filed = fmt.Sprint(r.Filed)
			if r.Error != "" {
				filed = "failed: " + r.Error
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sc.Name, sc.From, sw, last, filed)
	}
	return tw.Flush()
}

// runOne runs one scanner with the queue's settings and reports what it
// filed (or, dry, would file).
func runOne(ctx context.Context, o *Options, git *worktree.Client) error {
	a := o.App
	s, err := settings.Resolve(settings.Input{Scope: settings.Queue, Flags: o.Flags, Env: a.Env, Top: git.Dir})
	if err != nil {
		return err
	}
	// What a scanner needs of the run's settings, and nothing more: with
	// SCANNER_CMD set, the agent need not be installed.
	es := engine.Settings{Agent: s.Agent, Lanes: wire.Lanes(s, a.Env), Base: s.BaseBranch,
		Stuck: s.StuckTimeout, AgentTimeout: s.AgentTimeout, LogCapMB: s.LogCapMB}
	if es.Sandbox, err = wire.Sandbox(ctx, s, git, a.Env); err != nil {
		return err
	}
	qc, ghc, err := wire.Queue(ctx, s, git, a.Env)
	if err != nil {
		return err
	}
	qs := &engine.QueueSetup{Cfg: qc, GitHub: ghc, Scan: wire.Scan(s)}
	refill, err := engine.OpenScanners(ctx, git, es, qs, wire.Env(a.Env).Driver(), a.S.Err)
	if err != nil {
		return err
	}
	rep, err := refill.Run(ctx, o.Name, o.DryRun)
	for _, p := range rep.Problems {
		fmt.Fprintf(a.S.Err, "claudopilot: scanner %s: not a candidate: %s\n", o.Name, p)
	}
	if err != nil {
		return fmt.Errorf("scanner %s: %w", o.Name, err)
	}
	for _, c := range rep.Would {
		fmt.Fprintf(a.S.Out, "would file: %s  [%s]\n", c.Title, c.Fingerprint)
	}
	for _, f := range rep.Filed {
		fmt.Fprintf(a.S.Out, "filed #%d: %s\n", f.Number, f.Title)
	}
	for _, d := range rep.Dropped {
		fmt.Fprintf(a.S.Out, "not filed: %s: %s\n", d.Candidate.Title, d.Why)
	}
	if len(rep.Would)+len(rep.Filed)+len(rep.Dropped) == 0 {
		fmt.Fprintf(a.S.Out, "scanner %s found nothing (log %s)\n", o.Name, rep.Log)
	}
	return nil
}
