package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Modes of the SANDBOX setting.
const (
	Off   = "off"
	Bwrap = "bwrap"
	// Auto is bwrap where bubblewrap is installed and its probe
	// succeeds, else off with a warning; the default since issue 21.
	Auto = "auto"
)

// ParseMode reads a SANDBOX value: "auto", "bwrap", or "off" (also "",
// "0", "no", "none").
func ParseMode(v string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "auto":
		return Auto, nil
	case "bwrap", "bubblewrap":
		return Bwrap, nil
	case "", "off", "0", "no", "none", "false":
		return Off, nil
	}
	return "", fmt.Errorf("SANDBOX=%q: want auto, bwrap or off", v)
}

// StateDirs are the agent CLIs' own folders and files under HOME (Claude
// Code, Codex, opencode): each sandboxed agent gets a private copy of
// those that exist (state.go).
var StateDirs = []string{".claude", ".claude.json", ".codex", ".config/opencode", ".local/share/opencode", ".cache/opencode"}

// WithState is c with more CLI state paths copied per process: a lane's
// own config folder (given to its agents as CLAUDE_CONFIG_DIR) is copied
// and carried back like ~/.claude. c itself is not changed.
func (c *Config) WithState(paths ...string) *Config {
	if c == nil {
		return nil
	}
	d := *c
	d.State = append(slices.Clip(c.State), paths...)
	return &d
}

// Config is the sandbox of one run. The zero value has no network,
// hides nothing and leaves gates outside.
type Config struct {
	Bwrap string // the bwrap binary
	Net   bool   // share the host's network (SANDBOX_NET=1)
	// Outside is the slirp4netns program for SANDBOX_NET=outside (net.go):
	// when Net is off, the sandbox reaches outside addresses through it,
	// but not the host's loopback. "" with Net off: no network at all.
	Outside string
	Gate    bool     // gates and WORKTREE_PREPARE_CMD run inside too (SANDBOX_GATE)
	RW      []string // writable besides the worktree: SANDBOX_RW; missing ones are skipped
	// State are the agent CLIs' state folders and files (HomeState, and
	// a lane's config folder through WithState): an agent or reviewer
	// gets a private copy of each (state.go); gates and prepare see them
	// read-only.
	State []string
	Hide  []string // hidden under an empty tmpfs: the base checkout and the worktrees' folder
	// Keep are read-only paths under /tmp shown again over the private
	// /tmp: the tools the commands need (PATH folders, a command's own
	// folder) when they live there (ToolPaths).
	Keep []string
	// Scratch is the folder for the private stores of sandboxed
	// processes that have no folder of their own (gates, prepare,
	// reviewers); "" is the system's temporary folder.
	Scratch string
}

// Attempt is what one process may see and write besides the read-only
// system. Paths are absolute and free of symlinks (bwrap mounts at the
// path it is given).
type Attempt struct {
	Worktree string // writable; the process starts in it (or below)
	Common   string // the git common directory: read-only
	Admin    string // the worktree's admin folder in Common (worktrees/<name>): writable
	// Objects is the private object store mounted over Common/objects,
	// with the shared store read-only as its alternate; nil leaves
	// objects/ read-only.
	Objects *Objects
	// Refs is the private ref folder from PrepareRefs, mounted over the
	// folder of the branch's ref; nil for gates and prepare, which may not
	// move any ref.
	Refs *Refs
	Show []string // read-only, where a path must resolve (the phase's log folder, which holds the prompt)
	// copies are the private copies of the CLI state, bound over the
	// originals (prepareState).
	copies []homeCopy
	// netFifos is the folder of the network launcher's fifos
	// (makeNetFifos); "" lets the launcher make its own.
	netFifos string
}

