package main

import (
	"context"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/settings"
)

// gitEnv is the environment for the driver's own git commands and its
// agents.
func gitEnv(a *app) []string { return wire.Env(a.env).Driver() }

// parseSettingFlags parses the flags of a command that takes the
// settings' flags of scope sc and an optional ROADMAP_DIR. Flag values are
// checked before the repository is even opened, so misuse is reported as
// such (exit 64).
func parseSettingFlags(ctx context.Context, a *app, fs *pflag.FlagSet, sc settings.Scope, args []string) (string, error) {
	args = boolFlagValues(fs, args)
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() > 1 {
		return "", usageErrorf("%s takes at most one ROADMAP_DIR, got %d", fs.Name(), fs.NArg())
	}
	if err := settings.CheckFlags(fs, sc); err != nil {
		return "", err
	}
	return findRoadmapDir(ctx, a, fs.Arg(0))
}

// boolFlagValues reads `--keep-going 1` as `--keep-going=1`: a boolean
// flag takes no separate value in pflag, so the 1 would otherwise be taken
// for the roadmap folder. Only 0/1/true/false that name no folder count.
func boolFlagValues(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, isFlag := strings.CutPrefix(a, "--")
		f := fs.Lookup(name)
		if isFlag && f != nil && f.Value.Type() == "bool" && i+1 < len(args) {
			switch v := args[i+1]; v {
			case "0", "1", "true", "false":
				if _, err := os.Stat(v); err != nil {
					out = append(out, a+"="+v)
					i++
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}
