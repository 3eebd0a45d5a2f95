package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ControlDir is Claudopilot's control folder in .claudopilot/: a file
// <id>.poke stops phase id's running worker and resumes it in its
// session, at no attempt; <id>.retry sets a [blocked] phase back to
// [pending] (as `claudopilot retry ID`). Each file is removed once read,
// as Claudopilot's driver removed it.
const ControlDir = "control"

// ControlDirV1 is Claudopilot 1.0's control folder, under its run folder
// (.claudopilot/.run/control, src/config.ts's controlDir): read as well,
// so a dashboard or script written for 1.0 is not silently ignored.
const ControlDirV1 = ".run/control"

// controlFiles reads the control folders for a running driver.
type controlFiles struct {
	dirs       []string // .claudopilot/control, .claudopilot/.run/control
	roadmapDir string   // for .retry
}

// read takes the files in the folders: it returns the phases to poke and
// carries out the retries, saying what it did on log.
func (f controlFiles) read(ctx context.Context, log io.Writer) []string {
	var pokes []string
	for _, dir := range f.dirs {
		pokes = append(pokes, f.readDir(ctx, log, dir)...)
	}
	return pokes
}

// readDir takes the files of one control folder.
func (f controlFiles) readDir(ctx context.Context, log io.Writer, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // no folder: nothing asked
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var pokes []string
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			fmt.Fprintf(log, "claudopilot: warning: control: %v\n", err)
			continue
		}
		id, action := name, ""
		if i := strings.LastIndex(name, "."); i >= 0 {
			id, action = name[:i], name[i+1:]
		}
		switch {
		case id == "":
			fmt.Fprintf(log, "claudopilot: warning: control: %s names no phase: ignored\n", name)
		case action == "poke":
			fmt.Fprintf(log, "claudopilot: control: %s: poke\n", id)
			pokes = append(pokes, id)
		case action == "retry":
			f.retry(ctx, log, id)
		default:
			fmt.Fprintf(log, "claudopilot: warning: control: %s: unknown action %q (want <id>.poke or <id>.retry): ignored\n", name, action)
		}
	}
	return pokes
}

func (f controlFiles) retry(ctx context.Context, log io.Writer, id string) {
	res, err := Retry(ctx, f.roadmapDir, []string{id}, RetryOptions{})
	switch {
	case err != nil:
		fmt.Fprintf(log, "claudopilot: warning: control: %s.retry: %v\n", id, err)
	case len(res.Done) > 0:
		fmt.Fprintf(log, "claudopilot: control: %s: retry: %s set back to [pending]\n", id, strings.Join(res.Done, ", "))
	default:
		fmt.Fprintf(log, "claudopilot: control: %s: retry: nothing to retry (it is not [blocked])\n", id)
	}
}
