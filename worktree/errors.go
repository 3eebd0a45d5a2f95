package worktree

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotRepo is returned by Open when dir is not inside a git work tree.
	ErrNotRepo = errors.New("not a git repository")
	// ErrNoRev is returned when a revision does not resolve.
	ErrNoRev = errors.New("revision does not resolve")
	// ErrStale is returned by UpdateRef when the ref no longer has the
	// expected old value (another writer moved it first).
	ErrStale = errors.New("ref changed concurrently (stale old value)")
)

// GitError is a failed git invocation.
type GitError struct {
	Args     []string // arguments after `git -C <dir>`
	Dir      string   // the -C directory
	ExitCode int      // -1 when git did not exit normally (not started, killed, cancelled)
	Stderr   string   // full standard error
	Err      error    // underlying cause when ExitCode is -1 (e.g. context.Canceled), else nil
}

// maxErrLines bounds how many stderr lines Error includes.
const maxErrLines = 4

// Error formats as `git <args>: exit N: <first stderr lines>`; lines are
// trimmed, "hint:" lines dropped and the rest joined with "; ".
func (e *GitError) Error() string {
	var b strings.Builder
	b.WriteString("git ")
	b.WriteString(strings.Join(e.Args, " "))
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
		return b.String()
	}
	fmt.Fprintf(&b, ": exit %d", e.ExitCode)
	var lines []string
	for line := range strings.SplitSeq(e.Stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "hint:") {
			continue
		}
		lines = append(lines, line)
		if len(lines) == maxErrLines {
			break
		}
	}
	if len(lines) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(lines, "; "))
	}
	return b.String()
}

// Unwrap returns the underlying cause (context error, exec error), if any.
func (e *GitError) Unwrap() error { return e.Err }

// exitCode returns the git exit status carried by err, or -1 when err is not
// a *GitError for a normally exited git (including nil).
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) && ge.Err == nil {
		return ge.ExitCode
	}
	return -1
}