// Args returns the bwrap command line that runs argv under a.
func (c *Config) Args(a Attempt, argv ...string) []string {
	bw := c.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	args := []string{bw,
		// Processes die with the attempt: the shell is PID 1 of a new PID
		// namespace, and the kernel kills and reaps the whole namespace
		// before its exit is reported (with bwrap's own init as PID 1
		// instead, bwrap returned while a setsid daemon still ran, 1 run
		// in 5 here); die-with-parent covers a SIGKILLed driver. Without
		// capabilities (bwrap keeps them when started as root) the
		// read-only mounts cannot be remounted from inside; a new session
		// keeps the agent off the driver's terminal (TIOCSTI).
		"--die-with-parent", "--unshare-pid", "--as-pid-1", "--new-session", "--cap-drop", "ALL",
	}
	if !c.Net {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	for _, k := range c.Keep {
		args = append(args, "--ro-bind-try", k, k)
	}
	// Later mounts cover earlier ones, so the order is: hide, then
	// re-expose read-only, then open the writable holes.
	for _, h := range c.Hide {
		args = append(args, "--tmpfs", h)
	}
	if a.Common != "" {
		args = append(args, "--ro-bind", a.Common, a.Common)
		if o := a.Objects; o != nil {
			// The shared store read-only at a second place, and the
			// private one over objects/: git reads every object and
			// writes new ones, but replaces or deletes none of the
			// repository's, nor its alternates.
			shared := filepath.Join(a.Common, "objects")
			args = append(args, "--ro-bind", shared, o.Shared, "--bind", o.Dir, shared)
		}
		if a.Admin != "" {
			args = append(args, "--bind", a.Admin, a.Admin)
		}
		if r := a.Refs; r != nil {
			args = append(args,
				"--bind", r.refsDir(), r.refMount(a.Common),
				"--bind", r.logsDir(), r.logMount(a.Common))
		}
	}
	for _, s := range a.Show {
		args = append(args, "--ro-bind-try", s, s)
	}
	args = append(args, stateArgs(a.copies)...)
	for _, p := range c.RW {
		args = append(args, "--bind-try", p, p)
	}
	// No --chdir: bwrap starts in the caller's working directory (the
	// worktree, or a folder in it for a lockfile command).
	if a.Worktree != "" {
		args = append(args, "--bind", a.Worktree, a.Worktree)
	}
	// The hiding tmpfs mounts go read-only last, once every mount point
	// in them is made: a write there fails instead of vanishing.
	for _, h := range c.Hide {
		args = append(args, "--remount-ro", h)
	}
	args = append(args, "--")
	return c.withNet(a.netFifos, append(args, argv...))
}

// HomeRW lists extra (SANDBOX_RW, split on ':') as absolute paths; "~/"
// in extra means home. A relative path is an error: relative to what the
// agent runs in, it would differ per phase.
func HomeRW(home, extra string) ([]string, error) {
	var out []string
	for _, p := range filepath.SplitList(extra) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.HasPrefix(p, "~/") && home != "" {
			p = filepath.Join(home, p[2:])
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("SANDBOX_RW: %q is not an absolute path", p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out, nil
}

// Real resolves symlinks in p, or returns p cleaned when it does not
// exist: bwrap mounts at the literal path, and a path through a symlink
// would land somewhere else.
func Real(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// ensureDir makes a mount point that must exist before bwrap runs: inside,
// the system is read-only and bwrap could not create it.
func ensureDir(p string) error {
	if err := os.MkdirAll(p, 0o755); err != nil {
		return fmt.Errorf("sandbox: mount point %s: %w", p, err)
	}
	return nil
}

// ToolPaths lists what the private /tmp and the fresh /dev would hide that
// the commands need to start: the folders on pathEnv under /tmp or /dev
// (/dev/shm), and the folder of each command whose first word is an
// absolute path there. Without them an agent installed (or a test's or a
// benchmark's fake agent kept) under /tmp or /dev/shm is "not found"
// inside the sandbox.
func ToolPaths(pathEnv string, cmds ...string) []string {
	tmp := Real("/tmp")
	under := func(p string) bool {
		for _, h := range []string{tmp, "/dev"} {
			if p != h && strings.HasPrefix(p, h+"/") {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) {
			return
		}
		p = Real(p)
		if under(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		add(d)
	}
	for _, c := range cmds {
		if f := strings.Fields(c); len(f) > 0 && filepath.IsAbs(f[0]) {
			add(filepath.Dir(f[0]))
		}
	}
	return out
}
