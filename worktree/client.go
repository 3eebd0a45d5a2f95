package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claudopilot/claudopilot/launch"
)

// Client runs git for one repository. Use Open to build one; a literal
// Client{Dir: ..., Env: ...} also works. A Client must not be copied after
// first use: use WithEnv for a second client of the same repository.
type Client struct {
	Dir string   // top level of the worktree git runs in, normally the main one (absolute)
	Env []string // full environment for git; nil inherits the process environment

	lockOnce  sync.Once
	shared    *repoLocks // shared by every Client made from this one with WithEnv
	cred      Credential // the remote's credential (WithCredential); nil: git's own helpers
	cdMu      sync.Mutex // guards commonDir
	commonDir string
	// registered, when set (tests), is called by a worktree add once the
	// worktree is registered and the worktree lock let go, before its
	// checkout.
	registered func()
	// refLockWait, when set (tests), is how long ClearStaleRefLocks
	// waits for a live git to let go of a lock (0: staleLockWait).
	refLockWait time.Duration
}

// repoLocks serialize what must not run concurrently in one repository,
// whichever Client runs it.
type repoLocks struct {
	wt sync.Mutex // git worktree add/remove/prune and worktree listing, fetch
	ex sync.Mutex // Exclude's read-modify-write of info/exclude
	// cfg: writers of the repository's config file, which git locks
	// without waiting (branch descriptions; branch -D drops a branch's
	// section). Taken after wt when both are held.
	cfg sync.Mutex
	// guard, once Protect ran, keeps the repository's config, hooks/
	// and info/ as they were.
	guard atomic.Pointer[guard]
	// resolvers: the long-lived cat-file --batch-check per directory and
	// environment (batch.go).
	resMu     sync.Mutex
	resolvers map[string]*resolver
	keep      atomic.Bool // KeepResolvers
	// fresh: commits an absorb brought in that the store did not hold
	// before (NoteFresh), each taken once by TakeFresh.
	freshMu sync.Mutex
	fresh   map[string]bool
	// idents: who commits, per environment (commitpack.go).
	idents idents
}

func (c *Client) locks() *repoLocks {
	c.lockOnce.Do(func() {
		if c.shared == nil {
			c.shared = &repoLocks{}
		}
	})
	return c.shared
}

// WithEnv returns a client of the same repository with another
// environment (an agent's, without the token), sharing this one's locks:
// two Clients of one repository that did not share them could run git
// worktree add concurrently, which git 2.39 does not survive.
func (c *Client) WithEnv(env []string) *Client {
	c.cdMu.Lock()
	common := c.commonDir // the same repository's: not asked again
	c.cdMu.Unlock()
	return &Client{Dir: c.Dir, Env: env, shared: c.locks(), cred: c.cred, commonDir: common}
}

// Fetch runs git fetch from remote with hooks off. It holds the worktree
// lock: a fetch walks every worktree's HEAD, and one that git worktree add
// is writing at that moment is not yet valid ("bad object
// worktrees/<name>/HEAD").
func (c *Client) Fetch(ctx context.Context, remote string, refspecs ...string) error {
	l := c.locks()
	l.wt.Lock()
	defer l.wt.Unlock()
	_, err := c.remote(ctx, append([]string{"-c", "core.hooksPath=/dev/null", "fetch", "--quiet", "--no-tags", remote}, refspecs...)...)
	return err
}

// scrubbed reports variables that would redirect git away from the -C
// directory's repository, index or object store; they are removed from every
// git invocation (e.g. when claudopilot itself is started from a git hook).
func scrubbed(name string) bool {
	switch name {
	case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
		"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES":
		return true
	}
	return false
}

// hardened goes before every git command the driver runs: whatever an
// agent planted in the repository or a worktree, the driver's own git runs
// no hook (core.hooksPath), no fsmonitor (core.fsmonitor: git status and
// add would start it, 20 times in one run of issue 21's), and does not
// recurse into submodules on checkout; nor does a branch it makes from a
// remote-tracking one get tracking settings written in the config (which
// Protect keeps as it was). Git hands these on to the git it starts
// itself (in a submodule), through GIT_CONFIG_PARAMETERS.
var hardened = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "submodule.recurse=false", "-c", "branch.autoSetupMerge=false"}

// waitDelay bounds how long a finished or cancelled git may hold its output
// pipes open through leftover children (hooks).
const waitDelay = 10 * time.Second

