package root

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// Main is the process's whole life as the claudopilot command: it hides
// the token (Launch), wires the real streams and signals to Run and
// returns the exit code (cmdutil.Exit, the one place that decides it).
// Package main calls it, and so do the end-to-end tests' binaries, which
// run themselves as claudopilot (package main cannot be imported).
func Main() int {
	// First: the token leaves the process's environment and the process
	// becomes non-dumpable (Launch).
	env, err := Launch(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "claudopilot: "+err.Error())
		return 1
	}
	ctx, cause := signalContext()
	s := cmdutil.SystemStreams(cmdutil.EnvMap(env))
	err = Run(ctx, os.Args[1:], s, env)
	return cmdutil.Exit(os.Stderr, err, cause())
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
