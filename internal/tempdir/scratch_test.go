package tempdir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A folder whose maker was killed (no process holds its lock) is removed
// by the next Dir with its prefix; one a live maker holds, one made a
// moment ago (its maker may not have locked it yet) and another
// prefix's are left alone; release removes its own.
func TestDirReclaimsWhatAKilledMakerLeft(t *testing.T) {
	parent := t.TempDir()
	old := time.Now().Add(-2 * young)
	mk := func(name string) string {
		p := filepath.Join(parent, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "index"), []byte("left\n"), 0o600)
		return p
	}
	dead := mk("cp-index-dead")
	fresh := mk("cp-index-young")
	other := mk("other-old")
	live, releaseLive, err := Dir(parent, "cp-index-")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, other, live} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	dir, release, err := Dir(parent, "cp-index-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dead); !os.IsNotExist(err) {
		t.Errorf("the killed maker's %s is still there (%v)", dead, err)
	}
	release()
	releaseLive()
	var got []string
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := []string{"cp-index-young", "other-old"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q (fresh %s, dir %s)", got, want, fresh, dir)
	}
}
