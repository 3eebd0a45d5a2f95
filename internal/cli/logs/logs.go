// Package logs is `claudopilot logs`: print or follow a phase's logs.
package logs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/snapshot"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/transcript"
)

// Options are what logs's flags and arguments say.
type Options struct {
	App     *cmdutil.App
	Dir     string // --roadmap ("": looked up)
	ID      string
	Role    string // "": any
	Attempt int    // 0: the newest
	Follow  bool
	// Pretty renders agent output as a transcript (package transcript).
	Pretty bool
}

// NewCmd is `claudopilot logs`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("logs", "print or follow a phase's logs", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "logs", "logs ID [--role worker|supervisor|reviewer|gate|prepare] [--attempt N] [-f] [--pretty] [--roadmap DIR]", `
Print a phase's log: the newest one, or the newest of one role, or one
attempt. With -f, keep printing what is appended until Ctrl-C, moving on to
a newer log of the phase (the next attempt) when one appears.

With --pretty, an agent's output (Claude Code's stream-json, codex exec
--json, opencode run --format json) is printed as a transcript: what the
assistant said, each tool call with its input in one line and the first
lines of its result, and what each turn spent. Other lines print as they
are. Without --pretty the log is printed raw, byte for byte.

Logs live in .claudopilot/logs/<id>/<role>-<attempt>.log. An issue of the
queue is named as in the graph, "#12" (its checks logs are --role checks).`,
		"  claudopilot logs phase-03\n  claudopilot logs phase-03 --pretty\n  claudopilot logs phase-03 --role gate\n  claudopilot logs phase-03 --role worker --attempt 2\n  claudopilot logs phase-03 -f")
	role := fs.String("role", "", "only logs of this role: worker, supervisor, reviewer, gate or prepare")
	attempt := fs.Int("attempt", 0, "this attempt of the role (default: the newest)")
	follow := fs.BoolP("follow", "f", false, "keep printing as the log grows")
	pretty := fs.Bool("pretty", false, "print agent output as a transcript (text, tool calls folded, cost per turn)")
	dirFlag := fs.String("roadmap", "", "the roadmap folder (default: ./roadmap, else ./.claudopilot/roadmap)")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, cmdutil.UsageErrorf("logs takes one phase ID")
	}
	switch *role {
	case "", "worker", "supervisor", "reviewer", "gate", "prepare", "lockfile", "checks":
	default:
		return nil, cmdutil.UsageErrorf("logs: unknown --role %q (want worker, supervisor, reviewer, gate or prepare)", *role)
	}
	if *attempt != 0 && *role == "" {
		return nil, cmdutil.UsageErrorf("logs: --attempt needs --role")
	}
	return &Options{App: a, Dir: *dirFlag, ID: fs.Arg(0), Role: *role, Attempt: *attempt, Follow: *follow, Pretty: *pretty}, nil
}

// Run prints the log chosen, or follows it.
func Run(ctx context.Context, o *Options) error {
	a, role, attempt, follow := o.App, &o.Role, &o.Attempt, &o.Follow
	s, err := snapshot.Load(ctx, a, o.Dir)
	if err != nil {
		return err
	}
	id := o.ID
	// An issue of the queue ("#12") has its logs in the same layout.
	if s.Roadmap.Node(id) == nil && !roadmap.IsIssueRef(id) {
		return fmt.Errorf("logs: no phase %q in %s", id, s.Rel(s.Roadmap.ManifestPath))
	}
	pick := func() string {
		logs := s.Layout.Logs(id, *role)
		for i := len(logs) - 1; i >= 0; i-- {
			if *attempt == 0 || logs[i].Attempt == *attempt {
				return logs[i].Path
			}
		}
		return ""
	}
	path := pick()
	if path == "" && !*follow {
		what := "logs"
		if *role != "" {
			what = *role + " logs"
		}
		if *attempt != 0 {
			what = fmt.Sprintf("%s log of attempt %d", *role, *attempt)
			if rot, ok := s.Layout.RotatedLog(id, *role, *attempt); ok {
				return fmt.Errorf("logs: the %s of %s was rotated away (LOG_KEEP) at %s; it ended: %s", what, id, rot.When.Local().Format(time.RFC3339), rot.End)
			}
		}
		return fmt.Errorf("logs: %s has no %s yet (in %s)", id, what, s.Rel(s.Layout.LogDir(id)))
	}
	if !*follow {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if o.Pretty {
			entries, err := transcript.Read(f)
			if err != nil {
				return fmt.Errorf("logs: read %s: %w", s.Rel(path), err)
			}
			return transcript.WriteText(a.S.Out, entries, transcript.DefaultFold)
		}
		_, err = io.Copy(a.S.Out, f)
		return err
	}
	return followLogs(ctx, a, o.Pretty, path, func() string {
		if *attempt != 0 {
			return path
		}
		return pick()
	})
}

// followLogs prints path as it grows (as a transcript when pretty),
// switching to newer() when that names another file, until ctx ends
// (Ctrl-C).
func followLogs(ctx context.Context, a *cmdutil.App, pretty bool, path string, newer func() string) error {
	var off int64
	out := sink(a.S.Out, pretty)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if path != "" {
			if f, err := os.Open(path); err == nil {
				if _, err := f.Seek(off, io.SeekStart); err == nil {
					n, _ := io.Copy(out, f)
					off += n
				}
				f.Close()
			}
		}
		if next := newer(); next != "" && next != path {
			if path != "" {
				fmt.Fprintf(a.S.Err, "==> %s <==\n", next)
			}
			path, off, out = next, 0, sink(a.S.Out, pretty)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// sink is where followed bytes go: out itself, or, when pretty, a
// transcript of the lines as they complete.
func sink(out io.Writer, pretty bool) io.Writer {
	if !pretty {
		return out
	}
	return &lineWriter{s: transcript.NewTextStream(out, transcript.DefaultFold)}
}

// lineWriter hands complete lines to a transcript stream, keeping a
// partial last line until the rest of it is written.
type lineWriter struct {
	s    *transcript.TextStream
	part []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		if err := w.s.Line(string(w.part[:i])); err != nil {
			return len(b), err
		}
		w.part = w.part[i+1:]
	}
	if len(w.part) > transcript.MaxLine {
		w.part = w.part[:0] // a line past the limit is dropped, as Read drops it
	}
	return len(b), nil
}
