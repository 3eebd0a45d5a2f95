package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPlainFilesNeverFollowNorWait: the readers of git's admin files that
// replace a git process (the worktree list, a registration's checks, a
// branch description) read only regular files. An agent may write its
// own admin folder: a named pipe there must not hang the driver (an
// os.ReadFile opens it and waits for a writer forever), a link must not
// be followed. Each is errNotPlain, and the caller asks git as before.
func TestPlainFilesNeverFollowNorWait(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err) // Linux and macOS, where the package builds, have them
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(plain, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", maxPlain+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readPlain(plain); err != nil || string(b) != "ref: refs/heads/main\n" {
		t.Errorf("readPlain(plain) = %q, %v", b, err)
	}
	if _, err := readPlain(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("readPlain(missing) = %v, want fs.ErrNotExist", err)
	}
	for _, p := range []string{pipe, link, big, dir} {
		if _, err := within(t, func() ([]byte, error) { return readPlain(p) }); !errors.Is(err, errNotPlain) {
			t.Errorf("readPlain(%s) = %v, want errNotPlain", filepath.Base(p), err)
		}
	}
}

// TestWorktreeListFromFilesNeverWaitsOnAPipe: a linked worktree's admin
// HEAD (written by git on every commit in it, so the agent's to write)
// replaced by a named pipe or a link: the list from files is errNotPlain
// at once, not a read that waits for a writer or follows the link.
func TestWorktreeListFromFilesNeverWaitsOnAPipe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	commitFiles(t, c, "", "base", map[string]string{"a.txt": "a\n"})
	wt := filepath.Join(t.TempDir(), "task")
	if err := c.AddWorktree(ctx, wt, "task", "main"); err != nil {
		t.Fatal(err)
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := filepath.Join(common, "worktrees", "task", "HEAD")
	elsewhere := filepath.Join(t.TempDir(), "HEAD")
	if err := os.WriteFile(elsewhere, []byte("ref: refs/heads/task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, plant := range map[string]func() error{
		"named pipe": func() error { return syscall.Mkfifo(head, 0o644) },
		"link":       func() error { return os.Symlink(elsewhere, head) },
	} {
		if err := os.Remove(head); err != nil {
			t.Fatal(err)
		}
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		_, err := within(t, func() ([]Worktree, error) { return c.worktreesFromFiles(ctx) })
		if !errors.Is(err, errNotPlain) {
			t.Errorf("%s as the admin HEAD: worktreesFromFiles = %v, want errNotPlain", name, err)
		}
		_, err = within(t, func() (string, error) { dir, _, err := c.worktreeOfFiles(ctx, "task"); return dir, err })
		if !errors.Is(err, errNotPlain) {
			t.Errorf("%s as the admin HEAD: worktreeOfFiles = %v, want errNotPlain", name, err)
		}
	}
}

// within runs f and fails the test if it has not returned in a minute:
// a hang guard (the bug it catches is a read that never returns), not a
// wait for an event.
func within[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() { v, err := f(); done <- result{v, err} }()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(time.Minute):
		t.Fatal("still reading after a minute: it waits on the named pipe")
		var zero T
		return zero, nil
	}
}
