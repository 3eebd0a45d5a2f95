package land_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest that is a symlink to a file elsewhere in the repository stays
// a link on disk and in the merge commit; the phase's state is written and
// committed into the file it points to, and the checkout is clean. Where
// the layout names the link itself, the merge wrote the manifest's text as
// the link's target (tried). The script run_symlink_manifest runs it
// through the driver, with the refusal of a link that leaves the
// repository.
func TestMergeThroughASymlinkedManifest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, manifestSrc)
	const target = "plans/EXECUTION-MANIFEST.md"
	if err := os.MkdirAll(filepath.Join(f.top, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.gitIn(f.top, "mv", manifestRel, target)
	if err := os.Symlink("../"+target, filepath.Join(f.top, filepath.FromSlash(manifestRel))); err != nil {
		t.Fatal(err)
	}
	f.gitIn(f.top, "add", "-A")
	f.gitIn(f.top, "commit", "-q", "-m", "the manifest moves to plans/, a link in its place")
	// As engine's layout has it (engine/repo.go): the link's target is the
	// manifest committed and flipped.
	f.layout.Manifest = target
	f.owner.Layout = f.layout
	_, tip := f.branch("p1", "p1-first.md", map[string]string{"x.txt": "x\n"})
	f.mustMerge(job("p1", "first phase", tip))
	if got := f.gitIn(f.top, "ls-tree", "main", manifestRel); !strings.HasPrefix(got, "120000 ") {
		t.Errorf("the manifest in the merge commit: %q, want a link", got)
	}
	if got := f.committed("main", manifestRel); got != "../"+target {
		t.Errorf("the link points to %q", got)
	}
	want := flipped(manifestSrc, "p1")
	if got := f.committed("main", target); got != want {
		t.Errorf("committed %s:\n%s\nwant:\n%s", target, got, want)
	}
	if fi, err := os.Lstat(filepath.Join(f.top, filepath.FromSlash(manifestRel))); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the manifest on disk is no longer a link: %v", err)
	}
	if got := f.read(f.top, target); got != want {
		t.Errorf("%s on disk:\n%s", target, got)
	}
	if st := f.gitIn(f.top, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("the checkout is not clean: %q", st)
	}
}
