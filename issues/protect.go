package issues

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/state"
)

// protected refuses to push a branch that adds, changes or deletes a
// protected file (Config.Protect, docs/landing.md): once merged on GitHub
// it would steer the next run of every clone. What the branch changed is
// read against its merge base with the remote's base, as the pull
// request would show it. A check that cannot run refuses too (it fails
// closed). An issue has no (owns: …), so nothing protected is its own.
func (w *worker) protected(ctx context.Context) *failure {
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
	// One git diff base...tip, as the local landing reads it (a merge-base
	// and a diff-tree were two processes per push); no merge base is an
	// error, so the check fails closed.
	ch, err := q.git.BranchChanges(ctx, base, tip)
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
