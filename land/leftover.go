package land

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// Leftover is what runs left in the repository for one phase: its branch
// auto/<id>, its registered worktree under .claudopilot/worktrees, or both.
type Leftover struct {
	ID       string
	Node     *roadmap.Node      // nil: the phase is not in the manifest
	Branch   string             // "auto/<id>" when that branch exists
	Tip      string             // the branch's commit
	Worktree *worktree.Worktree // its registered worktree, if any
}

// Kind is "merged", "parked" ([blocked] or [failed]), "active" ([pending]
// or [running]: a run resumes it) or "unknown" (not in the manifest).
func (l *Leftover) Kind() string {
	if l.Node == nil {
		return "unknown"
	}
	switch l.Node.State {
	case manifest.Merged:
		return "merged"
	case manifest.Blocked, manifest.Failed:
		return "parked"
	}
	return "active"
}

// Describe says what became of the phase.
func (l *Leftover) Describe() string {
	switch l.Kind() {
	case "unknown":
		return fmt.Sprintf("phase %s is not in the manifest", l.ID)
	case "merged":
		return fmt.Sprintf("%s is merged", l.ID)
	}
	return fmt.Sprintf("%s is [%s]", l.ID, l.Node.State)
}

// OnBase reports whether the base contains the leftover's work: the
// branch's tip, or for a detached worktree its HEAD.
func (l *Leftover) OnBase(ctx context.Context, git *worktree.Client, baseTip string) (bool, error) {
	commit := l.Tip
	if commit == "" && l.Worktree != nil {
		commit = l.Worktree.Head
	}
	if commit == "" {
		return l.Worktree != nil && l.Worktree.Prunable, nil
	}
	return git.IsAncestor(ctx, commit, baseTip)
}

// Leftovers lists, in manifest order, the phases that have a branch
// auto/<id> or a worktree registered under .claudopilot/worktrees. A
// branch auto/<id> counts only when <id> is a phase of the manifest or its
// worktree is one of ours, so branches of other tools are left alone. rm
// may be nil (every phase is then unknown).
func Leftovers(ctx context.Context, git *worktree.Client, l state.Layout, rm *roadmap.Roadmap) ([]*Leftover, error) {
	wts, err := git.Worktrees(ctx)
	if err != nil {
		return nil, err
	}
	return LeftoversIn(ctx, git, l, rm, wts)
}

// LeftoversIn is Leftovers with the worktrees git lists read by the
// caller (worktree.Client.Worktrees), which shares one listing between
// several findings of one moment (engine.PlanClean: one git worktree
// list where four ran).
func LeftoversIn(ctx context.Context, git *worktree.Client, l state.Layout, rm *roadmap.Roadmap, wts []worktree.Worktree) ([]*Leftover, error) {
	node := func(id string) *roadmap.Node {
		if rm == nil {
			return nil
		}
		return rm.Node(id)
	}
	prefix := l.Branch("") // the layout names phase branches
	byID := map[string]*Leftover{}
	get := func(id string) *Leftover {
		if byID[id] == nil {
			byID[id] = &Leftover{ID: id, Node: node(id)}
		}
		return byID[id]
	}
	wtDir := filepath.Join(l.Dir(), "worktrees")
	for i := range wts {
		wt := &wts[i]
		if wt.Bare || !childOf(wtDir, wt.Path) {
			continue
		}
		if wt.Branch != "" && !strings.HasPrefix(wt.Branch, prefix) {
			continue // on another branch (an issue's claudopilot/issue-N): not a phase's
		}
		id := ""
		if b, ok := strings.CutPrefix(wt.Branch, prefix); ok {
			id = b
		} else if rm != nil {
			for _, n := range rm.Nodes {
				if state.SafeName(n.ID) == filepath.Base(wt.Path) {
					id = n.ID
				}
			}
		}
		if id == "" {
			id = filepath.Base(wt.Path)
		}
		get(id).Worktree = wt
	}
	tips, err := git.BranchTips(ctx, prefix)
	if err != nil {
		return nil, err
	}
	for _, bt := range tips {
		id := strings.TrimPrefix(bt.Name, prefix)
		if byID[id] == nil && node(id) == nil {
			continue
		}
		lo := get(id)
		lo.Branch, lo.Tip = bt.Name, bt.Tip
	}
	out := make([]*Leftover, 0, len(byID))
	for _, lo := range byID {
		out = append(out, lo)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Node == nil) != (b.Node == nil) {
			return a.Node != nil
		}
		if a.Node != nil && a.Node.Index != b.Node.Index {
			return a.Node.Index < b.Node.Index
		}
		return a.ID < b.ID
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
