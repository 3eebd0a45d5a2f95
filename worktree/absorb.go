package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// unpackLimit is git's transfer.unpackLimit default: a smaller batch of
// objects is stored loose, a larger one as a pack.
const unpackLimit = 100

var (
	looseDir  = lazy.Regexp(`^[0-9a-f]{2}$`)
	looseName = lazy.Regexp(`^[0-9a-f]{2}/([0-9a-f]{38}|[0-9a-f]{62})$`)
	packName  = lazy.Regexp(`^pack/pack-[0-9a-f]{40,64}\.pack$`)
)

// Absorb moves the objects a sandboxed process wrote into its private
// object store dir into the repository's store, through the checks git
// applies to a pack received from a stranger: each object is stored under
// the name its content hashes to (a file named after an object of the
// base, holding other content, adds that other content and never replaces
// the base's), and git index-pack --strict (or unpack-objects --strict for
// a few) refuses a malformed object or one that points at a missing
// object. Only loose objects and pack files are read, each a plain file:
// the process's index files, alternates, commit-graph or multi-pack-index
// are dropped unread, and each pack is indexed again by git. dir is
// emptied. n is how many objects went in.
func (c *Client) Absorb(ctx context.Context, dir string) (n int, err error) {
	packs, loose, err := sortStore(dir)
	if err != nil || len(packs)+len(loose) == 0 {
		return 0, err
	}
	for _, p := range packs {
		// p is absolute: never taken for an option.
		if _, err := c.run(ctx, "", nil, nil, "index-pack", p); err != nil {
			return 0, fmt.Errorf("absorb the objects of %s: %s is not a valid pack: %w", dir, filepath.Base(p), err)
		}
	}
	if len(packs) == 0 && sha1Store(loose) {
		// Loose objects only (an agent's commits): the driver streams
		// them as a pack itself, so git runs once, not three times
		// (cat-file, pack-objects, unpack-objects; issue 25 §1).
		into := []string{"index-pack", "--stdin", "--strict"}
		if len(loose) < unpackLimit {
			into = []string{"unpack-objects", "-q", "--strict"}
		}
		if err := c.feed(ctx, into, func(w io.Writer) error { return writeLoosePack(w, loose) }); err != nil {
			return 0, fmt.Errorf("absorb the %d objects of %s: %w", len(loose), dir, err)
		}
		return len(loose), os.RemoveAll(dir)
	}
	// The private store alone: its alternate (the shared store) is gone.
	env := []string{"GIT_OBJECT_DIRECTORY=" + dir, "GIT_ALTERNATE_OBJECT_DIRECTORIES="}
	list, err := c.run(ctx, "", nil, env, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)", "--unordered")
	if err != nil {
		return 0, fmt.Errorf("absorb the objects of %s: %w", dir, err)
	}
	n = bytes.Count(list, []byte("\n"))
	if n == 0 {
		return 0, nil
	}
	into := []string{"index-pack", "--stdin", "--strict"}
	if n < unpackLimit {
		into = []string{"unpack-objects", "-q", "--strict"}
	}
	// --window=0: no delta search; the pack only carries the objects.
	if err := c.pipe(ctx, list, env, []string{"pack-objects", "--stdout", "-q", "--window=0"}, into); err != nil {
		return 0, fmt.Errorf("absorb the %d objects of %s: %w", n, dir, err)
	}
	return n, os.RemoveAll(dir)
}

// sortStore lists the pack files and the loose objects of the object
// store dir, after removing everything else in it: symbolic links,
// index files, info/ (alternates), commit-graph, multi-pack-index,
// temporary files. None of it is read.
func sortStore(dir string) (packs, loose []string, err error) {
	var drop []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir() && (looseDir().MatchString(rel) || rel == "pack"):
			return nil
		case d.Type().IsRegular() && looseName().MatchString(rel):
			loose = append(loose, p)
			return nil
		case d.Type().IsRegular() && packName().MatchString(rel):
			packs = append(packs, p)
			return nil
		}
		drop = append(drop, p)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("absorb the objects of %s: %w", dir, err)
	}
	for _, p := range drop {
		if err := os.RemoveAll(p); err != nil {
			return nil, nil, fmt.Errorf("absorb the objects of %s: %w", dir, err)
		}
	}
	return packs, loose, nil
}

// pipe runs `git first` (with firstEnv, fed stdin) into `git second` in
// c.Dir, both hardened, and fails if either does.
func (c *Client) pipe(ctx context.Context, stdin []byte, firstEnv, first, second []string) error {
	c.guardFor(first)()
	a := c.command(ctx, "", firstEnv, first)
	b := c.command(ctx, "", nil, second)
	a.Stdin = bytes.NewReader(stdin)
	out, err := a.StdoutPipe()
	if err != nil {
		return err
	}
	b.Stdin = out
	var aErr, bErr bytes.Buffer
	a.Stderr, b.Stderr = &aErr, &bErr
	if err := b.Start(); err != nil {
		return err
	}
	if err := a.Run(); err != nil {
		_ = b.Wait()
		return &GitError{Args: first, Dir: c.Dir, ExitCode: exitOf(err), Stderr: aErr.String(), Err: ctx.Err()}
	}
	if err := b.Wait(); err != nil {
		return &GitError{Args: second, Dir: c.Dir, ExitCode: exitOf(err), Stderr: bErr.String(), Err: ctx.Err()}
	}
	return nil
}

// command is the exec.Cmd run uses: `git <hardened> -C dir args` with the
// client's environment plus extra.
func (c *Client) command(ctx context.Context, dir string, extra, args []string) *exec.Cmd {
	dir = c.abs(dir)
	argv := make([]string, 0, len(hardened)+2+len(args))
	argv = append(append(append(argv, hardened...), "-C", dir), args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Env = c.environ(extra)
	dieWithUs(cmd)
	cmd.WaitDelay = waitDelay
	return cmd
}

// exitOf is a finished command's exit code, -1 when it did not exit.
func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitCode()
	}
	return -1
}

// Missing reports whether the object store holds no object id, as the
// long-lived cat-file answers now. Any other answer (an error, a resolver
// that cannot run) is false: a caller that skips work on true never skips
// it on a doubt.
func (c *Client) Missing(ctx context.Context, id string) bool {
	_, err := c.lookup(ctx, id)
	return errors.Is(err, ErrNoRev)
}

// NoteFresh records that commit id came in with an absorb (a sandboxed
// attempt's objects) and was Missing just before: so it was in no
// branch's history then, the base's included.
func (c *Client) NoteFresh(id string) {
	l := c.locks()
	l.freshMu.Lock()
	defer l.freshMu.Unlock()
	if l.fresh == nil {
		l.fresh = map[string]bool{}
	}
	l.fresh[id] = true
}

// TakeFresh reports whether id was noted fresh, and forgets it: the
// answer holds for the check right after the attempt (the done check's
// "commits beyond the base"), not after the commit has landed.
func (c *Client) TakeFresh(id string) bool {
	l := c.locks()
	l.freshMu.Lock()
	defer l.freshMu.Unlock()
	ok := l.fresh[id]
	delete(l.fresh, id)
	return ok
}