// Open returns a Client for the repository containing dir. Client.Dir is the
// top level of the work tree containing dir (git rev-parse --show-toplevel),
// so opening from inside a linked worktree yields a Client rooted there. It
// returns an error wrapping ErrNotRepo when dir is not inside a git work tree
// (including a bare repository or a .git directory).
func Open(ctx context.Context, dir string, env []string) (*Client, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open %s: not a directory", dir)
	}
	c := &Client{Dir: abs, Env: env}
	// One git for the three answers (each command of the CLI opens a
	// client, and a git process costs 5-10 ms of CPU on a busy machine):
	// outside a work tree (a bare repository, a .git folder) the second
	// fails with 128, as the first alone does outside any repository.
	out, err := c.run(ctx, abs, nil, nil, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		if exitCode(err) == 128 {
			return nil, fmt.Errorf("open %s: %w", dir, ErrNotRepo)
		}
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	lines := strings.Split(trimNL(out), "\n")
	if len(lines) != 3 || lines[0] != "true" {
		return nil, fmt.Errorf("open %s: %w (not inside a work tree)", dir, ErrNotRepo)
	}
	c.Dir = lines[1]
	if c.Dir == "" {
		return nil, fmt.Errorf("open %s: %w (no top level)", dir, ErrNotRepo)
	}
	if common := lines[2]; common == "" || !filepath.IsAbs(common) {
		return nil, fmt.Errorf("open %s: common dir: unexpected output %q", dir, common)
	}
	c.commonDir = filepath.Clean(lines[2])
	return c, nil
}

// Git runs `git -C c.Dir args...` and returns stdout with trailing newlines
// trimmed.
func (c *Client) Git(ctx context.Context, args ...string) (string, error) {
	out, err := c.run(ctx, "", nil, nil, args...)
	return trimNL(out), err
}

// GitIn runs `git -C dir args...`; a relative dir is taken relative to c.Dir,
// "" means c.Dir.
func (c *Client) GitIn(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := c.run(ctx, dir, nil, nil, args...)
	return trimNL(out), err
}

// GitInput is GitIn with stdin fed to git.
func (c *Client) GitInput(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	if stdin == nil {
		stdin = []byte{}
	}
	out, err := c.run(ctx, dir, stdin, nil, args...)
	return trimNL(out), err
}

func trimNL(b []byte) string { return strings.TrimRight(string(b), "\n") }

// abs resolves p against c.Dir.
func (c *Client) abs(p string) string {
	if p == "" {
		return c.Dir
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir, p)
}

// environ is the environment for one git process: c.Env (or the process
// environment when nil) minus scrubbed variables and every variable whose
// name says it holds a secret (launch.SecretName: GITHUB_TOKEN, the agent
// CLIs' keys, …), plus extra (which wins). Any process of the same user
// reads a git's /proc/<pid>/environ while it runs; the driver's git needs
// no secret but the push's credential, which comes another way
// (WithCredential).
func (c *Client) environ(extra []string) []string {
	base := c.Env
	if base == nil {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if scrubbed(name) || launch.SecretName(name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// run executes `git -C dir args...`. stdin nil means no input (/dev/null).
// stdout is returned even on failure (merge-tree reports conflicts with exit
// 1). Failures are *GitError. A command git refused because a worktree's
// admin folder has an empty commondir (what a kill during `git worktree
// add` leaves) is made once more after mendCommondirs: git dies on it
// before it changes anything, in every command that reads the worktrees.
func (c *Client) run(ctx context.Context, dir string, stdin []byte, extraEnv []string, args ...string) ([]byte, error) {
	return c.runWith(ctx, dir, stdin, extraEnv, nil, args)
}

// runWith is run with files handed to git as its fds 3, 4, … (the
// credential's pipe; a command git refused for an empty commondir has
// read none of it, so the second try finds it whole).
func (c *Client) runWith(ctx context.Context, dir string, stdin []byte, extraEnv []string, files []*os.File, args []string) ([]byte, error) {
	out, err := c.runOnce(ctx, dir, stdin, extraEnv, files, args)
	var ge *GitError
	if !errors.As(err, &ge) || ge.ExitCode != 128 || !strings.Contains(ge.Stderr, "/commondir") {
		return out, err
	}
	if mended, merr := c.mendCommondirs(ctx); merr != nil || !mended {
		return out, err
	}
	return c.runOnce(ctx, dir, stdin, extraEnv, files, args)
}

// runOnce is runWith without the mending.
func (c *Client) runOnce(ctx context.Context, dir string, stdin []byte, extraEnv []string, files []*os.File, args []string) ([]byte, error) {
	dir = c.abs(dir)
	defer c.guardFor(args)()
	cmd := c.command(ctx, dir, extraEnv, args)
	cmd.ExtraFiles = files
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	if err == nil || (errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() && ctx.Err() == nil) {
		return stdout.Bytes(), nil
	}
	ge := &GitError{Args: slices.Clone(args), Dir: dir, ExitCode: -1, Stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		ge.Err = ctx.Err()
	case errors.As(err, &ee) && ee.Exited():
		ge.ExitCode = ee.ExitCode()
	default:
		ge.Err = err
	}
	return stdout.Bytes(), ge
}

// pathMissing reports whether p does not exist (a dangling symlink exists).
func pathMissing(p string) (bool, error) {
	_, err := os.Lstat(p)
	if err == nil {
		return false, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return false, err
}

// splitNUL splits NUL-terminated output into its non-empty fields.
func splitNUL(b []byte) []string {
	var out []string
	for f := range strings.SplitSeq(string(b), "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}
