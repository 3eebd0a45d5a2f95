// Package clean is `claudopilot clean`: remove what runs left behind.
package clean

import (
	"context"
	"errors"
	"fmt"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
)

const cleanAbout = `
Remove what runs left behind:

  - the worktree (.claudopilot/worktrees/<id>) and branch (auto/<id>) of
    every [merged] phase, and of phases no longer in the manifest, but only
    when the base branch contains the branch's tip, so no work is lost; a
    worktree with uncommitted changes is kept;
  - registrations of worktrees whose folder is gone (git worktree prune);
  - what kills left of [merged] phases: the driver's notes about their
    worktrees (.claudopilot/state/attempt-<id>, environment-<id>,
    gating-<id>, merging-<id>) and a worktree folder git no longer lists
    (its removal was cut off);
  - the merge gate's worktree (.claudopilot/gate), and the record of the
    last move of the base outside the driver
    (.claudopilot/state/base-moved.json), when no run goes on;
  - a stale lock: <git common dir>/claudopilot.lock whose driver is dead.

Issue worktrees (branch claudopilot/issue-N: a blocked issue, or one that
went away while worked on) are listed as kept, never removed.

Parked phases ([blocked] or [failed]) keep their branch and worktree, which
hold the agent's unmerged work, unless --parked is given; then clean asks
first ("remove N parked branches with their unmerged work? [y/N]") unless
--yes is given too. --parked is refused while a run holds the lock. Pending
and running phases are never touched: a run resumes them.

Each thing removed is reported; --dry-run only reports. The base branch is
--base, else BASE_BRANCH (environment, then claudopilot.config), else the
current branch.`

const cleanExample = `  claudopilot clean --dry-run
  claudopilot clean roadmap/
  claudopilot clean --parked --yes`

// Options are what clean's flags and arguments say.
type Options struct {
	App                 *cmdutil.App
	Dir                 string // the roadmap folder
	Parked, Yes, DryRun bool
	Flags               settings.Flags // --base
}

// NewCmd is `claudopilot clean`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("clean", "remove worktrees and branches of merged phases, stale registrations and a stale lock", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "clean", "clean [ROADMAP_DIR] [--parked] [--yes] [--dry-run] [--base BRANCH]", cleanAbout, cleanExample)
	parked := fs.Bool("parked", false, "also remove the branches and worktrees of [blocked] and [failed] phases, with their unmerged work")
	yes := fs.Bool("yes", false, "with --parked: do not ask")
	dryRun := fs.Bool("dry-run", false, "report what would be removed, remove nothing")
	fs.String("base", "", "the base branch (default: BASE_BRANCH, else the current branch)")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 1 {
		return nil, cmdutil.UsageErrorf("clean takes at most one ROADMAP_DIR, got %d", fs.NArg())
	}
	dir, err := cmdutil.FindRoadmapDir(ctx, a, fs.Arg(0))
	if err != nil {
		return nil, err
	}
	return &Options{App: a, Dir: dir, Parked: *parked, Yes: *yes, DryRun: *dryRun, Flags: fs}, nil
}

// Run removes what runs left behind, each thing reported. What goes and
// what stays is engine.PlanClean's to decide; clean asks before removing
// parked work and tells what it did.
func Run(ctx context.Context, o *Options) error {
	opt, err := open(ctx, o)
	if err != nil {
		return err
	}
	plan, err := engine.PlanClean(ctx, opt)
	var refused *engine.CleanRefusedError
	if errors.As(err, &refused) {
		return fmt.Errorf("clean: %s: stop it before clean --parked", cmdutil.LockHolder(refused.Holder))
	}
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	r := &report{a: o.App, base: plan.Base, dry: o.DryRun}
	if ask := plan.ParkedWork(); len(ask) > 0 && !o.DryRun && !o.Yes && !r.confirm(ask) {
		plan.KeepParked()
	}
	for _, it := range plan.Items {
		if !o.DryRun {
			if err := plan.Remove(ctx, it); err != nil {
				return fmt.Errorf("clean: %w", err)
			}
		}
		r.tell(it)
	}
	switch {
	case r.removed == 0 && r.kept > 0:
		fmt.Fprintln(o.App.S.Out, "nothing removed")
	case r.removed == 0:
		fmt.Fprintln(o.App.S.Out, "nothing to clean")
	}
	return nil
}

// open finds the repository, the roadmap, the base (by the one base rule,
// without the trunk guard: clean only reads the base) and the layout.
func open(ctx context.Context, o *Options) (engine.CleanOptions, error) {
	a := o.App
	git, err := cmdutil.OpenRepoFor(ctx, a, o.Dir)
	if err != nil {
		return engine.CleanOptions{}, fmt.Errorf("clean: %w", err)
	}
	rm, err := roadmap.Load(o.Dir, roadmap.Options{})
	if err != nil {
		return engine.CleanOptions{}, err
	}
	// A bad value elsewhere is run's and doctor's to report; a settings
	// file that cannot be read stops clean too.
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Flags: o.Flags, Env: a.Env, Top: git.Dir})
	var serr *settings.Error
	if errors.As(err, &serr) && serr.Unreadable() {
		return engine.CleanOptions{}, err
	}
	b, err := s.Base(ctx, git, settings.ReadHere)
	var be *settings.BaseError
	if errors.As(err, &be) && be.Kind == settings.BaseDetached {
		return engine.CleanOptions{}, errors.New("clean: HEAD is detached: name the base branch with --base or BASE_BRANCH")
	}
	if err != nil && (be == nil || be.Kind != settings.BaseMissing && be.Kind != settings.BaseUnborn) {
		return engine.CleanOptions{}, fmt.Errorf("clean: %w", err)
	}
	layout, err := engine.MakeLayout(git, o.Dir, b.Branch)
	if err != nil {
		return engine.CleanOptions{}, fmt.Errorf("clean: %w", err)
	}
	return engine.CleanOptions{Git: git, Layout: layout, Roadmap: rm, Base: b.Branch, Parked: o.Parked, DryRun: o.DryRun}, nil
}

