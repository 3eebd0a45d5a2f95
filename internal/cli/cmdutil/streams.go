package cmdutil

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
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

// SystemStreams are the process's own streams, with what the terminal
// on stderr can do; env is the environment as given (NO_COLOR, TERM).
func SystemStreams(env map[string]string) *Streams {
	s := &Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	fd := int(os.Stderr.Fd())
	s.ErrIsTTY = term.IsTerminal(fd)
	s.Color = ColorOn(s.ErrIsTTY, env)
	if !s.ErrIsTTY {
		return s
	}
	s.Width = func() int {
		w, _, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return w
	}
	s.Height = func() int {
		_, h, err := term.GetSize(fd)
		if err != nil {
			return 0
		}
		return h
	}
	resize := make(chan os.Signal, 1)
	signal.Notify(resize, syscall.SIGWINCH)
	s.Resize = resize
	return s
}

// ColorOn: colour only on a terminal, never with NO_COLOR set (to
// anything, as no-color.org asks) or on a dumb terminal.
func ColorOn(tty bool, env map[string]string) bool {
	_, noColor := env["NO_COLOR"]
	return tty && !noColor && env["TERM"] != "dumb"
}

// OutIsTerminal is true when the command's stdout is a terminal.
func (s *Streams) OutIsTerminal() bool {
	f, ok := s.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
