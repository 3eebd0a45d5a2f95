// Package promote is `claudopilot promote`: one round of the promote loop
// by hand (docs/queue.md, "Promote loop").
package promote

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/wire"
	pr "github.com/claudopilot/claudopilot/promote"
	"github.com/claudopilot/claudopilot/settings"
)

// Options are what promote's flags say.
type Options struct {
	App   *cmdutil.App
	Now   bool
	To    string
	Flags settings.Flags
}

// NewCmd is `claudopilot promote`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("promote", "promote green work from the base along PROMOTE_TO now", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "promote", "promote [--now] [--to BRANCH] [flags]", `
Run one round of the promote loop: for each step of the chain (the base,
then PROMOTE_TO's branches in order) that is due (PROMOTE_EVERY_HOURS since
its last promotion or red try), when GitHub's checks on the source's head
are green, open (or bring up to date) a pull request from the source to the
next branch with the changelog of what it brings, wait for its checks
(CHECKS_GRACE, CHECKS_TIMEOUT) and merge it by head SHA with a merge commit.
A red step is reported (NOTIFY_CMD's promote-red event) and stops the
round; it is tried again at the next interval. A merged step is announced
(NOTIFY_CMD's announce event, with the changelog). A running queue does
the same every POLL_SECONDS.

A repository that allows no merge commits is refused. The queue's settings
apply (GITHUB_TOKEN, GH_REPO, BASE_BRANCH, …: docs/queue.md). Exit codes: 0
every step promoted, current, waiting or not due; 1 a step is red (or
GitHub failed); 64 misuse (no PROMOTE_TO, a --to not in it, no merge
commits allowed).`, "  PROMOTE_TO='staging production' claudopilot promote\n  claudopilot promote --now --to staging")
	settings.AddFlags(fs, settings.ForScope(settings.Queue))
	now := fs.Bool("now", false, "promote every step now, whatever PROMOTE_EVERY_HOURS says")
	to := fs.String("to", "", "stop the chain at this branch of PROMOTE_TO")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, cmdutil.UsageErrorf("promote takes no arguments")
	}
	return &Options{App: a, Now: *now, To: *to, Flags: fs}, nil
}

// Run runs one round and prints each step's outcome.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	git, err := a.OpenRepo(ctx, a.Cwd)
	if err != nil {
		return err
	}
	s, err := settings.Resolve(settings.Input{Scope: settings.Queue, Flags: o.Flags, Env: a.Env, Top: git.Dir})
	if err != nil {
		return err
	}
	if len(s.PromoteTo) == 0 {
		return cmdutil.UsageErrorf("promote: PROMOTE_TO names no branch (e.g. PROMOTE_TO=\"staging production\")")
	}
	qc, ghc, err := wire.Queue(ctx, s, git, a.Env)
	if err != nil {
		return err
	}
	qs := &engine.QueueSetup{Cfg: qc, GitHub: ghc, Promote: wire.Promote(s)}
	p, done, err := engine.OpenPromoter(ctx, git, s.BaseBranch, qs, wire.Env(a.Env).Driver(), s.Notify, a.S.Err)
	if err != nil {
		return err
	}
	defer done()
	if _, err := p.Chain(o.To); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	rs, err := p.Round(ctx, o.Now, o.To)
	red := 0
	for _, r := range rs {
		line := fmt.Sprintf("%s → %s: %s", r.From, r.To, r.Kind)
		if r.PR != 0 {
			line += fmt.Sprintf(" (pull request #%d)", r.PR)
		}
		if r.Why != "" {
			line += ": " + r.Why
		}
		fmt.Fprintln(a.S.Out, line)
		if r.Kind == pr.Red {
			red++
		}
	}
	if err != nil {
		return err
	}
	if red > 0 {
		return fmt.Errorf("promote: %d step(s) red", red)
	}
	return nil
}
