package issues

import (
	"context"
	"errors"
	"fmt"

	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// protected refuses to push a branch that adds, changes or deletes a
// protected file (Config.Protect, docs/landing.md): once merged on GitHub
// it would steer the next run of every clone. What the branch changed is
// read against its merge base with the remote's base, as the pull
// request would show it. A check that cannot run refuses too (it fails
// closed). An issue has no (owns: …), so nothing protected is its own.
//
// tree is what the push's secret scan read of the branch's tree against
// the base's (scanPush): when the base is an ancestor of the tip (the
// branch holds it: its merge base), that is the same diff, and no git
// process of its own is needed; otherwise git diff base...tip is asked.
func (w *worker) protected(ctx context.Context, tree *worktree.ChangeReader) *failure {
	q := w.q
	fail := func(detail string) *failure {
		if w.unpushed == "" {
			w.unpushed = "the protected-file check could not run"
		}
		return &failure{reason: state.ReasonProtected, detail: detail}
	}
	if q.cfg.Protect == nil {
		return fail("the protected-file check has no set of files to check")
	}
	if q.cfg.Protect.Off {
		return nil
	}
	base := "refs/remotes/" + q.cfg.Remote + "/" + q.cfg.Base
	tip := "refs/heads/" + w.branch
	// Else one git diff base...tip, as the local landing reads it (a
	// merge-base and a diff-tree were two processes per push); no merge
	// base is an error, so the check fails closed.
	var ch worktree.Changes
	var err error
	if holdsBase(ctx, q.git, base, tip) {
		ch, err = tree.Changes()
	} else {
		ch, err = q.git.BranchChanges(ctx, base, tip)
	}
	if err != nil {
		return fail(fmt.Sprintf("the protected-file check could not run: %v", err))
	}
	if hits := q.cfg.Protect.Check(ch.Paths, nil); len(hits) > 0 {
		w.unpushed = "it changes files that steer the next run"
		q.logIssue(w.n, "not pushed: %s", protect.Describe(hits))
		return fail(protect.Describe(hits))
	}
	return nil
}

// ancestryWalk bounds holdsBase's walk: a branch's own commits are few;
// beyond them the answer is git's.
const ancestryWalk = 32

// holdsBase reports whether base is an ancestor of tip (tip included),
// from tip's parents (<id>^1, ^2, …) asked of the client's long-lived
// cat-file, no git process of its own. false when it is not, or when
// ancestryWalk commits did not find it or a parent could not be read:
// the caller then asks git.
func holdsBase(ctx context.Context, git *worktree.Client, base, tip string) bool {
	b, err := git.RevParse(ctx, base)
	if err != nil {
		return false
	}
	t, err := git.RevParse(ctx, tip)
	if err != nil {
		return false
	}
	seen := map[string]bool{}
	todo := []string{t}
	for len(todo) > 0 && len(seen) < ancestryWalk {
		id := todo[0]
		todo = todo[1:]
		if id == b {
			return true
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		for i := 1; ; i++ {
			p, err := git.RevParse(ctx, fmt.Sprintf("%s^%d", id, i))
			if errors.Is(err, worktree.ErrNoRev) {
				break
			}
			if err != nil {
				return false
			}
			todo = append(todo, p)
		}
	}
	return false
}
