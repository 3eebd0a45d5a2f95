// Package logs is `claudopilot logs`: print or follow a phase's logs.
package logs

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/roadmap"
)

// Options are what logs's flags and arguments say.
type Options struct {
	App     *cmdutil.App
	Dir     string // --roadmap ("": looked up)
	ID      string
	Role    string // "": any
	Attempt int    // 0: the newest
	Follow  bool
}

// NewCmd is `claudopilot logs`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("logs", "print or follow a phase's logs", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "logs", "logs ID [--role worker|supervisor|reviewer|gate|prepare] [--attempt N] [-f] [--roadmap DIR]", `
Print a phase's log: the newest one, or the newest of one role, or one
attempt. With -f, keep printing what is appended until Ctrl-C, moving on to
a newer log of the phase (the next attempt) when one appears.

Logs live in .claudopilot/logs/<id>/<role>-<attempt>.log. An issue of the
queue is named as in the graph, "#12" (its checks logs are --role checks).`,
		"  claudopilot logs phase-03\n  claudopilot logs phase-03 --role gate\n  claudopilot logs phase-03 --role worker --attempt 2\n  claudopilot logs phase-03 -f")
	role := fs.String("role", "", "only logs of this role: worker, supervisor, reviewer, gate or prepare")
	attempt := fs.Int("attempt", 0, "this attempt of the role (default: the newest)")
	follow := fs.BoolP("follow", "f", false, "keep printing as the log grows")
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
	return &Options{App: a, Dir: *dirFlag, ID: fs.Arg(0), Role: *role, Attempt: *attempt, Follow: *follow}, nil
}

// Run prints the log chosen, or follows it.
func Run(ctx context.Context, o *Options) error {
	a, role, attempt, follow := o.App, &o.Role, &o.Attempt, &o.Follow
	s, err := cmdutil.LoadSnapshot(ctx, a, o.Dir)
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
		}
		return fmt.Errorf("logs: %s has no %s yet (in %s)", id, what, s.Rel(s.Layout.LogDir(id)))
	}
	if !*follow {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(a.S.Out, f)
		return err
	}
	return followLogs(ctx, a, path, func() string {
		if *attempt != 0 {
			return path
		}
		return pick()
	})
}

// followLogs prints path as it grows, switching to newer() when that names
// another file, until ctx ends (Ctrl-C).
func followLogs(ctx context.Context, a *cmdutil.App, path string, newer func() string) error {
	var off int64
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if path != "" {
			if f, err := os.Open(path); err == nil {
				if _, err := f.Seek(off, io.SeekStart); err == nil {
					n, _ := io.Copy(a.S.Out, f)
					off += n
				}
				f.Close()
			}
		}
		if next := newer(); next != "" && next != path {
			if path != "" {
				fmt.Fprintf(a.S.Err, "==> %s <==\n", next)
			}
			path, off = next, 0
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
