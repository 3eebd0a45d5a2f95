// Package answer is `claudopilot answer`: the user's answer to a question
// an agent asked (CLAUDOPILOT-NEEDS-INPUT).
package answer

import (
	"context"
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// Options are answer's arguments.
type Options struct {
	App      *cmdutil.App
	ID, Text string
}

// NewCmd is `claudopilot answer`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("answer", "answer the question an agent asked; its phase or issue goes on", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "answer", `answer ID "TEXT"`, `
Answer the question the agent of phase ID (or issue #N) asked with a
CLAUDOPILOT-NEEDS-INPUT line or a .claudopilot-question file. `+"`claudopilot status`"+`
shows the questions waiting on you. The phase goes on: in the agent's own
session when AGENT_RESUME_CMD can resume it, the answer its next message;
otherwise a fresh attempt whose prompt holds the question and the answer.
Neither is counted as an attempt.

The answer is a file under .claudopilot/state, so it reaches a running
driver within a second; with none running, the next run takes it. It
answers that question only: a later question needs its own answer.`,
		"  claudopilot answer p3 \"use SQLite\"\n  claudopilot answer '#12' \"MIT\"")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 2 || strings.TrimSpace(fs.Arg(1)) == "" {
		return nil, cmdutil.UsageErrorf(`answer: give the phase (or issue) and the answer: claudopilot answer ID "TEXT"`)
	}
	return &Options{App: a, ID: fs.Arg(0), Text: fs.Arg(1)}, nil
}

// Run records the answer for the driver.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	git, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	node, q, err := engine.Answer(dir, o.ID, o.Text)
	if err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	fmt.Fprintf(a.S.Out, "answered %s's question %q%s\n", node, q, cmdutil.DriverNote(ctx, git))
	return nil
}
