package kube

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/work"
)

// shipped are the contract's variables that name a file the driver
// wrote: the pod gets the file's content, the variable its own path.
var shipped = []string{"CLAUDOPILOT_FAILURE_LOG", "CLAUDOPILOT_REVIEW_FINDINGS"}

// Runner is the Driver as package work's Remote: AGENT_RUNNER=kubernetes.
type Runner struct{ Driver *Driver }

var _ work.Remote = Runner{}

// RunAgent runs one agent as a Job, its output through the attempt's
// log funnel (so logs -f, the transcript and the ledger read it as a
// local agent's), and hands back the result commit it fetched.
func (r Runner) RunAgent(ctx context.Context, a work.RemoteAttempt) work.RemoteResult {
	s := a.Spec
	started := time.Now()
	fail := func(err error) work.RemoteResult {
		return work.RemoteResult{Result: proc.Result{ExitCode: -1, Reason: proc.ReasonStart, Err: err, Started: started, Ended: time.Now()}}
	}
	sink, err := proc.OpenSink(s.LogPath, s.LogCap, s.Redact)
	if err != nil {
		return fail(err)
	}
	if s.PromptFile != "" {
		// What the agent was asked, kept beside its log as for a
		// local agent.
		if err := os.WriteFile(s.PromptFile, s.Prompt, 0o644); err != nil {
			sink.Close()
			return fail(err)
		}
	}
	files := map[string][]byte{}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		for _, name := range shipped {
			if k == name {
				b, err := os.ReadFile(v)
				if err != nil {
					sink.Close()
					return fail(err)
				}
				files[k] = b
			}
		}
	}
	start := a.Start
	if start == a.BaseSHA {
		start = ""
	}
	res := r.Driver.Run(ctx, Attempt{
		Phase: a.ID, Role: a.Role, Attempt: a.Attempt, Resume: a.Resume,
		Base: a.Base, BaseSHA: a.BaseSHA, Branch: a.Branch, Start: start, Merge: a.Merge, Docs: a.Docs,
		Command: s.Command, Prompt: s.Prompt, Env: s.Env, Files: files,
	}, sink)
	cerr := sink.Close()
	out := proc.Result{ExitCode: res.ExitCode, Reason: res.Reason, Err: res.Err, Tail: sink.Tail(), Started: started, Ended: time.Now()}
	if cerr != nil {
		out.Err = errors.Join(out.Err, cerr)
	}
	job := res.Job
	return work.RemoteResult{Result: out, Tip: res.Tip, Done: func(ctx context.Context) error { return r.Driver.Done(ctx, job) }}
}
