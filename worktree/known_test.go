package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKnownAsksGitNothing: a Known client runs git where Open's does and
// knows the common dir without a git process.
func TestKnownAsksGitNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newRepo(t)
	trace := filepath.Join(t.TempDir(), "trace")
	k := Known(c.Dir, filepath.Join(c.Dir, ".git"), append(testEnv(), "GIT_TRACE="+trace))
	common, err := k.CommonDir(ctx)
	if err != nil || common != filepath.Join(c.Dir, ".git") || k.Dir != c.Dir {
		t.Errorf("Known: Dir %q, CommonDir %q, %v; want %q and its .git", k.Dir, common, err, c.Dir)
	}
	if b, _ := os.ReadFile(trace); strings.Contains(string(b), "trace: built-in: git ") {
		t.Errorf("Known ran git:\n%s", b)
	}
}
