// Command claudopilot runs a roadmap of phases as a dependency graph: every
// eligible phase gets an AI coding agent in its own git worktree, green work
// is merged into the base branch one phase at a time, red work is repaired
// or parked.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/claudopilot/claudopilot/launch"
)

// Streams are the command's standard streams. Tests swap them for buffers.
type Streams struct {
	In       io.Reader
	Out      io.Writer
	Err      io.Writer
	ErrIsTTY bool // progress is redrawn in place only on a terminal
	Color    bool
	// Width is the terminal's width in columns now (0: unknown), read at
	// each redraw; Resize signals a change (SIGWINCH). Tests set both to
	// render the live table at a given width.
	Width  func() int
	Height func() int // the terminal's rows now (0: unknown)
	Resize <-chan os.Signal
}

func main() {
	// First: the token leaves the process's environment (a re-exec hands
	// it over a pipe) and the process becomes non-dumpable, so agents
	// cannot read it from /proc (package launch).
	env, err := launch.Hide(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, "claudopilot: "+err.Error())
		os.Exit(1)
	}
	ctx, cause := signalContext()
	s := &Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	s.ErrIsTTY = term.IsTerminal(int(os.Stderr.Fd()))
	s.Color = colorOn(s.ErrIsTTY, envMap(env))
	if s.ErrIsTTY {
		s.Width = func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
		s.Height = func() int {
			_, h, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return h
		}
		resize := make(chan os.Signal, 1)
		signal.Notify(resize, syscall.SIGWINCH)
		s.Resize = resize
	}
	err = run(ctx, os.Args[1:], s, env)
	code := exitCode(err, cause())
	if err != nil && !isSilent(err) {
		fmt.Fprintln(os.Stderr, formatError(err))
	}
	os.Exit(code)
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
			os.Exit(143)
		}
		os.Exit(130)
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

// colorOn: colour only on a terminal, never with NO_COLOR set (to
// anything, as no-color.org asks) or on a dumb terminal.
func colorOn(tty bool, env map[string]string) bool {
	_, noColor := env["NO_COLOR"]
	return tty && !noColor && env["TERM"] != "dumb"
}
