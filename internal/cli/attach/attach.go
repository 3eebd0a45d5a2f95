// Package attach is `claudopilot attach`: the live terminal of an agent
// that runs on one (ATTACH=1), to watch or, with --write, to type into.
package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/term"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/state"
)

// DetachKey is the key that detaches (Ctrl-], as telnet's escape): the
// agent goes on.
const DetachKey = 0x1d

// Options are attach's flags and argument.
type Options struct {
	App   *cmdutil.App
	ID    string
	Write bool
}

// NewCmd is `claudopilot attach`; runF runs the parsed options (Run when
// nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("attach", "show a running agent's live terminal (ATTACH=1); --write to type into it", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "attach", "attach ID [--write]", `
Show the live terminal of the agent working on phase ID (or issue #N), as
it draws it: the recent screen first, then everything as it comes. The
agent must run on a terminal: ATTACH=1 (--attach) runs every agent on one.
Ctrl-] detaches; the agent goes on. With --write what you type goes to
the agent; without, your keys are ignored (Ctrl-] aside).

The stream comes through a socket in .claudopilot/state/attach that only
you can open. What the driver logs and reads (the log, cost, the
needs-input marker) is the same whoever watches. See docs/run.md.`,
		"  claudopilot attach p3\n  claudopilot attach '#12' --write")
	write := fs.Bool("write", false, "type into the agent's terminal")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() != 1 {
		return nil, cmdutil.UsageErrorf("attach: name one phase or issue: claudopilot attach ID [--write]")
	}
	return &Options{App: a, ID: fs.Arg(0), Write: *write}, nil
}

// Run connects to the agent's socket and shows its terminal until the
// agent ends or the user detaches.
func Run(ctx context.Context, o *Options) error {
	a := o.App
	_, dir, err := cmdutil.StateDirOf(ctx, a, a.Cwd)
	if err != nil {
		return err
	}
	c, err := proc.DialUnix(state.AttachSocketIn(dir, o.ID))
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // the cause, without the socket's address
		}
		return fmt.Errorf("attach: no agent of %s runs on a terminal now (ATTACH=1 runs agents on one; claudopilot status shows what runs): %w", o.ID, err)
	}
	defer c.Close()
	if f, ok := a.S.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		old, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		defer term.Restore(int(f.Fd()), old)
	}
	detached, err := Session(c, a.S.In, a.S.Out, o.Write)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	if detached {
		fmt.Fprintf(a.S.Out, "\r\n[detached from %s: the agent goes on]\r\n", o.ID)
	} else {
		fmt.Fprintf(a.S.Out, "\r\n[the agent of %s ended]\r\n", o.ID)
	}
	return nil
}

// Session shows the terminal served on c on out, and reads in: DetachKey
// ends it (true); with write, other keys are typed into the agent's
// terminal. It also ends when the agent does (false).
func Session(c net.Conn, in io.Reader, out io.Writer, write bool) (detached bool, err error) {
	mode := byte(proc.AttachRead)
	if write {
		mode = proc.AttachWrite
	}
	if _, err := c.Write([]byte{mode}); err != nil {
		return false, err
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, c)
		ended <- err
	}()
	keys := make(chan bool, 1)
	go func() { keys <- typeKeys(c, in, write) }()
	select {
	case err := <-ended:
		return false, err
	case d := <-keys:
		if !d {
			// The input ended (not a terminal, or closed): watch on.
			return false, <-ended
		}
		return true, nil
	}
}

// typeKeys reads keys until DetachKey (true) or the input's end (false),
// typing them into c with write.
func typeKeys(c net.Conn, in io.Reader, write bool) bool {
	buf := make([]byte, 1024)
	for {
		n, err := in.Read(buf)
		p := buf[:n]
		i := bytes.IndexByte(p, DetachKey)
		if i >= 0 {
			p = p[:i]
		}
		if write && len(p) > 0 {
			if _, err := c.Write(p); err != nil {
				return false
			}
		}
		if i >= 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
}
