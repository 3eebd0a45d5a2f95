package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The index file read without git (issue 25 §1) lists the gitlinks
// `git ls-files --stage` lists, in every index version git writes (2, 3
// with extended flags, 4 with compressed paths) and in a SHA-256
// repository; a split index, an index.skipHash file without its
// checksum and a corrupted file are not read here (errIndexForm), and
// Populated still answers, through git.
func TestGitlinksInIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format string
		setup        [][]string
		want         error
	}{
		{name: "v2", setup: [][]string{{"update-index", "--index-version", "2"}}},
		{name: "v3 extended flags", setup: [][]string{{"update-index", "--index-version", "3"}, {"update-index", "--skip-worktree", "a/deep/path/one.txt"}}},
		{name: "v4", setup: [][]string{{"update-index", "--index-version", "4"}}},
		{name: "sha256", format: "sha256"},
		{name: "split index", setup: [][]string{{"update-index", "--split-index"}}, want: errIndexForm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := indexRepo(t, tc.format)
			ctx := context.Background()
			for _, a := range tc.setup {
				mustGit(t, c, "", a...)
			}
			got, err := gitlinksInIndex(filepath.Join(c.Dir, ".git", "index"))
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("gitlinksInIndex = %q, %v; want %v", got, err, tc.want)
				}
			} else if err != nil || !slices.Equal(got, lsGitlinks(t, c)) || len(got) != 2 {
				t.Fatalf("gitlinksInIndex = %q, %v; ls-files says %q", got, err, lsGitlinks(t, c))
			}
			if p, err := c.Populated(ctx, ""); err != nil || len(p) != 1 || p[0] != "sub" {
				t.Errorf("Populated = %q, %v; want [sub]", p, err)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		t.Parallel()
		c := indexRepo(t, "")
		p := filepath.Join(c.Dir, ".git", "index")
		b, _ := os.ReadFile(p)
		b[20] ^= 1
		os.WriteFile(p, b, 0o644)
		if got, err := gitlinksInIndex(p); !errors.Is(err, errIndexForm) {
			t.Fatalf("a corrupted index: %q, %v; want errIndexForm", got, err)
		}
		// index.skipHash (git 2.40) writes zeros for the checksum.
		b[20] ^= 1
		clear(b[len(b)-20:])
		os.WriteFile(p, b, 0o644)
		if got, err := gitlinksInIndex(p); !errors.Is(err, errIndexForm) {
			t.Fatalf("an index without its checksum: %q, %v; want errIndexForm", got, err)
		}
		// git reads it without its checksum: Populated answers as git does.
		if got, err := c.Populated(context.Background(), ""); err != nil || len(got) != 1 || got[0] != "sub" {
			t.Errorf("Populated on a corrupted index = %q, %v; want [sub] as git reads it", got, err)
		}
	})
}

// indexRepo is a repository whose index holds files at long and short
// paths and two gitlinks, one of them with a repository checked out.
func indexRepo(t *testing.T, format string) *Client {
	t.Helper()
	if format == "" {
		// The sha1 repository is the same in every subtest (the dates are
		// fixed): made once per test binary and copied, not 11 processes
		// a subtest.
		dir := filepath.Join(t.TempDir(), "repo")
		templates.Copy(t, "index", dir, buildIndexRepo)
		c, err := Open(context.Background(), dir, testEnv())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", "--object-format="+format, "-b", "main", dir)
	cmd.Env = testEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("git init --object-format=%s: %v %s", format, err, out)
	}
	c, err := Open(context.Background(), dir, testEnv())
	if err != nil {
		t.Fatal(err)
	}
	fillIndexRepo(t, c, format)
	return c
}

// fillIndexRepo commits files (one in a deep folder of 200-byte names)
// and stages two gitlinks, sub (a repository of its own) and a/deep/empty.
func fillIndexRepo(t *testing.T, c *Client, format string) {
	t.Helper()
	commitFiles(t, c, "", "files", map[string]string{"a/deep/path/one.txt": "1\n", "a/deep/path/two.txt": "2\n", "b.txt": "b\n", strings.Repeat("x", 200) + "/" + strings.Repeat("y", 200) + "/f": "f\n"})
	sub := filepath.Join(c.Dir, "sub")
	mustGit(t, c, "", "init", "-q", "--object-format="+map[string]string{"": "sha1"}[format]+format, sub)
	commitFiles(t, c, sub, "sub", map[string]string{"g": "g\n"})
	head := mustGit(t, c, sub, "rev-parse", "HEAD")
	mustGit(t, c, "", "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	mustGit(t, c, "", "update-index", "--add", "--cacheinfo", "160000,"+head+",a/deep/empty")
}

// buildIndexRepo makes indexRepo's sha1 repository in dir: newRepo's
// commit, then what fillIndexRepo adds.
func buildIndexRepo(dir string) error {
	long := strings.Repeat("x", 200) + "/" + strings.Repeat("y", 200)
	cmd := exec.Command("sh", "-ec", `git init -q -b main "$1"; cd "$1"
echo hello >README.md; git add -A; git commit -q -m initial
mkdir -p a/deep/path "$2"; echo 1 >a/deep/path/one.txt; echo 2 >a/deep/path/two.txt; echo b >b.txt; echo f >"$2/f"
git add -A; git commit -q -m files
git init -q --object-format=sha1 sub; cd sub; echo g >g; git add -A; git commit -q -m sub; head=$(git rev-parse HEAD); cd ..
git update-index --add --cacheinfo "160000,$head,sub"
git update-index --add --cacheinfo "160000,$head,a/deep/empty"`, "sh", dir, long)
	cmd.Env = testEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

func lsGitlinks(t *testing.T, c *Client) []string {
	var links []string
	for _, e := range splitNUL([]byte(mustGit(t, c, "", "ls-files", "--stage", "-z"))) {
		if meta, p, ok := strings.Cut(e, "\t"); ok && strings.HasPrefix(meta, "160000 ") {
			links = append(links, p)
		}
	}
	return links
}
