// Package report is `claudopilot report`: the run's timeline, drawn from
// the journal, as a self-contained HTML file.
package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/snapshot"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
	"github.com/claudopilot/claudopilot/web"
)

// DefaultFile is where the report goes without -o, in the current folder.
const DefaultFile = "claudopilot-report.html"

// Options are what report's flags and arguments say.
type Options struct {
	App *cmdutil.App
	Dir string // the roadmap folder ("": looked up)
	Out string // the file to write
}

// NewCmd is `claudopilot report`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("report", "write the run's timeline as a self-contained HTML file", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "report", "report [DIR] [-o FILE]", `
Write the timeline of the runs the journal records as one HTML file that
needs nothing beside it: a row per phase (and issue), each attempt a bar
by role and lane, each landing, the waits shaded by their reason (slot,
lane, cooldown, dependency, needs-input), gates and merges marked. It is
drawn from .claudopilot/state/journal.jsonl alone, so it works for a
finished run and while one goes on (the web page shows the same).`,
		"  claudopilot report\n  claudopilot report -o /tmp/night.html")
	out := fs.StringP("output", "o", DefaultFile, "the file to write")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 1 {
		return nil, cmdutil.UsageErrorf("report takes at most one roadmap folder")
	}
	o := &Options{App: a, Dir: fs.Arg(0), Out: *out}
	if o.Out == "" {
		return nil, cmdutil.UsageErrorf("report: -o needs a file name")
	}
	if !filepath.IsAbs(o.Out) {
		o.Out = filepath.Join(a.Cwd, o.Out)
	}
	return o, nil
}

// Run writes the report.
func Run(ctx context.Context, o *Options) error {
	rm, l, live, err := where(ctx, o)
	if err != nil {
		return err
	}
	recs, err := state.ReadJournal(l.JournalPath())
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("report: %s has no records: nothing ran here yet", l.JournalPath())
	}
	now, end := time.Now(), time.Time{} // a finished run ends at its last record
	if live {
		end = now // what runs now is drawn up to now
	}
	tl := status.TimelineOf(rm, recs, end)
	var b bytes.Buffer
	title := "claudopilot report"
	if rm != nil {
		title += ": " + filepath.Base(filepath.Dir(rm.Dir)) + "/" + filepath.Base(rm.Dir)
	}
	if err := web.Report(&b, title, tl, now); err != nil {
		return err
	}
	if err := roadmap.WriteAtomic(o.Out, b.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(o.App.S.Out, "wrote %s (%d rows, %s to %s)\n", cmdutil.RelTo(o.App.Cwd, o.Out), len(tl.Rows), tl.Start.Local().Format(time.DateTime), tl.End.Local().Format(time.DateTime))
	return nil
}

// where finds the roadmap and the state: the roadmap's when there is one,
// else (a queue alone) the repository's; live is set while a driver runs
// there.
func where(ctx context.Context, o *Options) (*roadmap.Roadmap, state.Layout, bool, error) {
	s, err := snapshot.Load(ctx, o.App, o.Dir)
	if err == nil {
		return s.Roadmap, s.Layout, s.Live, nil
	}
	dir, ferr := cmdutil.FindRoadmapDir(ctx, o.App, o.Dir)
	if o.Dir != "" || ferr != nil {
		return nil, state.Layout{}, false, err
	}
	if _, serr := os.Stat(filepath.Join(dir, roadmap.ManifestName)); !errors.Is(serr, os.ErrNotExist) {
		return nil, state.Layout{}, false, err
	}
	git, stateDir, serr := cmdutil.StateDirOf(ctx, o.App, o.App.Cwd)
	if serr != nil {
		return nil, state.Layout{}, false, serr
	}
	live := false
	if common, err := git.CommonDir(ctx); err == nil {
		_, live = state.LockHeld(state.LockPath(common))
	}
	return nil, state.Layout{Top: filepath.Dir(filepath.Dir(stateDir))}, live, nil
}
