package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
	"github.com/claudopilot/claudopilot/worktree"
)

// Refs is one attempt's private ref folder: a copy of its branch ref,
// alone, mounted over the folder that holds it in the repository
// (refs/heads/auto/ for auto/<id>), and an empty folder over the matching
// reflog folder.
type Refs struct {
	Dir    string // the private folder (refs/ and logs/ below it)
	Branch string // e.g. auto/phase-01
	Start  string // the branch tip handed to the attempt
}

// PrepareRefs makes the private folder dir for branch (which must sit in a
// folder under refs/heads, like auto/<id>) holding tip, and the mount
// points in the common directory. A leftover dir of an earlier attempt is
// replaced: the driver synced or discarded it then.
func PrepareRefs(common, dir, branch, tip string) (*Refs, error) {
	top, rest, ok := strings.Cut(branch, "/")
	if !ok || top == "" || rest == "" || strings.Contains(branch, "..") || strings.HasPrefix(rest, "/") {
		return nil, fmt.Errorf("sandbox: branch %q is not in a folder of refs/heads (like auto/<id>)", branch)
	}
	if !isSHA(tip) {
		return nil, fmt.Errorf("sandbox: branch %s: %q is not an object id", branch, tip)
	}
	r := &Refs{Dir: dir, Branch: branch, Start: tip}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("sandbox: clear %s: %w", dir, err)
	}
	ref := filepath.Join(r.refsDir(), filepath.FromSlash(rest))
	for _, d := range []string{filepath.Dir(ref), r.logsDir(), r.refMount(common), r.logMount(common)} {
		if err := ensureDir(d); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(ref, []byte(tip+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("sandbox: write the private ref: %w", err)
	}
	return r, nil
}

func (r *Refs) top() string {
	top, _, _ := strings.Cut(r.Branch, "/")
	return top
}

func (r *Refs) rest() string {
	_, rest, _ := strings.Cut(r.Branch, "/")
	return rest
}

func (r *Refs) refsDir() string { return filepath.Join(r.Dir, "refs") }
func (r *Refs) logsDir() string { return filepath.Join(r.Dir, "logs") }

func (r *Refs) refMount(common string) string {
	return filepath.Join(common, "refs", "heads", r.top())
}

func (r *Refs) logMount(common string) string {
	return filepath.Join(common, "logs", "refs", "heads", r.top())
}

// Sync carries the attempt's branch tip to the real branch, with a
// compare-and-swap from Start (a tip that is not a commit is refused), and
// removes the private folder. strays names every other ref the agent wrote
// there, and the branch itself when the agent deleted it or left something
// that is not an object id: none of it reaches the repository.
func (r *Refs) Sync(ctx context.Context, git *worktree.Client) (strays []string, err error) {
	defer os.RemoveAll(r.Dir)
	own := filepath.Join(r.refsDir(), filepath.FromSlash(r.rest()))
	tip, ok := readRef(own)
	switch {
	case !ok:
		strays = append(strays, "refs/heads/"+r.Branch+" (deleted or not an object id: left as it was)")
	case tip != r.Start:
		if _, err := git.RevParse(ctx, tip); err != nil {
			return strays, fmt.Errorf("sandbox: the attempt left %s at %s, which is not a commit: %w", r.Branch, tip, err)
		}
		if err := git.UpdateRef(ctx, "refs/heads/"+r.Branch, tip, r.Start); err != nil {
			return strays, fmt.Errorf("sandbox: move %s to the attempt's tip: %w", r.Branch, err)
		}
	}
	others, werr := r.written(own)
	return append(strays, others...), werr
}

// newTip is the tip the attempt left on its branch when it is not Start
// and the repository's store does not hold it (yet): "" otherwise.
func (r *Refs) newTip(ctx context.Context, git *worktree.Client) string {
	if r == nil {
		return ""
	}
	tip, ok := readRef(filepath.Join(r.refsDir(), filepath.FromSlash(r.rest())))
	if !ok || tip == r.Start || !git.Missing(ctx, tip) {
		return ""
	}
	return tip
}

// written lists the refs under the private folder other than own.
func (r *Refs) written(own string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(r.refsDir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || p == own || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, _ := filepath.Rel(r.refsDir(), p)
		out = append(out, "refs/heads/"+r.top()+"/"+filepath.ToSlash(rel))
		return nil
	})
	sort.Strings(out)
	if err != nil {
		return out, fmt.Errorf("sandbox: list the refs the attempt wrote: %w", err)
	}
	return out, nil
}

