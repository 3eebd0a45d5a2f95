package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/claudopilot/claudopilot/worktree"
)

// Objects is a sandboxed process's private object store (issue 21 §3). An
// agent that could write the repository's objects/ overwrote the loose
// object of a blob on the base (git show printed its text; no ref moved,
// so no diff, review or secret scan saw it) and could plant
// objects/info/alternates. In the sandbox, objects/ is this private store;
// the shared store is shown read-only at Shared, its alternate. Git there
// reads every object and writes new ones as usual; the driver brings the
// new ones in afterwards, through git's checks (worktree.Client.Absorb).
// A mount, not GIT_OBJECT_DIRECTORY: a variable would follow the agent
// into every other repository it makes (a test's scratch repository), and
// `env -i git commit` would drop it.
type Objects struct {
	Dir    string // the private store: <scratch>/objects
	Shared string // where the shared store is shown: <scratch>/shared
}

// PrepareObjects makes an empty private store in scratch whose alternate
// is the shared store's mount point.
func PrepareObjects(scratch string) (*Objects, error) {
	o := &Objects{Dir: filepath.Join(scratch, "objects"), Shared: filepath.Join(scratch, "shared")}
	if err := os.RemoveAll(o.Dir); err != nil {
		return nil, fmt.Errorf("sandbox: clear %s: %w", o.Dir, err)
	}
	for _, d := range []string{filepath.Join(o.Dir, "pack"), filepath.Join(o.Dir, "info"), o.Shared} {
		if err := ensureDir(d); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "info", "alternates"), []byte(o.Shared+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("sandbox: the private object store: %w", err)
	}
	return o, nil
}

// absorb brings the private store's objects into the repository and
// removes the store (nothing for a nil one or a missing folder).
func (o *Objects) absorb(ctx context.Context, git *worktree.Client) error {
	if o == nil {
		return nil
	}
	if _, err := os.Lstat(o.Dir); err != nil {
		return nil
	}
	if _, err := git.Absorb(ctx, o.Dir); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
