package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
)

// GitStream runs `git -C dir args...` and hands its stdout to read as it
// comes, for output too large to hold (a landing's patches with binary
// files). An error of read stops git; git's own failure is a *GitError.
func (c *Client) GitStream(ctx context.Context, dir string, read func(io.Reader) error, args ...string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir = c.abs(dir)
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = c.environ(nil)
	dieWithUs(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = waitDelay
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git %v: %w", args, err)
	}
	if err := cmd.Start(); err != nil {
		return &GitError{Args: slices.Clone(args), Dir: dir, ExitCode: -1, Err: err}
	}
	rerr := read(out)
	if rerr != nil {
		cancel()
	}
	// Whatever read left unread is drained, so git is never blocked on a
	// full pipe while we wait for it.
	io.Copy(io.Discard, out)
	werr := cmd.Wait()
	if rerr != nil {
		return rerr
	}
	if werr == nil {
		return nil
	}
	ge := &GitError{Args: slices.Clone(args), Dir: dir, ExitCode: -1, Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		ge.Err = ctx.Err()
	case errors.As(werr, &ee) && ee.Exited():
		ge.ExitCode = ee.ExitCode()
	default:
		ge.Err = werr
	}
	return ge
}
