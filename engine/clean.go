package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// The clean policy: what `claudopilot clean` may remove, and when. It is
// here, not in the command, so that what clean decides is tested apart
// from how it is shown; the command asks PlanClean, confirms the parked
// work it would remove, removes each item (CleanPlan.Remove) and reports.
//
//   - A stale worktree registration (its folder gone) is pruned.
//   - A [merged] phase's worktree and branch, and those of a phase no
//     longer in the manifest, go only when the base contains the branch's
//     tip (no work is lost); a worktree with uncommitted changes is kept.
//   - A parked phase's ([blocked], [failed]) worktree and branch hold
//     unmerged work: kept unless asked (Parked), then removed once the
//     user confirms; asking is refused while a run holds the lock.
//   - Pending and running phases are never touched: a run resumes them.
//   - An issue's worktree is kept: the queue continues it.
//   - What kills left of [merged] phases (land.FindLitter) goes.
//   - The merge gate's worktrees and the record of the last foreign base
//     move go only when no run goes on.
//   - A stale lock goes, only if it is still the same dead holder's.

// CleanOptions say what one clean looks at and may remove.
type CleanOptions struct {
	Git     *worktree.Client
	Layout  state.Layout
	Roadmap *roadmap.Roadmap
	Base    string // the base branch: the work it contains is landed
	Parked  bool   // also remove parked phases' unmerged work (--parked)
	DryRun  bool   // only report: --parked is not refused beside a run
}

// CleanKind is what a CleanItem is.
type CleanKind string

const (
	CleanRegistration CleanKind = "registration" // a worktree registration whose folder is gone
	CleanWorktree     CleanKind = "worktree"     // a phase's worktree
	CleanBranch       CleanKind = "branch"       // a phase's branch
	CleanPhase        CleanKind = "phase"        // a phase's work, kept whole (Keep says why)
	CleanIssue        CleanKind = "issue"        // an issue's worktree, always kept
	CleanLitter       CleanKind = "litter"       // a note or folder a kill left (land.Litter)
	CleanBaseMove     CleanKind = "base-move"    // the record of the last foreign base move
	CleanGate         CleanKind = "gate"         // a merge gate's worktree
	CleanLock         CleanKind = "lock"         // a stale driver lock
)

// Kept says why clean keeps an item.
type Kept string

const (
	KeptNotOnBase   Kept = "not-on-base" // the base does not contain the branch's tip
	KeptDirty       Kept = "dirty"       // its worktree has uncommitted changes (Dirty)
	KeptParked      Kept = "parked"      // parked work, and no --parked
	KeptUnconfirmed Kept = "unconfirmed" // parked work the user did not confirm removing
	KeptIssue       Kept = "issue"       // an issue's work
)

// CleanItem is one thing clean removes, or keeps (Keep set).
type CleanItem struct {
	Kind   CleanKind
	Phase  string // the phase whose work it is, if any
	Path   string // the folder or file; for a phase's work, its worktree ("" without one)
	Branch string // the branch, if any
	Why    string // what it is: "phase-01 is merged", the litter's or lock's description
	Keep   Kept   // "": it goes
	Parked bool   // a parked phase's unmerged work
	Dirty  int    // files of uncommitted changes in its worktree
	Ahead  int    // commits of a parked branch the base lacks; -1: not known

	litter land.Litter // what CleanLitter removes
}

// CleanPlan is what one clean found, in the order it is done and told.
type CleanPlan struct {
	Items []CleanItem
	Base  string

	git      *worktree.Client
	layout   state.Layout
	lockPath string
	holder   state.LockInfo // the stale lock's holder when it was read
	// wts: the worktrees git lists, read once per plan (one git
	// worktree list where the four findings ran one each).
	wts    []worktree.Worktree
	pruned bool
	// parkedWork: the parked phases whose work goes (ParkedWork).
	parkedWork []CleanItem
}

// CleanRefusedError refuses --parked while a run holds the lock: it may
// be working on a parked phase's branch right now.
type CleanRefusedError struct{ Holder state.LockInfo }

func (e *CleanRefusedError) Error() string {
	return fmt.Sprintf("a run holds the lock (pid %d on %s): stop it before clean --parked", e.Holder.PID, e.Holder.Host)
}