// report tells each item of a clean: what went (or, with --dry-run, would
// go) and what stayed, and why.
type report struct {
	a             *cmdutil.App
	base          string
	dry           bool
	removed, kept int
}

// confirm lists the parked work about to go on stderr and asks.
func (r *report) confirm(ask []engine.CleanItem) bool {
	for _, it := range ask {
		fmt.Fprintf(r.a.S.Err, "  %s: %s (%s)\n", r.name(it), it.Why, r.ahead(it))
	}
	noun := "branches with their"
	if len(ask) == 1 {
		noun = "branch with its"
	}
	fmt.Fprintf(r.a.S.Err, "remove %d parked %s unmerged work? [y/N] ", len(ask), noun)
	if cmdutil.Confirmed(r.a) {
		return true
	}
	fmt.Fprintln(r.a.S.Err)
	return false
}

// tell reports one item.
func (r *report) tell(it engine.CleanItem) {
	if it.Keep != "" {
		r.kept++
		fmt.Fprintf(r.a.S.Out, "kept %s\n", r.keptText(it))
		return
	}
	done, would := "removed", "would remove"
	switch it.Kind {
	case engine.CleanRegistration:
		done, would = "pruned", "would prune"
	case engine.CleanBranch:
		done, would = "deleted", "would delete"
	}
	verb := done
	if r.dry {
		verb = would
	}
	r.removed++
	fmt.Fprintf(r.a.S.Out, "%s %s\n", verb, r.goneText(it))
}

// goneText says what an item that goes is.
func (r *report) goneText(it engine.CleanItem) string {
	switch it.Kind {
	case engine.CleanRegistration:
		return fmt.Sprintf("stale worktree registration %s (its folder is gone)", r.rel(it.Path))
	case engine.CleanWorktree:
		why := it.Why
		if it.Parked && it.Dirty > 0 {
			why += fmt.Sprintf(", with %s of uncommitted changes", cmdutil.CountNoun(it.Dirty, "file"))
		}
		return fmt.Sprintf("worktree %s (%s)", r.rel(it.Path), why)
	case engine.CleanBranch:
		if it.Parked {
			return fmt.Sprintf("branch %s (%s; %s)", it.Branch, it.Why, r.ahead(it))
		}
		return fmt.Sprintf("branch %s (%s; %s contains it)", it.Branch, it.Why, r.base)
	case engine.CleanBaseMove:
		return fmt.Sprintf("%s (the record of the last move of the base outside the driver, which status shows)", r.rel(it.Path))
	case engine.CleanGate:
		return fmt.Sprintf("the merge gate's worktree %s (the next merge makes it again)", r.rel(it.Path))
	case engine.CleanLock:
		return fmt.Sprintf("stale lock %s (%s)", r.rel(it.Path), it.Why)
	}
	return fmt.Sprintf("%s (%s)", r.rel(it.Path), it.Why) // litter
}

// keptText says what a kept item is and why it stays.
func (r *report) keptText(it engine.CleanItem) string {
	switch it.Keep {
	case engine.KeptNotOnBase:
		return fmt.Sprintf("%s: %s, but %s does not contain its tip", r.name(it), it.Why, r.base)
	case engine.KeptDirty:
		return fmt.Sprintf("%s: %s, but its worktree has uncommitted changes (%s); remove it yourself with git worktree remove --force %s",
			r.name(it), it.Why, cmdutil.CountNoun(it.Dirty, "file"), r.rel(it.Path))
	case engine.KeptParked:
		return fmt.Sprintf("%s: %s (%s); clean --parked removes it", r.name(it), it.Why, r.ahead(it))
	case engine.KeptUnconfirmed:
		return fmt.Sprintf("%s: %s (not confirmed)", r.name(it), it.Why)
	}
	return fmt.Sprintf("%s on %s: an issue's work (the queue continues it if the issue is queued again; remove it by hand)", r.rel(it.Path), it.Branch)
}

// name is how reports call a phase's work: its branch, else its worktree.
func (r *report) name(it engine.CleanItem) string {
	if it.Branch != "" {
		return it.Branch
	}
	return r.rel(it.Path)
}

// ahead says what a parked branch holds that the base lacks.
func (r *report) ahead(it engine.CleanItem) string {
	if it.Ahead < 0 {
		return "unmerged work"
	}
	return fmt.Sprintf("%s not on %s", cmdutil.CountNoun(it.Ahead, "commit"), r.base)
}

// rel names a path from the current folder.
func (r *report) rel(p string) string { return cmdutil.RelTo(r.a.Cwd, p) }
