package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAppendBranchDescription(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	mustGit(t, c, "", "branch", "claudopilot/a")
	if d, err := c.BranchDescription(ctx, "claudopilot/a"); err != nil || d != "" {
		t.Fatalf("no description yet: got %q, %v", d, err)
	}
	// A person's own description stays; lines are added below it.
	mustGit(t, c, "", "config", "branch.claudopilot/a.description", "my notes\n")
	for _, l := range []string{"worker 1: lane claude", "worker 1: lane codex"} {
		if err := c.AppendBranchDescription(ctx, "refs/heads/claudopilot/a", l); err != nil {
			t.Fatal(err)
		}
	}
	d, err := c.BranchDescription(ctx, "claudopilot/a")
	if want := "my notes\nworker 1: lane claude\nworker 1: lane codex"; err != nil || d != want {
		t.Fatalf("description = %q, %v; want %q", d, err, want)
	}
	if err := c.AppendBranchDescription(ctx, "claudopilot/a", "two\nlines"); err == nil {
		t.Fatal("a line with a newline was taken")
	}
}

// Parallel workers describe their own branches while another branch is
// deleted: git locks the config file without waiting, so an unserialized
// writer would fail with "could not lock config file".
func TestAppendBranchDescriptionConcurrent(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	const n = 8
	// The 2n branches in one update-ref, the n descriptions written to
	// the config file as git config writes them (3n processes before).
	var refs, conf strings.Builder
	for i := range n {
		fmt.Fprintf(&refs, "create refs/heads/p%d HEAD\ncreate refs/heads/gone%d HEAD\n", i, i)
		fmt.Fprintf(&conf, "[branch \"gone%d\"]\n\tdescription = x\n", i)
	}
	update := exec.Command("git", "update-ref", "--stdin")
	update.Dir, update.Env, update.Stdin = c.Dir, c.Env, strings.NewReader(refs.String())
	if out, err := update.CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v %s", err, out)
	}
	cf, err := os.OpenFile(filepath.Join(c.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = cf.WriteString(conf.String())
		err = errors.Join(err, cf.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := range n {
		wg.Go(func() {
			for k := range 3 {
				errs <- c.AppendBranchDescription(ctx, fmt.Sprintf("p%d", i), fmt.Sprintf("worker %d: lane l%d", k+1, i))
			}
		})
		wg.Go(func() { errs <- c.DeleteBranch(ctx, fmt.Sprintf("gone%d", i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for i := range n {
		d, err := c.BranchDescription(ctx, fmt.Sprintf("p%d", i))
		want := fmt.Sprintf("worker 1: lane l%d\nworker 2: lane l%d\nworker 3: lane l%d", i, i, i)
		if err != nil || d != want {
			t.Errorf("p%d: description %q, %v; want %q", i, d, err, want)
		}
	}
}

// A repository whose config names no description and includes no other
// file has no branch description: none is looked up with git (one
// process per landing, issue 25 §1). One set, or one in an included
// file, is read as before.
func TestBranchDescriptionReadsConfigFirst(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	mustGit(t, c, "", "branch", "b")
	trace := filepath.Join(t.TempDir(), "trace")
	traced := c.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	if d, err := traced.BranchDescription(ctx, "b"); err != nil || d != "" {
		t.Fatalf("no description: got %q, %v", d, err)
	}
	if b, _ := os.ReadFile(trace); strings.Contains(string(b), "git config") {
		t.Errorf("git was asked:\n%s", b)
	}
	extra := filepath.Join(t.TempDir(), "extra")
	os.WriteFile(extra, []byte("[branch \"b\"]\n\tdescription = from an include\n"), 0o644)
	mustGit(t, c, "", "config", "include.path", extra)
	if d, err := c.BranchDescription(ctx, "b"); err != nil || d != "from an include" {
		t.Errorf("included: got %q, %v", d, err)
	}
	mustGit(t, c, "", "config", "--unset", "include.path")
	mustGit(t, c, "", "config", "branch.b.description", "set")
	if d, err := c.BranchDescription(ctx, "b"); err != nil || d != "set" {
		t.Errorf("set: got %q, %v", d, err)
	}
}

// A branch's description is read from the config file as git reads it:
// quotes, escapes, comments, blanks, the case of the section and key
// names, a subsection with quotes, the last of two values. The oracle is
// git's own reading of the same file (one `git config -z --get-regexp`);
// none of these asks git. A value continued on the next line is left to
// git.
func TestDescriptionReadAsGitReadsIt(t *testing.T) {
	t.Parallel()
	c := newRepo(t)
	ctx := context.Background()
	conf := `[branch "plain"]
	description = one line
[branch "multi"]
	description = first\nsecond\n
[branch "quoted"]
	description = "  lead and trail  " # a comment
[branch "inner"]
	description = a  b	c ; a comment
[branch "esc"]
	description = back\\slash \"q\" tab\there "in ; quotes"
[Branch "Case"]
	Description = case of section and key
[branch "twice"]
	description = old
; a comment line
[branch "twice"]
	description = new
[branch "sub \"quoted\" name"]
	description = odd subsection
[branch "x"]  # after a header
    description=no spaces
[core]
	flag
	other = "a;b" \t
`
	f, err := os.OpenFile(filepath.Join(c.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	out := mustGit(t, c, "", "config", "-z", "--get-regexp", `^branch\..*\.description$`)
	want := map[string]string{}
	for rec := range strings.SplitSeq(out, "\x00") {
		if k, v, ok := strings.Cut(rec, "\n"); ok {
			want[strings.TrimSuffix(strings.TrimPrefix(k, "branch."), ".description")] = strings.TrimRight(v, "\n")
		}
	}
	if len(want) != 9 {
		t.Fatalf("git reads %d descriptions, want 9: %q", len(want), want)
	}
	want["none"] = ""
	for b, w := range want {
		got, ok := c.describedInConfig(ctx, b)
		if !ok || got != w {
			t.Errorf("%s: read %q, %v; git reads %q", b, got, ok, w)
		}
	}
	if _, ok := c.describedInConfig(ctx, "case"); !ok {
		t.Error("a subsection's case matters: none is no reason to ask git")
	}
	mustGit(t, c, "", "config", "branch.cont.other", "x")
	b, _ := os.ReadFile(filepath.Join(c.Dir, ".git", "config"))
	os.WriteFile(filepath.Join(c.Dir, ".git", "config"), append(b, "[branch \"cont\"]\n\tdescription = one \\\n\ttwo\n"...), 0o644)
	if _, ok := c.describedInConfig(ctx, "cont"); ok {
		t.Error("a continued line was read")
	}
	if d, err := c.BranchDescription(ctx, "cont"); err != nil || !strings.HasPrefix(d, "one ") || !strings.HasSuffix(d, "two") {
		t.Errorf("continued: %q, %v", d, err)
	}
}