// PlanClean finds what runs left behind and decides, by the policy above,
// what goes and what stays. It changes nothing.
func PlanClean(ctx context.Context, o CleanOptions) (*CleanPlan, error) {
	baseTip, err := o.Git.RevParse(ctx, "refs/heads/"+o.Base)
	if err != nil {
		return nil, fmt.Errorf("base branch %s does not exist", o.Base)
	}
	common, err := o.Git.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	p := &CleanPlan{Base: o.Base, git: o.Git, layout: o.Layout, lockPath: state.LockPath(common)}
	holder, lock := state.LockStatus(p.lockPath)
	live := lock == state.LockLive
	if o.Parked && !o.DryRun && live {
		return nil, &CleanRefusedError{Holder: holder}
	}
	if p.wts, err = o.Git.Worktrees(ctx); err != nil {
		return nil, err
	}
	p.registrations()
	if err := p.leftovers(ctx, o, baseTip); err != nil {
		return nil, err
	}
	p.issueWork()
	if err := p.litter(ctx, o.Roadmap, live); err != nil {
		return nil, err
	}
	if !live {
		for _, gate := range land.GateDirs(o.Layout) {
			if _, err := os.Stat(gate); err == nil {
				p.Items = append(p.Items, CleanItem{Kind: CleanGate, Path: gate})
			}
		}
	}
	if lock == state.LockStale {
		p.holder = holder
		why := "its driver died before writing it"
		if holder.PID > 0 {
			why = fmt.Sprintf("pid %d on %s is gone", holder.PID, holder.Host)
		}
		p.Items = append(p.Items, CleanItem{Kind: CleanLock, Path: p.lockPath, Why: why})
	}
	return p, nil
}

// registrations finds the registrations of worktrees whose folder is gone.
func (p *CleanPlan) registrations() {
	for _, wt := range p.wts {
		if wt.Prunable && !wt.Locked {
			p.Items = append(p.Items, CleanItem{Kind: CleanRegistration, Path: wt.Path})
		}
	}
}

// leftovers decides about the phases' worktrees and branches: landed ones
// go when the base contains them, parked ones only when asked, active
// ones never.
func (p *CleanPlan) leftovers(ctx context.Context, o CleanOptions, baseTip string) error {
	lefts, err := land.LeftoversIn(ctx, p.git, o.Layout, o.Roadmap, p.wts)
	if err != nil {
		return err
	}
	var parked []*land.Leftover
	for _, l := range lefts {
		switch l.Kind() {
		case "active":
		case "parked":
			parked = append(parked, l)
		default:
			if err := p.landed(ctx, l, baseTip); err != nil {
				return err
			}
		}
	}
	for _, l := range parked {
		if err := p.parked(ctx, l, o.Parked, baseTip); err != nil {
			return err
		}
	}
	return nil
}

// landed decides about a merged phase's work, or that of one no longer in
// the manifest: it goes when the base contains it and its worktree holds
// no uncommitted changes.
func (p *CleanPlan) landed(ctx context.Context, l *land.Leftover, baseTip string) error {
	it := phaseItem(l)
	in, err := l.OnBase(ctx, p.git, baseTip)
	if err != nil {
		return err
	}
	if !in {
		it.Keep = KeptNotOnBase
		p.Items = append(p.Items, it)
		return nil
	}
	if l.Worktree != nil && !l.Worktree.Prunable {
		dirty, err := p.git.Dirty(ctx, l.Worktree.Path)
		if err != nil {
			return err
		}
		if len(dirty) > 0 {
			it.Keep, it.Dirty = KeptDirty, len(dirty)
			p.Items = append(p.Items, it)
			return nil
		}
		p.Items = append(p.Items, CleanItem{Kind: CleanWorktree, Phase: l.ID, Path: l.Worktree.Path, Why: it.Why})
	}
	if l.Branch != "" {
		p.Items = append(p.Items, CleanItem{Kind: CleanBranch, Phase: l.ID, Branch: l.Branch, Why: it.Why})
	}
	return nil
}

