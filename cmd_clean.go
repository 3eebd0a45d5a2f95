package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/worktree"
)

const cleanAbout = `
Remove what runs left behind:

  - the worktree (.claudopilot/worktrees/<id>) and branch (auto/<id>) of
    every [merged] phase, and of phases no longer in the manifest, but only
    when the base branch contains the branch's tip, so no work is lost; a
    worktree with uncommitted changes is kept;
  - registrations of worktrees whose folder is gone (git worktree prune);
  - the merge gate's worktree (.claudopilot/gate), when no run goes on;
  - a stale lock: <git common dir>/claudopilot.lock whose driver is dead.

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

func cmdClean(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "clean", "clean [ROADMAP_DIR] [--parked] [--yes] [--dry-run] [--base BRANCH]", cleanAbout, cleanExample)
	parked := fs.Bool("parked", false, "also remove the branches and worktrees of [blocked] and [failed] phases, with their unmerged work")
	yes := fs.Bool("yes", false, "with --parked: do not ask")
	dryRun := fs.Bool("dry-run", false, "report what would be removed, remove nothing")
	fs.String("base", "", "the base branch (default: BASE_BRANCH, else the current branch)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf("clean takes at most one ROADMAP_DIR, got %d", fs.NArg())
	}
	dir, err := findRoadmapDir(ctx, a, fs.Arg(0))
	if err != nil {
		return err
	}
	git, err := openRepoFor(ctx, a, dir)
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	rm, err := roadmap.Load(dir, roadmap.Options{})
	if err != nil {
		return err
	}
	ks := []knob{{env: "BASE_BRANCH", flag: "base", kind: "string"}}
	file, _, err := readConfig(git.Dir, runKnobs())
	if err != nil {
		return err
	}
	base := resolveWith(fs, ks, a.env, file, nil).str("BASE_BRANCH")
	if base == "" {
		if base, err = git.CurrentBranch(ctx); err != nil {
			return fmt.Errorf("clean: %w", err)
		}
		if base == "" {
			return errors.New("clean: HEAD is detached: name the base branch with --base or BASE_BRANCH")
		}
	}
	baseTip, err := git.RevParse(ctx, "refs/heads/"+base)
	if err != nil {
		return fmt.Errorf("clean: base branch %s does not exist", base)
	}
	layout, err := engine.MakeLayout(git, dir, base)
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	lockPath := filepath.Join(common, "claudopilot.lock")
	holder, lock := lockStatus(lockPath)
	if *parked && !*dryRun && lock == lockLive {
		return fmt.Errorf("clean: %s: stop it before clean --parked", lockHolder(holder))
	}

	c := &cleaner{a: a, git: git, dry: *dryRun}
	wts, err := git.Worktrees(ctx)
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	var stale []worktree.Worktree
	for _, wt := range wts {
		if wt.Prunable && !wt.Locked {
			stale = append(stale, wt)
		}
	}
	if len(stale) > 0 {
		if !c.dry {
			if err := git.Prune(ctx); err != nil {
				return fmt.Errorf("clean: %w", err)
			}
		}
		for _, wt := range stale {
			c.did("pruned", "would prune", "stale worktree registration %s (its folder is gone)", c.rel(wt.Path))
		}
	}

	lefts, err := findLeftovers(ctx, git, layout, rm)
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	var parkedLeft []*leftover
	for _, l := range lefts {
		switch l.kind() {
		case "active":
			continue
		case "parked":
			parkedLeft = append(parkedLeft, l)
			continue
		}
		if err := c.landed(ctx, l, base, baseTip); err != nil {
			return fmt.Errorf("clean: %w", err)
		}
	}
	if err := c.parked(ctx, parkedLeft, *parked, *yes, base, baseTip); err != nil {
		return fmt.Errorf("clean: %w", err)
	}

	if gate := land.GateDir(layout); lock != lockLive {
		if _, err := os.Stat(gate); err == nil {
			if !c.dry {
				if err := git.RemoveWorktree(ctx, gate); err != nil {
					return fmt.Errorf("clean: %w", err)
				}
			}
			c.did("removed", "would remove", "the merge gate's worktree %s (the next merge makes it again)", c.rel(gate))
		}
	}
	if lock == lockStale {
		if !c.dry {
			// Remove it only if it is still the same dead holder's.
			if now, _ := scheduler.ReadLock(lockPath); now.PID == holder.PID {
				if err := os.Remove(lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("clean: %w", err)
				}
			}
		}
		who := "its driver died before writing it"
		if holder.PID > 0 {
			who = fmt.Sprintf("pid %d on %s is gone", holder.PID, holder.Host)
		}
		c.did("removed", "would remove", "stale lock %s (%s)", c.rel(lockPath), who)
	}
	switch {
	case c.removed == 0 && c.keptN > 0:
		fmt.Fprintln(a.s.Out, "nothing removed")
	case c.removed == 0:
		fmt.Fprintln(a.s.Out, "nothing to clean")
	}
	return nil
}

// openRepoFor opens the repository holding the roadmap folder, or the one
// around the current folder when the roadmap folder does not exist.
func openRepoFor(ctx context.Context, a *app, dir string) (*worktree.Client, error) {
	at := dir
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		at = a.cwd
	}
	git, err := worktree.Open(ctx, at, gitEnv(a))
	if errors.Is(err, worktree.ErrNotRepo) {
		return nil, fmt.Errorf("%s is not inside a git repository", at)
	}
	return git, err
}

type cleaner struct {
	a       *app
	git     *worktree.Client
	dry     bool
	removed int
	keptN   int
}

// did reports one removal, or with --dry-run what would be removed.
func (c *cleaner) did(done, would, format string, args ...any) {
	verb := done
	if c.dry {
		verb = would
	}
	c.removed++
	fmt.Fprintf(c.a.s.Out, "%s %s\n", verb, fmt.Sprintf(format, args...))
}

func (c *cleaner) kept(format string, args ...any) {
	c.keptN++
	fmt.Fprintf(c.a.s.Out, "kept %s\n", fmt.Sprintf(format, args...))
}

// rel names a path from the current folder.
func (c *cleaner) rel(p string) string { return relTo(c.a.cwd, p) }

// landed removes the leftovers of a merged phase, or of one no longer in
// the manifest, when the base contains its work.
func (c *cleaner) landed(ctx context.Context, l *leftover, base, baseTip string) error {
	why := l.describe()
	in, err := l.onBase(ctx, c.git, baseTip)
	if err != nil {
		return err
	}
	if !in {
		c.kept("%s: %s, but %s does not contain its tip", l.name(c), why, base)
		return nil
	}
	if l.wt != nil && !l.wt.Prunable {
		dirty, err := c.git.Dirty(ctx, l.wt.Path)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			c.kept("%s: %s, but its worktree has uncommitted changes (%s); remove it yourself with git worktree remove --force %s",
				l.name(c), why, countNoun(len(dirty), "file"), c.rel(l.wt.Path))
			return nil
		}
		if !c.dry {
			if err := c.git.RemoveWorktree(ctx, l.wt.Path); err != nil {
				return err
			}
		}
		c.did("removed", "would remove", "worktree %s (%s)", c.rel(l.wt.Path), why)
	}
	if l.branch != "" {
		if !c.dry {
			if err := c.git.DeleteBranch(ctx, l.branch); err != nil {
				return err
			}
		}
		c.did("deleted", "would delete", "branch %s (%s; %s contains it)", l.branch, why, base)
	}
	return nil
}

// parked removes the branches and worktrees of parked phases, only when
// asked to and confirmed; otherwise it says what it kept.
func (c *cleaner) parked(ctx context.Context, ls []*leftover, remove, yes bool, base, baseTip string) error {
	if len(ls) == 0 {
		return nil
	}
	ahead := make([]string, len(ls))
	for i, l := range ls {
		ahead[i] = "unmerged work"
		if l.branch != "" {
			if n, err := c.git.CountCommits(ctx, baseTip, l.tip); err == nil {
				ahead[i] = fmt.Sprintf("%s not on %s", countNoun(n, "commit"), base)
			}
		}
	}
	if !remove {
		for i, l := range ls {
			c.kept("%s: %s (%s); clean --parked removes it", l.name(c), l.describe(), ahead[i])
		}
		return nil
	}
	if !c.dry && !yes {
		for i, l := range ls {
			fmt.Fprintf(c.a.s.Err, "  %s: %s (%s)\n", l.name(c), l.describe(), ahead[i])
		}
		noun := "branches with their"
		if len(ls) == 1 {
			noun = "branch with its"
		}
		fmt.Fprintf(c.a.s.Err, "remove %d parked %s unmerged work? [y/N] ", len(ls), noun)
		if !confirmed(c.a) {
			fmt.Fprintln(c.a.s.Err)
			for _, l := range ls {
				c.kept("%s: %s (not confirmed)", l.name(c), l.describe())
			}
			return nil
		}
	}
	for i, l := range ls {
		if l.wt != nil && !l.wt.Prunable {
			why := l.describe()
			if dirty, err := c.git.Dirty(ctx, l.wt.Path); err == nil && len(dirty) > 0 {
				why += fmt.Sprintf(", with %s of uncommitted changes", countNoun(len(dirty), "file"))
			}
			if !c.dry {
				if err := c.git.RemoveWorktree(ctx, l.wt.Path); err != nil {
					return err
				}
			}
			c.did("removed", "would remove", "worktree %s (%s)", c.rel(l.wt.Path), why)
		}
		if l.branch != "" {
			if !c.dry {
				if err := c.git.DeleteBranch(ctx, l.branch); err != nil {
					return err
				}
			}
			c.did("deleted", "would delete", "branch %s (%s; %s)", l.branch, l.describe(), ahead[i])
		}
	}
	return nil
}

// confirmed reads one answer from stdin: y or yes, in any case.
func confirmed(a *app) bool {
	if a.s.In == nil {
		return false
	}
	line, _ := bufio.NewReader(a.s.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

func countNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// leftover is what runs left in the repository for one phase: its branch
// auto/<id>, its registered worktree under .claudopilot/worktrees, or both.
type leftover struct {
	id     string
	node   *roadmap.Node      // nil: the phase is not in the manifest
	branch string             // "auto/<id>" when that branch exists
	tip    string             // the branch's commit
	wt     *worktree.Worktree // its registered worktree, if any
}

// kind is "merged", "parked" ([blocked] or [failed]), "active" ([pending]
// or [running]: a run resumes it) or "unknown" (not in the manifest).
func (l *leftover) kind() string {
	if l.node == nil {
		return "unknown"
	}
	switch l.node.State {
	case manifest.Merged:
		return "merged"
	case manifest.Blocked, manifest.Failed:
		return "parked"
	}
	return "active"
}

func (l *leftover) describe() string {
	switch l.kind() {
	case "unknown":
		return fmt.Sprintf("phase %s is not in the manifest", l.id)
	case "merged":
		return fmt.Sprintf("%s is merged", l.id)
	}
	return fmt.Sprintf("%s is [%s]", l.id, l.node.State)
}

// name is how reports call the leftover: its branch, else its worktree.
func (l *leftover) name(c *cleaner) string {
	if l.branch != "" {
		return l.branch
	}
	return c.rel(l.wt.Path)
}

// onBase reports whether the base contains the leftover's work: the
// branch's tip, or for a detached worktree its HEAD.
func (l *leftover) onBase(ctx context.Context, git *worktree.Client, baseTip string) (bool, error) {
	commit := l.tip
	if commit == "" && l.wt != nil {
		commit = l.wt.Head
	}
	if commit == "" {
		return l.wt != nil && l.wt.Prunable, nil
	}
	return git.IsAncestor(ctx, commit, baseTip)
}

// findLeftovers lists, in manifest order, the phases that have a branch
// auto/<id> or a worktree registered under .claudopilot/worktrees. A
// branch auto/<id> counts only when <id> is a phase of the manifest or its
// worktree is one of ours, so branches of other tools are left alone. rm
// may be nil (every phase is then unknown).
func findLeftovers(ctx context.Context, git *worktree.Client, l scheduler.Layout, rm *roadmap.Roadmap) ([]*leftover, error) {
	node := func(id string) *roadmap.Node {
		if rm == nil {
			return nil
		}
		return rm.Node(id)
	}
	byID := map[string]*leftover{}
	get := func(id string) *leftover {
		if byID[id] == nil {
			byID[id] = &leftover{id: id, node: node(id)}
		}
		return byID[id]
	}
	wts, err := git.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	wtDir := filepath.Join(l.Dir(), "worktrees")
	for i := range wts {
		wt := &wts[i]
		if wt.Bare || !childOf(wtDir, wt.Path) {
			continue
		}
		id := ""
		if b, ok := strings.CutPrefix(wt.Branch, "auto/"); ok {
			id = b
		} else if rm != nil {
			for _, n := range rm.Nodes {
				if scheduler.SafeName(n.ID) == filepath.Base(wt.Path) {
					id = n.ID
				}
			}
		}
		if id == "" {
			id = filepath.Base(wt.Path)
		}
		get(id).wt = wt
	}
	refs, err := git.Git(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/auto/")
	if err != nil {
		return nil, err
	}
	for line := range strings.SplitSeq(refs, "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		id := strings.TrimPrefix(ref, "refs/heads/auto/")
		if byID[id] == nil && node(id) == nil {
			continue
		}
		lo := get(id)
		lo.branch, lo.tip = "auto/"+id, sha
	}
	out := make([]*leftover, 0, len(byID))
	for _, lo := range byID {
		out = append(out, lo)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.node == nil) != (b.node == nil) {
			return a.node != nil
		}
		if a.node != nil && a.node.Index != b.node.Index {
			return a.node.Index < b.node.Index
		}
		return a.id < b.id
	})
	return out, nil
}

// childOf reports whether p lies directly in dir, symlinks resolved where
// they can be (a missing worktree's folder cannot be).
func childOf(dir, p string) bool {
	parent := filepath.Dir(filepath.Clean(p))
	if parent == filepath.Clean(dir) {
		return true
	}
	rd, err1 := filepath.EvalSymlinks(dir)
	rp, err2 := filepath.EvalSymlinks(parent)
	return err1 == nil && err2 == nil && rd == rp
}

// lockHolder describes the live driver holding the lock.
func lockHolder(info scheduler.LockInfo) string {
	if info.PID <= 0 {
		return "a run is starting (its lock is being written)"
	}
	return fmt.Sprintf("a run is going on (pid %d on %s since %s)", info.PID, info.Host, info.Time.Local().Format(time.DateTime))
}

type lockState int

const (
	lockFree  lockState = iota
	lockLive            // a live driver holds it (or one on another host, which cannot be checked)
	lockStale           // its driver is dead, or died before writing it
)

// lockStatus tells whether the driver lock at path is free, held by a live
// driver or stale, by the same rules a starting run uses to take it over.
func lockStatus(path string) (scheduler.LockInfo, lockState) {
	st, err := os.Stat(path)
	if err != nil {
		return scheduler.LockInfo{}, lockFree
	}
	info, ok := scheduler.ReadLock(path)
	if !ok {
		// A lock being written right now is not stale yet.
		if time.Since(st.ModTime()) > 5*time.Second {
			return info, lockStale
		}
		return info, lockLive
	}
	if _, live := scheduler.LockHeld(path); live {
		return info, lockLive
	}
	return info, lockStale
}
