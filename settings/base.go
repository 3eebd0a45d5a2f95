package settings

import (
	"context"
	"fmt"
)

// Git is what the base rule asks of the repository (a *worktree.Client).
type Git interface {
	CurrentBranch(ctx context.Context) (string, error)
	BranchExists(ctx context.Context, name string) (bool, error)
}

// Base is the branch work lands on, and why that one.
type Base struct {
	Branch   string // "": the repository's default branch on GitHub (the queue alone)
	Src      string // "from <where BASE_BRANCH came from>", or "the current branch"
	Explicit bool   // named by BASE_BRANCH or --base, not taken from HEAD
}

// BaseErrorKind says what is wrong with the base branch.
type BaseErrorKind int

const (
	BaseDetached BaseErrorKind = iota // HEAD is detached and BASE_BRANCH unset
	BaseTrunk                         // the trunk guard: main or master, not named
	BaseMissing                       // the branch does not exist
	BaseUnborn                        // the branch is checked out but has no commit yet
)

// BaseError is a base branch the run cannot use (exit 1).
type BaseError struct {
	Kind   BaseErrorKind
	Branch string
	Src    string
}

func (e *BaseError) Error() string {
	switch e.Kind {
	case BaseDetached:
		return "HEAD is detached: name the branch to merge into with --base or BASE_BRANCH"
	case BaseTrunk:
		return fmt.Sprintf("refusing to merge into %s without being told to: pass --base %s (or BASE_BRANCH=%s), or switch to another branch", e.Branch, e.Branch, e.Branch)
	case BaseUnborn:
		return fmt.Sprintf("base branch %s (%s) has no commit yet", e.Branch, e.Src)
	}
	return fmt.Sprintf("base branch %s (%s) does not exist", e.Branch, e.Src)
}

// BaseUse says what a command does with the base branch.
type BaseUse int

const (
	// MergeHere: the command merges into the base in this clone (run,
	// with or without --issues; doctor, which checks for run): the
	// current branch unless named, and the trunk guard.
	MergeHere BaseUse = iota
	// ReadHere: the command only reads the base in this clone (clean):
	// the current branch unless named, no guard.
	ReadHere
	// OnGitHub: the base is only GitHub's (the queue alone): the
	// repository's default branch there unless named.
	OnGitHub
)

// isTrunk is true for the branches the trunk guard keeps a run from
// merging into unless they are named. A function, not a package list: no
// caller can change the guard.
func isTrunk(branch string) bool { return branch == "main" || branch == "master" }

// Base applies the one base rule. BASE_BRANCH (or --base) names the base.
// Unset, a command that works in this clone takes the current branch
// (under run --issues, issues' pull requests go into that same branch),
// and one that merges here never takes main or master unless they are
// named (the trunk guard). The queue alone takes the repository's default
// branch on GitHub (Branch ""). A base in this clone must exist.
func (s *Settings) Base(ctx context.Context, git Git, use BaseUse) (Base, error) {
	b := Base{Branch: s.BaseBranch, Src: "from " + s.Source("BASE_BRANCH").String(), Explicit: s.BaseBranch != ""}
	if use == OnGitHub {
		return b, nil
	}
	cur, err := git.CurrentBranch(ctx)
	if err != nil {
		return b, err
	}
	if !b.Explicit {
		if cur == "" {
			return b, &BaseError{Kind: BaseDetached}
		}
		b.Branch, b.Src = cur, "the current branch"
		if isTrunk(cur) && use == MergeHere {
			return b, &BaseError{Kind: BaseTrunk, Branch: cur, Src: b.Src}
		}
	}
	ok, err := git.BranchExists(ctx, b.Branch)
	switch {
	case err != nil:
		return b, err
	case ok:
		return b, nil
	case cur == b.Branch:
		return b, &BaseError{Kind: BaseUnborn, Branch: b.Branch, Src: b.Src}
	}
	return b, &BaseError{Kind: BaseMissing, Branch: b.Branch, Src: b.Src}
}