// parked decides about a parked phase's work: kept, unless remove.
func (p *CleanPlan) parked(ctx context.Context, l *land.Leftover, remove bool, baseTip string) error {
	it := phaseItem(l)
	it.Parked, it.Ahead = true, -1
	if l.Branch != "" {
		if n, err := p.git.CountCommits(ctx, baseTip, l.Tip); err == nil {
			it.Ahead = n
		}
	}
	if !remove {
		it.Keep = KeptParked
		p.Items = append(p.Items, it)
		return nil
	}
	p.parkedWork = append(p.parkedWork, it)
	if l.Worktree != nil && !l.Worktree.Prunable {
		wt := it
		wt.Kind, wt.Branch = CleanWorktree, ""
		if dirty, err := p.git.Dirty(ctx, l.Worktree.Path); err == nil {
			wt.Dirty = len(dirty)
		}
		p.Items = append(p.Items, wt)
	}
	if l.Branch != "" {
		br := it
		br.Kind, br.Path = CleanBranch, ""
		p.Items = append(p.Items, br)
	}
	return nil
}

// phaseItem is a phase's work, kept whole: its branch and worktree.
func phaseItem(l *land.Leftover) CleanItem {
	it := CleanItem{Kind: CleanPhase, Phase: l.ID, Branch: l.Branch, Why: l.Describe()}
	if l.Worktree != nil {
		it.Path = l.Worktree.Path
	}
	return it
}

// issueWork keeps the worktrees of issues (branch claudopilot/issue-N: a
// blocked issue, or one that went away while worked on): the queue
// continues one if its issue is queued again.
func (p *CleanPlan) issueWork() {
	for _, wt := range p.wts {
		if strings.HasPrefix(wt.Branch, "claudopilot/issue-") && !wt.Prunable {
			p.Items = append(p.Items, CleanItem{Kind: CleanIssue, Path: wt.Path, Branch: wt.Branch, Keep: KeptIssue})
		}
	}
}

// litter finds what kills left of merged phases and, when no run goes on,
// the record of the last foreign base move.
func (p *CleanPlan) litter(ctx context.Context, rm *roadmap.Roadmap, live bool) error {
	var ids []string
	for _, n := range rm.Nodes {
		if n.State == manifest.Merged {
			ids = append(ids, n.ID)
		}
	}
	ls, err := land.FindLitterIn(p.layout, ids, func() ([]worktree.Worktree, error) { return p.wts, nil })
	if err != nil {
		return err
	}
	for _, x := range ls {
		p.Items = append(p.Items, CleanItem{Kind: CleanLitter, Phase: x.ID, Path: x.Path, Why: x.Describe(), litter: x})
	}
	moved := land.BaseMovedPath(p.layout)
	if _, err := os.Stat(moved); err == nil && !live {
		p.Items = append(p.Items, CleanItem{Kind: CleanBaseMove, Path: moved})
	}
	return nil
}

// ParkedWork is the parked phases whose work the plan removes, one item
// each (CleanPhase, with its branch and worktree): what to ask the user
// about.
func (p *CleanPlan) ParkedWork() []CleanItem { return p.parkedWork }

// KeepParked keeps the parked work the plan would remove, one item a
// phase (KeptUnconfirmed): the user did not confirm.
func (p *CleanPlan) KeepParked() {
	var items []CleanItem
	for _, it := range p.Items {
		if !it.Parked || it.Keep != "" {
			items = append(items, it)
			continue
		}
		for i := range p.parkedWork {
			if k := &p.parkedWork[i]; k.Phase == it.Phase && k.Keep == "" {
				k.Keep = KeptUnconfirmed // told once, for its first item
				items = append(items, *k)
			}
		}
	}
	p.Items, p.parkedWork = items, nil
}

// Remove removes one item of the plan (a kept one is left alone).
func (p *CleanPlan) Remove(ctx context.Context, it CleanItem) error {
	if it.Keep != "" {
		return nil
	}
	switch it.Kind {
	case CleanRegistration:
		if p.pruned {
			return nil // one prune drops every stale registration
		}
		p.pruned = true
		return p.git.Prune(ctx)
	case CleanWorktree, CleanGate:
		return p.git.RemoveWorktree(ctx, it.Path)
	case CleanBranch:
		return p.git.DeleteBranch(ctx, it.Branch)
	case CleanLitter:
		return land.RemoveLitter(ctx, p.git, []land.Litter{it.litter})
	case CleanBaseMove:
		return land.ForgetBaseMove(p.layout)
	case CleanLock:
		// Only if it is still the same dead holder's: a run may have
		// taken it over since.
		if now, _ := state.ReadLock(p.lockPath); now.PID == p.holder.PID {
			if err := os.Remove(p.lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
