// Command claudopilot runs a roadmap of phases as a dependency graph: every
// eligible phase gets an AI coding agent in its own git worktree, green work
// is merged into the base branch one phase at a time, red work is repaired
// or parked.
//
// Package main is a shell: it wires the process's streams and signals to
// the command tree (internal/cli/root), and the command's error to the
// exit code (internal/cli/cmdutil, the one place that decides it).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/root"
)

func main() {
	// First: the token leaves the process's environment and the process
	// becomes non-dumpable (root.Launch).
	env, err := root.Launch(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "claudopilot: "+err.Error())
		os.Exit(1)
	}
	ctx, cause := signalContext()
	s := cmdutil.SystemStreams(cmdutil.EnvMap(env))
	err = root.Run(ctx, os.Args[1:], s, env)
	os.Exit(cmdutil.Exit(os.Stderr, err, cause()))
}

// signalContext is cancelled by the first SIGINT or SIGTERM; the returned
// func tells which one arrived, so the exit code can say so (130 or 143).
func signalContext() (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	got := make(chan os.Signal, 1)
	go func() {
		sig := <-ch
		got <- sig
		cancel()
		// A second signal means "now": leave without the graceful stop.
		sig2 := <-ch
		if sig2 == syscall.SIGTERM {
			os.Exit(cmdutil.ExitSIGTERM)
		}
		os.Exit(cmdutil.ExitSIGINT)
	}()
	return ctx, func() os.Signal {
		select {
		case s := <-got:
			got <- s
			return s
		default:
			return nil
		}
	}
}
