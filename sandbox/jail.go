package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/tempdir"
	"github.com/claudopilot/claudopilot/worktree"
)

// Jail is one sandboxed process's setup: the command prefix to run it
// under, and what to check and carry back when it ends. A nil *Jail means
// no sandbox; its methods then do nothing.
type Jail struct {
	args    []string
	refs    *Refs
	objects *Objects
	links   Links
	admin   string     // the worktree's admin folder, which the process could write
	temp    func()     // removes the jail's own scratch folder (Leave); nil: none
	copies  []homeCopy // the private copies of the CLI state
	keep    string     // where the sessions of the phase's agents are kept ("": dropped)
	home    string     // the folder of the copies, removed by Leave
	net     string     // the network launcher's fifos, removed by Leave
}

// Enter sets up the sandbox for an agent in the worktree wt on branch, with
// scratch as its private folder (refs, objects, the CLI state's copy),
// keep as the folder that carries its CLI sessions to the phase's next
// attempt, and show as extra read-only paths (the prompt's folder). git is
// the driver's client of the repository. A nil Config returns a nil Jail.
func (c *Config) Enter(ctx context.Context, git *worktree.Client, wt, branch, scratch, keep string, show ...string) (*Jail, error) {
	if c == nil {
		return nil, nil
	}
	return c.enter(ctx, git, wt, branch, scratch, show, keep, true)
}

// EnterGate sets up the sandbox for a gate or WORKTREE_PREPARE_CMD in wt:
// nil unless SANDBOX_GATE is on. Such a command may move no ref.
func (c *Config) EnterGate(ctx context.Context, git *worktree.Client, wt string, show ...string) (*Jail, error) {
	if c == nil || !c.Gate {
		return nil, nil
	}
	return c.enter(ctx, git, wt, "", "", show, "", false)
}

// EnterDetached sets up the sandbox for an agent that may move no ref (a
// reviewer in its detached checkout wt); nil for a nil Config.
func (c *Config) EnterDetached(ctx context.Context, git *worktree.Client, wt string, show ...string) (*Jail, error) {
	if c == nil {
		return nil, nil
	}
	return c.enter(ctx, git, wt, "", "", show, "", true)
}

// enter sets up a jail; state: the process gets its copy of the CLI state
// (agents and reviewers, not gates).
func (c *Config) enter(ctx context.Context, git *worktree.Client, wt, branch, scratch string, show []string, keep string, state bool) (*Jail, error) {
	wt = Real(wt)
	common, err := git.CommonDir(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	common = Real(common)
	// Read from its .git link file as git reads it (git only when it is
	// not a plain "gitdir:" line): one process fewer per attempt (issue 25).
	admin, err := git.GitDir(ctx, wt)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the admin folder of %s: %w", wt, err)
	}
	admin = Real(admin)
	if filepath.Dir(admin) != filepath.Join(common, "worktrees") {
		// The main checkout itself (its admin folder is the whole common
		// directory), or a .git pointing somewhere else: neither is
		// made writable.
		return nil, fmt.Errorf("sandbox: %s is not a linked worktree of this repository (its git dir is %s)", wt, admin)
	}
	j := &Jail{admin: admin}
	a := Attempt{Worktree: wt, Common: common, Admin: admin}
	for _, s := range show {
		a.Show = append(a.Show, Real(s))
	}
	if branch != "" {
		tip, err := git.RevParse(ctx, "refs/heads/"+branch)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		if j.refs, err = PrepareRefs(common, scratch, branch, tip); err != nil {
			return nil, err
		}
		a.Refs = j.refs
	}
	if scratch == "" {
		if c.Scratch != "" {
			if err := ensureDir(c.Scratch); err != nil {
				return nil, err
			}
		}
		// A killed driver's are removed by the next jail made here
		// (os.MkdirTemp's were left for good, one per killed gate or
		// reviewer).
		if scratch, j.temp, err = tempdir.Dir(c.Scratch, ".jail-"); err != nil {
			return nil, fmt.Errorf("sandbox: a scratch folder: %w", err)
		}
	}
	if j.objects, err = PrepareObjects(scratch); err != nil {
		j.drop()
		return nil, err
	}
	a.Objects = j.objects
	if state {
		if j.copies, err = prepareState(scratch, keep, c.State); err != nil {
			j.drop()
			return nil, err
		}
		j.keep, j.home, a.copies = keep, filepath.Join(scratch, "home"), j.copies
	}
	if j.links, err = SaveLinks(wt, admin); err != nil {
		j.drop()
		return nil, err
	}
	if c.usesNet() {
		if j.net, err = makeNetFifos(scratch); err != nil {
			j.drop()
			return nil, err
		}
		a.netFifos = j.net
	}
	j.args = c.Args(a)
	return j, nil
}

