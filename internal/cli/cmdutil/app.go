package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// App is what every command gets: streams, the environment as given, and
// the working directory. Nothing below main reads os.Getenv.
type App struct {
	S   *Streams
	Env map[string]string
	Cwd string
	// Commands lists the command tree (help and completion read it).
	Commands func() []Command
	// Cluster is the Kubernetes runner (AGENT_RUNNER=kubernetes), which
	// the command tree's root injects; nil: none (a command's tests), and
	// such a run refuses (ErrNoCluster).
	Cluster Cluster

	// Repos remembers the repository a command opened (OpenRepo); nil:
	// every OpenRepo asks git (a command's own tests). A copy of the App
	// (demo's, completion's) shares it: OpenRepo checks that a folder is
	// of the remembered work tree before it answers from it.
	Repos *Repos
}

// Repos is the repository a command opened first (App.OpenRepo).
type Repos struct {
	mu    sync.Mutex
	first *worktree.Client
}

// OpenRepo opens the repository holding dir (worktree.Open) for the
// driver's git (GitEnv). A command opens its repository once: a later
// call for a folder git would find the same work tree from gets a client
// of it without a git process (worktree.Client.Within); the roadmap
// folder's and the current folder's were a git process each (issue 23).
func (a *App) OpenRepo(ctx context.Context, dir string) (*worktree.Client, error) {
	env := a.GitEnv()
	r := a.Repos
	if r == nil {
		return worktree.Open(ctx, dir, env)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first != nil && filepath.IsAbs(dir) {
		if c, ok := r.first.Within(dir, env); ok {
			return c, nil
		}
	}
	c, err := worktree.Open(ctx, dir, env)
	if err == nil && r.first == nil {
		r.first = c
	}
	return c, err
}

// Getenv is the environment's value of k.
func (a *App) Getenv(k string) string { return a.Env[k] }

// GitEnv is the environment for the driver's own git commands and its
// agents.
func (a *App) GitEnv() []string { return Env(a.Env).Driver() }

// Command is one verb of the command tree.
type Command struct {
	Name    string
	Summary string
	Run     func(ctx context.Context, a *App, args []string) error
	Hidden  bool
}

// NewFlags makes a command's flag set. Its usage text is the command's
// synopsis, the flags, and an example: what --help shows.
func NewFlags(a *App, name, synopsis, about, example string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(a.S.Err)
	fs.SortFlags = false
	fs.Usage = func() {
		w := a.S.Out
		fmt.Fprintf(w, "Usage: claudopilot %s\n\n%s\n", synopsis, strings.TrimSpace(about))
		if fs.HasFlags() {
			fmt.Fprintf(w, "\nFlags:\n%s", fs.FlagUsages())
		}
		fmt.Fprintf(w, "\nExample:\n%s\n", example)
	}
	return fs
}

// ParseFlags parses args; --help prints the usage and ends the command with
// success (ErrHelpShown), and misuse becomes a usage error (exit 64).
func ParseFlags(fs *pflag.FlagSet, args []string) error {
	fs.SetOutput(discard{})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return ErrHelpShown // pflag has printed the usage
		}
		return UsageErrorf("%s: %v (see 'claudopilot %s --help')", fs.Name(), err, fs.Name())
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// ErrHelpShown ends a command whose --help was shown (exit 0).
var ErrHelpShown = errors.New("help shown")

// ParseSettingFlags parses the flags of a command that takes the
// settings' flags of scope sc and an optional ROADMAP_DIR. Flag values are
// checked before the repository is even opened, so misuse is reported as
// such (exit 64).
func ParseSettingFlags(ctx context.Context, a *App, fs *pflag.FlagSet, sc settings.Scope, args []string) (string, error) {
	args = BoolFlagValues(fs, args)
	if err := ParseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() > 1 {
		return "", UsageErrorf("%s takes at most one ROADMAP_DIR, got %d", fs.Name(), fs.NArg())
	}
	if err := settings.CheckFlags(fs, sc); err != nil {
		return "", err
	}
	return FindRoadmapDir(ctx, a, fs.Arg(0))
}

// BoolFlagValues reads `--keep-going 1` as `--keep-going=1`: a boolean
// flag takes no separate value in pflag, so the 1 would otherwise be taken
// for the roadmap folder. Only 0/1/true/false that name no folder count.
func BoolFlagValues(fs *pflag.FlagSet, args []string) []string {
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

// NewCommand makes a command in gh's shape: its Run parses the arguments
// into options (parse), then runs them with runF, or with run when runF is
// nil. A test of a command's flags passes its own runF and looks at the
// options; a test of its behaviour calls run with options it builds.
func NewCommand[O any](name, summary string, parse func(context.Context, *App, []string) (*O, error), run, runF func(context.Context, *O) error) Command {
	if runF == nil {
		runF = run
	}
	return Command{Name: name, Summary: summary, Run: func(ctx context.Context, a *App, args []string) error {
		o, err := parse(ctx, a, args)
		if err != nil {
			return err
		}
		return runF(ctx, o)
	}}
}
