// Package version is `claudopilot version`.
package version

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// Version is set at release time with
// -ldflags "-X github.com/claudopilot/claudopilot/internal/cli/version.Version=v1.2.3".
var Version = "dev"

// Options are version's: none but the streams.
type Options struct{ App *cmdutil.App }

// NewCmd is `claudopilot version`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("version", "print the version and commit", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "version", "version", "Print claudopilot's version, the commit it was built from, and the Go version.", "  claudopilot version")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	return &Options{App: a}, nil
}

// Run prints the version, the commit and the Go version.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	v, commit, dirty, goVersion := Version, "unknown", "", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = " (modified)"
				}
			}
		}
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(a.S.Out, "claudopilot %s\ncommit %s%s\n%s\n", v, commit, dirty, goVersion)
	return nil
}