// readRef reads a loose ref file that must hold an object id. A symlink, a
// symbolic ref or garbage is refused.
func readRef(p string) (string, bool) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	s := string(bytes.TrimSpace(b))
	return s, isSHA(s)
}

func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Links are the files that tie a worktree to its repository: the
// worktree's .git file, and gitdir and commondir in its admin folder. The
// agent may write both folders, and the driver runs git there afterwards,
// outside the sandbox: a .git pointing at a repository the agent made
// would have the driver run that repository's hooks and config.
type Links struct {
	files map[string][]byte // nil value: the file did not exist
}

// SaveLinks records the link files of the worktree wt with admin folder
// admin, and config.worktree, which must stay as it was too.
func SaveLinks(wt, admin string) (Links, error) {
	l := Links{files: map[string][]byte{}}
	for _, p := range []string{filepath.Join(wt, ".git"), filepath.Join(admin, "gitdir"), filepath.Join(admin, "commondir"), filepath.Join(admin, "config.worktree")} {
		b, err := os.ReadFile(p)
		switch {
		case err == nil:
			l.files[p] = b
		case errors.Is(err, fs.ErrNotExist):
			l.files[p] = nil
		default:
			return l, fmt.Errorf("sandbox: read %s: %w", p, err)
		}
	}
	return l, nil
}

// Restore puts back every link file that changed and names them.
func (l Links) Restore() (changed []string, err error) {
	var errs []error
	for p, want := range l.files {
		fi, lerr := os.Lstat(p)
		got, rerr := os.ReadFile(p)
		same := want == nil && errors.Is(lerr, fs.ErrNotExist) ||
			want != nil && lerr == nil && fi.Mode().IsRegular() && rerr == nil && bytes.Equal(got, want)
		if same {
			continue
		}
		changed = append(changed, p)
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		if want != nil {
			// Exclusively made temp file and a rename: a link planted
			// at p after the removal is replaced, not written through.
			if err := atomicfile.Write(p, want, 0o644, atomicfile.Mode(), atomicfile.NoSync()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	sort.Strings(changed)
	if err := errors.Join(errs...); err != nil {
		return changed, fmt.Errorf("sandbox: restore the worktree's links: %w", err)
	}
	return changed, nil
}

// Recover carries back what a sandboxed attempt of branch left in the
// private folder dir when the driver was killed before it could: the
// private tip moves the real branch if it is a commit that descends from
// the real tip (a fast-forward, with a compare-and-swap); anything else is
// dropped. The folder is removed either way. note says what was done ("":
// nothing was left). No process of the attempt can still run: bwrap dies
// with the driver.
func Recover(ctx context.Context, git *worktree.Client, dir, branch string) (note string, err error) {
	if _, err := os.Lstat(dir); err != nil {
		return "", nil
	}
	defer os.RemoveAll(dir)
	// The tip's objects are in the attempt's private store.
	aerr := (&Objects{Dir: filepath.Join(dir, "objects")}).absorb(ctx, git)
	_, rest, ok := strings.Cut(branch, "/")
	if !ok {
		return "", nil
	}
	tip, ok := readRef(filepath.Join(dir, "refs", filepath.FromSlash(rest)))
	if !ok {
		return "dropped the private ref folder a killed sandboxed attempt left (no usable tip)", nil
	}
	real, err := git.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return "", fmt.Errorf("sandbox: recover %s: %w", branch, err)
	}
	if tip == real {
		return "", nil
	}
	if _, err := git.RevParse(ctx, tip); err != nil {
		why := ""
		if aerr != nil {
			why = ": " + aerr.Error()
		}
		return "dropped the private ref folder a killed sandboxed attempt left (its tip " + tip + " is not a commit" + why + ")", nil
	}
	if ff, err := git.IsAncestor(ctx, real, tip); err != nil || !ff {
		return "dropped the private ref folder a killed sandboxed attempt left (its tip " + tip + " does not descend from " + branch + ")", nil
	}
	if err := git.UpdateRef(ctx, "refs/heads/"+branch, tip, real); err != nil {
		return "", fmt.Errorf("sandbox: recover %s: %w", branch, err)
	}
	return "moved " + branch + " to " + tip + ", the tip a killed sandboxed attempt left", nil
}
