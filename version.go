package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// version is set at release time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func cmdVersion(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "version", "version", "Print claudopilot's version, the commit it was built from, and the Go version.", "  claudopilot version")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	v, commit, dirty, goVersion := version, "unknown", "", "unknown"
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
	fmt.Fprintf(a.s.Out, "claudopilot %s\ncommit %s%s\n%s\n", v, commit, dirty, goVersion)
	return nil
}
