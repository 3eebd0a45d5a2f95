// Package clean is `claudopilot clean`: remove what runs left behind.
package clean

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
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

// Run removes what runs left behind, each thing reported.
func Run(ctx context.Context, o *Options) error {
	c, err := open(ctx, o)
	if err != nil {
		return err
	}
	if o.Parked && !o.DryRun && c.lock == cmdutil.LockLive {
		return fmt.Errorf("clean: %s: stop it before clean --parked", cmdutil.LockHolder(c.holder))
	}
	for _, step := range []func(context.Context) error{c.prune, c.leftovers, c.issueWork, c.litterOfMerged, c.gates, c.staleLock} {
		if err := step(ctx); err != nil {
			return fmt.Errorf("clean: %w", err)
		}
	}
	switch {
	case c.removed == 0 && c.keptN > 0:
		fmt.Fprintln(o.App.S.Out, "nothing removed")
	case c.removed == 0:
		fmt.Fprintln(o.App.S.Out, "nothing to clean")
	}
	return nil
}

// open finds the repository, the roadmap, the base (by the one base rule,
// without the trunk guard: clean only reads the base) and the lock.
func open(ctx context.Context, o *Options) (*cleaner, error) {
	a := o.App
	git, err := cmdutil.OpenRepoFor(ctx, a, o.Dir)
	if err != nil {
		return nil, fmt.Errorf("clean: %w", err)
	}
	rm, err := roadmap.Load(o.Dir, roadmap.Options{})
	if err != nil {
		return nil, err
	}
	// A bad value elsewhere is run's and doctor's to report; a settings
	// file that cannot be read stops clean too.
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Flags: o.Flags, Env: a.Env, Top: git.Dir})
	var serr *settings.Error
	if errors.As(err, &serr) && serr.Unreadable() {
		return nil, err
	}
	b, err := s.Base(ctx, git, settings.ReadHere)
	var be *settings.BaseError
	if errors.As(err, &be) && be.Kind == settings.BaseDetached {
		return nil, errors.New("clean: HEAD is detached: name the base branch with --base or BASE_BRANCH")
	}
	if err != nil && (be == nil || be.Kind != settings.BaseMissing && be.Kind != settings.BaseUnborn) {
		return nil, fmt.Errorf("clean: %w", err)
	}
	c := &cleaner{a: a, git: git, dry: o.DryRun, o: o, rm: rm, base: b.Branch}
	if c.baseTip, err = git.RevParse(ctx, "refs/heads/"+c.base); err != nil {
		return nil, fmt.Errorf("clean: base branch %s does not exist", c.base)
	}
	if c.layout, err = engine.MakeLayout(git, o.Dir, c.base); err != nil {
		return nil, fmt.Errorf("clean: %w", err)
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return nil, fmt.Errorf("clean: %w", err)
	}
	c.lockPath = state.LockPath(common)
	c.holder, c.lock = cmdutil.LockStatus(c.lockPath)
	return c, nil
}

