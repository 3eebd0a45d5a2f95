// Command claudopilot runs a roadmap of phases as a dependency graph: every
// eligible phase gets an AI coding agent in its own git worktree, green work
// is merged into the base branch one phase at a time, red work is repaired
// or parked.
//
// Package main is a shell: root.Main wires the process's streams and
// signals to the command tree (internal/cli/root), and the command's error
// to the exit code (internal/cli/cmdutil, the one place that decides it).
package main

import (
	"os"

	"github.com/claudopilot/claudopilot/internal/cli/root"
)

func main() { os.Exit(root.Main()) }