// Wrap is the command prefix (bwrap and its options, ending in "--"); nil
// for a nil Jail.
func (j *Jail) Wrap() []string {
	if j == nil {
		return nil
	}
	return j.args
}

// Leave runs once the process group is gone: it restores the worktree's
// link files if they were changed and carries the branch tip back (see
// Refs.Sync). notes name what the process tried that was undone or
// discarded, for the attempt's log and a warning.
func (j *Jail) Leave(ctx context.Context, git *worktree.Client) (notes []string, err error) {
	if j == nil {
		return nil, nil
	}
	changed, lerr := j.links.Restore()
	for _, p := range changed {
		notes = append(notes, "restored "+p+", which the sandboxed process changed")
	}
	defer j.drop()
	// What persists of the CLI state; the rest goes.
	snotes, err := leaveState(j.copies, j.keep)
	notes = append(notes, snotes...)
	lerr = errors.Join(lerr, err)
	if j.home != "" {
		lerr = errors.Join(lerr, os.RemoveAll(j.home))
	}
	// A link planted in the admin folder would be followed by the next
	// git command the driver runs there, outside the sandbox.
	if err := worktree.CheckAdmin(j.admin); err != nil {
		lerr = errors.Join(lerr, fmt.Errorf("sandbox: %w", err))
	}
	// A tip the repository does not hold before the absorb is in no
	// history of it, the base's included: the done check then needs no
	// rev-list to know the branch is beyond the base (issue 25 §1).
	fresh := j.refs.newTip(ctx, git)
	// The new objects first: the branch's new tip is among them.
	if err := j.objects.absorb(ctx, git); err != nil {
		lerr = errors.Join(lerr, err)
		fresh = ""
	}
	if j.refs == nil {
		return notes, lerr
	}
	strays, serr := j.refs.Sync(ctx, git)
	if serr == nil && fresh != "" {
		git.NoteFresh(fresh)
	}
	for _, s := range strays {
		notes = append(notes, "discarded a ref the sandboxed process wrote: "+s)
	}
	return notes, errors.Join(lerr, serr)
}

// drop removes the jail's own scratch folder, if it has one, and the
// network launcher's fifos.
func (j *Jail) drop() {
	if j.net != "" {
		os.RemoveAll(j.net)
	}
	if j.temp != nil {
		j.temp()
	}
}

// Probe runs "true" in an empty sandbox built like an agent's, so a bwrap
// that is missing, too old, or lacks user namespaces is found before
// anything changes.
func (c *Config) Probe(ctx context.Context) error {
	bw := c.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	path, err := exec.LookPath(bw)
	if err != nil {
		return fmt.Errorf("sandbox: bubblewrap (%s) is not installed: %w", bw, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	probe := *c
	probe.Bwrap = path
	// A second try before the verdict: on a loaded machine bwrap's own
	// set-up of the sandbox's loopback has failed now and then ("loopback:
	// Failed RTM_NEWADDR"), and a failed probe is not harmless: SANDBOX=auto
	// would run the night unconfined, SANDBOX_NET's default on the host's
	// network. A bwrap that cannot work fails both tries.
	msg, err := probe.probeOnce(ctx)
	if err != nil && ctx.Err() == nil {
		msg, err = probe.probeOnce(ctx)
	}
	if err != nil {
		if c.Outside != "" && !c.Net {
			return fmt.Errorf("sandbox: the network in front of the sandbox (slirp4netns) does not work here: %s: %w", msg, err)
		}
		return fmt.Errorf("sandbox: bubblewrap does not work here (user namespaces off?): %s: %w", msg, err)
	}
	return nil
}

// probeOnce runs the probe once and returns its output on one line when
// it fails. The network launcher's fifos are in a folder of TMPDIR that a
// killed driver's successor reclaims (internal/tempdir): the launcher's
// own mktemp folder, removed by its exit trap, stayed when a kill of the
// driver's process group took the launcher too.
func (c *Config) probeOnce(ctx context.Context) (string, error) {
	var a Attempt
	if c.usesNet() {
		d, release, err := tempdir.Dir("", "claudopilot-probe-")
		if err != nil {
			return "", fmt.Errorf("sandbox: the probe's folder: %w", err)
		}
		defer release()
		if a.netFifos, err = makeNetFifos(d); err != nil {
			return "", err
		}
	}
	args := c.Args(a, "true")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return strings.ReplaceAll(string(bytes.TrimSpace(out.Bytes())), "\n", "; "), err
	}
	return "", nil
}
