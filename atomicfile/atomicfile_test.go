package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("a new file's mode %v, want 0600", st.Mode().Perm())
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "two" || st.Mode().Perm() != 0o640 {
		t.Errorf("after a rewrite: %q mode %v, want \"two\" and the old mode 0640", b, st.Mode().Perm())
	}
	if m, _ := filepath.Glob(TempGlob(p)); len(m) != 0 {
		t.Errorf("temp files left: %v", m)
	}
	// A folder that does not exist: an error, nothing written.
	if err := Write(filepath.Join(dir, "no", "f"), []byte("x"), 0o644); err == nil {
		t.Error("a write into a missing folder succeeded")
	}
}

// TestWriteOptions: Mode puts perm over an existing file's mode; a link at
// the target is replaced, not followed; NoSync still replaces atomically.
func TestWriteOptions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o600, Mode(), NoSync()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if st, _ := os.Stat(p); string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Errorf("with Mode: %q mode %v, want \"two\" 0600", b, st.Mode().Perm())
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("ours"), 0o644, Mode()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "theirs" {
		t.Errorf("the write followed a link: the file it named holds %q", b)
	}
	if fi, _ := os.Lstat(link); !fi.Mode().IsRegular() {
		t.Errorf("the link was not replaced by a file: %v", fi.Mode())
	}
}

// CreateWhole makes the file with its bytes, refuses one that exists
// (fs.ErrExist, the file untouched), and leaves no side file behind.
func TestCreateWhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, side := filepath.Join(dir, "x.lock"), filepath.Join(dir, "x.lock.new")
	if err := CreateWhole(path, side, []byte("mine\n")); err != nil {
		t.Fatal(err)
	}
	if err := CreateWhole(path, side, []byte("theirs\n")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateWhole over an existing file = %v, want fs.ErrExist", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "mine\n" {
		t.Errorf("the file holds %q, %v", b, err)
	}
	if _, err := os.Stat(side); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the side file is left: %v", err)
	}
}
