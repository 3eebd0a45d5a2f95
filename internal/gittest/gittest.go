// Package gittest sets up real git repositories for the command tests that
// run claudopilot against the fake GitHub: the environment that keeps the
// user's git configuration out, a git runner that fails the test, and a
// bare origin with a first commit pushed to the branches a test names.
// Only tests import it.
package gittest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Env is git's environment for a test whose home is home: no global or
// system configuration, a fixed identity.
func Env(home string) []string {
	return append([]string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}, NoAutoMaintenance()...)
}

// NoAutoMaintenance is git's configuration, as environment variables,
// that keeps every git commit, merge and fetch of a test from starting
// `git maintenance run --auto` after it: one more git process each time,
// 13 of 30 ms of CPU of a small commit here (50 commits in a row, 2
// cores, load 25), and about 7% of the land tests' git processes. No
// test is about the repository's housekeeping. A test that sets
// GIT_CONFIG_COUNT itself must count these in.
func NoAutoMaintenance() []string {
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=maintenance.auto", "GIT_CONFIG_VALUE_0=false"}
}

// Runner runs git with env and returns its trimmed output; a failure
// fails the test.
func Runner(t testing.TB, env []string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// Origin makes dir/origin.git (bare, branch main) and its clone dir/work
// with one commit (README.md), pushed to main and to each of branches.
func Origin(t testing.TB, dir string, env []string, branches ...string) (origin, work string) {
	t.Helper()
	git := Runner(t, env)
	origin, work = filepath.Join(dir, "origin.git"), filepath.Join(dir, "work")
	git("init", "-q", "--bare", "-b", "main", origin)
	git("clone", "-q", origin, work)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("# w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("-C", work, "add", "-A")
	git("-C", work, "commit", "-qm", "init")
	push := []string{"-C", work, "push", "-q", "origin", "main"}
	for _, b := range branches {
		push = append(push, "main:"+b)
	}
	git(push...)
	return origin, work
}

// Templates makes each test repository of a test binary once and gives
// every test its own copy: a copy is a few file writes, where `git
// init`, `git add` and `git commit` are three processes and about 70 ms
// of CPU here (a land or work fixture, 2 cores at load 25). Made in
// TestMain, in a folder TestMain removes.
type Templates struct {
	dir  string
	mu   sync.Mutex
	made map[string]string // key → the template's folder
}

// NewTemplates keeps its templates in dir.
func NewTemplates(dir string) *Templates {
	return &Templates{dir: dir, made: map[string]string{}}
}

// Copy copies the template named key to dst (which must not exist),
// making it first with build(folder) if this test binary has not yet.
// Two keys must name two different repositories. Linked worktrees inside
// the template are linked anew in the copy (relinkWorktrees).
func (ts *Templates) Copy(t testing.TB, key, dst string, build func(dir string) error) {
	t.Helper()
	ts.mu.Lock()
	src, ok := ts.made[key]
	if !ok {
		src = filepath.Join(ts.dir, strconv.Itoa(len(ts.made)))
		if err := build(src); err != nil {
			ts.mu.Unlock()
			t.Fatalf("template %q: %v", key, err)
		}
		ts.made[key] = src
	}
	ts.mu.Unlock()
	if err := CopyTree(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := relinkWorktrees(dst, src); err != nil {
		t.Fatal(err)
	}
}

// relinkWorktrees points the linked worktrees that a copy dst of the
// repository src holds inside itself at their copies. Git names them by
// absolute path (the admin folder's gitdir file, the worktree's .git
// file): left as copied, the copy's worktrees would be the template's. A
// worktree outside src is left as it is.
func relinkWorktrees(dst, src string) error {
	admins := filepath.Join(dst, ".git", "worktrees")
	names, err := os.ReadDir(admins)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		admin := filepath.Join(admins, n.Name())
		b, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, strings.TrimSpace(string(b)))
		if err != nil || !filepath.IsLocal(rel) {
			continue
		}
		dotGit := filepath.Join(dst, rel)
		if err := os.WriteFile(filepath.Join(admin, "gitdir"), []byte(dotGit+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(dotGit, []byte("gitdir: "+admin+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CopyTree copies the folder src to dst (which must not exist): folders,
// regular files with their permission bits, and symbolic links.
func CopyTree(dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm())
		}
		return fmt.Errorf("copy %s: not a file, folder or link", p)
	})
}

// RunWithTemplates runs a test binary's tests (a TestMain's body) with
// templates made once for the binary in a temporary folder named after
// prefix, set through set before the tests start and removed after them;
// it exits with the tests' code.
func RunWithTemplates(m *testing.M, prefix string, set func(*Templates)) {
	mem := MemTempDir(prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	set(NewTemplates(dir))
	code := m.Run()
	os.RemoveAll(dir)
	mem()
	os.Exit(code)
}

// MemTempDir points TMPDIR, for the rest of the test binary (a TestMain
// calls it first), at a fresh folder on /dev/shm when TMPDIR is not set
// and /dev/shm is a tmpfs with 1 GiB free; the function it returns removes
// that folder. t.TempDir, os.MkdirTemp("") and the git processes of the
// tests then make and delete their throwaway repositories in memory.
//
// Why (issue 23, BENCHMARKS.md §5 session 9): more than half of the
// suite's CPU was system time, and on this machine's disk (ext4 without a
// journal) each new file or folder scans the inode table past the ones
// deleted in the last seconds (ext4's recently_deleted): 8% of the land
// tests' CPU samples. The land tests took 11% less CPU in memory (sys
// 40.7-42.0 s -> 33.3-34.7 s, two runs each, alternating). What the
// tests prove is unchanged: they check what the driver does to
// repositories, never that a write survives a power loss (the product's
// fsyncs still run, and strace still counts them; their cost on a disk is
// bench/overhead.sh's, run with TMPDIR on the disk). A TMPDIR the caller
// set is used as is: TMPDIR=/tmp go test ./land runs on the disk.
func MemTempDir(prefix string) (cleanup func()) {
	const minFree = 1 << 30 // a Docker container's default /dev/shm (64 MiB) is too small
	root := ""
	if os.Getenv("TMPDIR") == "" {
		root = memTempRoot(minFree)
	}
	if root == "" {
		return func() {}
	}
	dir, err := os.MkdirTemp(root, prefix)
	if err != nil {
		return func() {}
	}
	os.Setenv("TMPDIR", dir)
	return func() {
		os.Unsetenv("TMPDIR")
		os.RemoveAll(dir)
	}
}

// Head reads the commit HEAD names in the worktree at dir from the
// files a commit just wrote (HEAD, then the loose ref it names), as git
// rev-parse would: one process fewer per commit of a test. ok is false
// where the files do not say it plainly (a packed ref, an odd link).
func Head(dir string) (string, bool) {
	gitDir := filepath.Join(dir, ".git")
	if b, err := os.ReadFile(gitDir); err == nil { // a linked worktree's link
		link, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return "", false
		}
		gitDir = link
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = filepath.Join(gitDir, strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	head := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(head, "ref: refs/heads/"); ok {
		if b, err = os.ReadFile(filepath.Join(common, "refs", "heads", filepath.FromSlash(ref))); err != nil {
			return "", false
		}
		head = strings.TrimSpace(string(b))
	}
	if len(head) != 40 && len(head) != 64 {
		return "", false
	}
	return head, true
}