// prune drops the registrations of worktrees whose folder is gone.
func (c *cleaner) prune(ctx context.Context) error {
	wts, err := c.git.Worktrees(ctx)
	if err != nil {
		return err
	}
	var stale []worktree.Worktree
	for _, wt := range wts {
		if wt.Prunable && !wt.Locked {
			stale = append(stale, wt)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	if !c.dry {
		if err := c.git.Prune(ctx); err != nil {
			return err
		}
	}
	for _, wt := range stale {
		c.did("pruned", "would prune", "stale worktree registration %s (its folder is gone)", c.rel(wt.Path))
	}
	return nil
}

// leftovers removes the leftovers of landed phases, and of parked ones
// when asked to; pending and running phases are never touched.
func (c *cleaner) leftovers(ctx context.Context) error {
	lefts, err := land.Leftovers(ctx, c.git, c.layout, c.rm)
	if err != nil {
		return err
	}
	var parkedLeft []*land.Leftover
	for _, l := range lefts {
		switch l.Kind() {
		case "active":
			continue
		case "parked":
			parkedLeft = append(parkedLeft, l)
			continue
		}
		if err := c.landed(ctx, l, c.base, c.baseTip); err != nil {
			return err
		}
	}
	return c.parked(ctx, parkedLeft, c.o.Parked, c.o.Yes, c.base, c.baseTip)
}

// issueWork lists the worktrees of issues (branch claudopilot/issue-N: a
// blocked issue, or one that went away while worked on) as kept: the
// queue continues one if its issue is queued again; clean never removes
// them.
func (c *cleaner) issueWork(ctx context.Context) error {
	wts, err := c.git.Worktrees(ctx)
	if err != nil {
		return err
	}
	for _, wt := range wts {
		if strings.HasPrefix(wt.Branch, "claudopilot/issue-") && !wt.Prunable {
			c.kept("%s on %s: an issue's work (the queue continues it if the issue is queued again; remove it by hand)", c.rel(wt.Path), wt.Branch)
		}
	}
	return nil
}

func (c *cleaner) litterOfMerged(ctx context.Context) error {
	return c.litter(ctx, c.layout, c.rm, c.lock == cmdutil.LockLive)
}

// gates removes the merge gate's worktrees when no run goes on.
func (c *cleaner) gates(ctx context.Context) error {
	if c.lock == cmdutil.LockLive {
		return nil
	}
	for _, gate := range land.GateDirs(c.layout) {
		if _, err := os.Stat(gate); err != nil {
			continue
		}
		if !c.dry {
			if err := c.git.RemoveWorktree(ctx, gate); err != nil {
				return err
			}
		}
		c.did("removed", "would remove", "the merge gate's worktree %s (the next merge makes it again)", c.rel(gate))
	}
	return nil
}

// staleLock removes a lock whose driver is dead, only if it is still the
// same dead holder's.
func (c *cleaner) staleLock(context.Context) error {
	if c.lock != cmdutil.LockStale {
		return nil
	}
	if !c.dry {
		if now, _ := state.ReadLock(c.lockPath); now.PID == c.holder.PID {
			if err := os.Remove(c.lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	who := "its driver died before writing it"
	if c.holder.PID > 0 {
		who = fmt.Sprintf("pid %d on %s is gone", c.holder.PID, c.holder.Host)
	}
	c.did("removed", "would remove", "stale lock %s (%s)", c.rel(c.lockPath), who)
	return nil
}

type cleaner struct {
	a       *cmdutil.App
	git     *worktree.Client
	dry     bool
	removed int
	keptN   int

	o        *Options
	rm       *roadmap.Roadmap
	layout   state.Layout
	base     string
	baseTip  string
	lockPath string
	holder   state.LockInfo
	lock     cmdutil.LockState
}

// did reports one removal, or with --dry-run what would be removed.
func (c *cleaner) did(done, would, format string, args ...any) {
	verb := done
	if c.dry {
		verb = would
	}
	c.removed++
	fmt.Fprintf(c.a.S.Out, "%s %s\n", verb, fmt.Sprintf(format, args...))
}

func (c *cleaner) kept(format string, args ...any) {
	c.keptN++
	fmt.Fprintf(c.a.S.Out, "kept %s\n", fmt.Sprintf(format, args...))
}

// rel names a path from the current folder.
func (c *cleaner) rel(p string) string { return cmdutil.RelTo(c.a.Cwd, p) }

// landed removes the leftovers of a merged phase, or of one no longer in
// the manifest, when the base contains its work.
func (c *cleaner) landed(ctx context.Context, l *land.Leftover, base, baseTip string) error {
	why := l.Describe()
	in, err := l.OnBase(ctx, c.git, baseTip)
	if err != nil {
		return err
	}
	if !in {
		c.kept("%s: %s, but %s does not contain its tip", leftoverName(c, l), why, base)
		return nil
	}
	if l.Worktree != nil && !l.Worktree.Prunable {
		dirty, err := c.git.Dirty(ctx, l.Worktree.Path)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			c.kept("%s: %s, but its worktree has uncommitted changes (%s); remove it yourself with git worktree remove --force %s",
				leftoverName(c, l), why, cmdutil.CountNoun(len(dirty), "file"), c.rel(l.Worktree.Path))
			return nil
		}
		if !c.dry {
			if err := c.git.RemoveWorktree(ctx, l.Worktree.Path); err != nil {
				return err
			}
		}
		c.did("removed", "would remove", "worktree %s (%s)", c.rel(l.Worktree.Path), why)
	}
	if l.Branch != "" {
		if !c.dry {
			if err := c.git.DeleteBranch(ctx, l.Branch); err != nil {
				return err
			}
		}
		c.did("deleted", "would delete", "branch %s (%s; %s contains it)", l.Branch, why, base)
	}
	return nil
}

// litter removes what kills left of merged phases (land.FindLitter) and,
// when no run goes on, the record of the last foreign base move.
func (c *cleaner) litter(ctx context.Context, l state.Layout, rm *roadmap.Roadmap, live bool) error {
	var ids []string
	for _, n := range rm.Nodes {
		if n.State == manifest.Merged {
			ids = append(ids, n.ID)
		}
	}
	ls, err := land.FindLitter(ctx, c.git, l, ids)
	if err != nil {
		return err
	}
	if !c.dry {
		if err := land.RemoveLitter(ctx, c.git, ls); err != nil {
			return err
		}
	}
	for _, x := range ls {
		c.did("removed", "would remove", "%s (%s)", c.rel(x.Path), x.Describe())
	}
	moved := land.BaseMovedPath(l)
	if _, err := os.Stat(moved); err != nil || live {
		return nil
	}
	if !c.dry {
		if err := land.ForgetBaseMove(l); err != nil {
			return err
		}
	}
	c.did("removed", "would remove", "%s (the record of the last move of the base outside the driver, which status shows)", c.rel(moved))
	return nil
}

// parked removes the branches and worktrees of parked phases, only when
// asked to and confirmed; otherwise it says what it kept.
func (c *cleaner) parked(ctx context.Context, ls []*land.Leftover, remove, yes bool, base, baseTip string) error {
	if len(ls) == 0 {
		return nil
	}
	ahead := make([]string, len(ls))
	for i, l := range ls {
		ahead[i] = "unmerged work"
		if l.Branch != "" {
			if n, err := c.git.CountCommits(ctx, baseTip, l.Tip); err == nil {
				ahead[i] = fmt.Sprintf("%s not on %s", cmdutil.CountNoun(n, "commit"), base)
			}
		}
	}
	if !remove {
		for i, l := range ls {
			c.kept("%s: %s (%s); clean --parked removes it", leftoverName(c, l), l.Describe(), ahead[i])
		}
		return nil
	}
	if !c.dry && !yes {
		for i, l := range ls {
			fmt.Fprintf(c.a.S.Err, "  %s: %s (%s)\n", leftoverName(c, l), l.Describe(), ahead[i])
		}
		noun := "branches with their"
		if len(ls) == 1 {
			noun = "branch with its"
		}
		fmt.Fprintf(c.a.S.Err, "remove %d parked %s unmerged work? [y/N] ", len(ls), noun)
		if !cmdutil.Confirmed(c.a) {
			fmt.Fprintln(c.a.S.Err)
			for _, l := range ls {
				c.kept("%s: %s (not confirmed)", leftoverName(c, l), l.Describe())
			}
			return nil
		}
	}
	for i, l := range ls {
		if l.Worktree != nil && !l.Worktree.Prunable {
			why := l.Describe()
			if dirty, err := c.git.Dirty(ctx, l.Worktree.Path); err == nil && len(dirty) > 0 {
				why += fmt.Sprintf(", with %s of uncommitted changes", cmdutil.CountNoun(len(dirty), "file"))
			}
			if !c.dry {
				if err := c.git.RemoveWorktree(ctx, l.Worktree.Path); err != nil {
					return err
				}
			}
			c.did("removed", "would remove", "worktree %s (%s)", c.rel(l.Worktree.Path), why)
		}
		if l.Branch != "" {
			if !c.dry {
				if err := c.git.DeleteBranch(ctx, l.Branch); err != nil {
					return err
				}
			}
			c.did("deleted", "would delete", "branch %s (%s; %s)", l.Branch, l.Describe(), ahead[i])
		}
	}
	return nil
}

// leftoverName is how reports call a leftover: its branch, else its
// worktree.
func leftoverName(c *cleaner, l *land.Leftover) string {
	if l.Branch != "" {
		return l.Branch
	}
	return c.rel(l.Worktree.Path)
}
