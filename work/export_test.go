package work

import (
	"context"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// Unfinished is (*Runner).unfinished, the stop of a failed attempt read
// from its exit and output tail, with the stop as reason and detail.
func Unfinished(r *Runner, j scheduler.Job, res proc.Result, why string, o *scheduler.Outcome) (state.Reason, string) {
	s := r.unfinished(j, res, why, o)
	return s.reason, s.detail
}

// QuestionIn is questionIn: the last question asked in an output tail.
func QuestionIn(tail []string) string { return questionIn(tail) }

// TakeQuestion is takeQuestion: the question file of wt read and removed.
func TakeQuestion(wt string) (string, error) { return takeQuestion(wt) }

// DoneCheck is (*Runner).doneCheck, the done rule of j's branch as it
// is now (for an outside node, outsideDone).
func DoneCheck(r *Runner, j scheduler.Job) (tip string, ok bool, why string) {
	return r.doneCheck(context.Background(), j, r.target(j))
}

// CheckHead is (*Runner).checkHead: nil while the worktree wt is there
// and on branch.
func CheckHead(r *Runner, wt, branch string) error {
	return r.checkHead(context.Background(), wt, branch)
}
