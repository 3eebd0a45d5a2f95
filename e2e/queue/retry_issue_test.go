package queue

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/internal/cli/root"
	"github.com/claudopilot/claudopilot/internal/e2e"
)

// retry '#N' queues a blocked issue again on GitHub, as a person does:
// BLOCKED_LABEL off, READY_LABEL on, one comment. An issue that is not
// blocked, or a missing token, is refused with nothing changed, on GitHub,
// on disk or in git. A clone with no roadmap (a queue alone) needs none.
func TestRetryIssue(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the retry command against a fake GitHub")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	dir := t.TempDir()
	env := e2e.Env(dir, filepath.Join(dir, "trace"))
	origin := filepath.Join(dir, "origin.git")
	seedOrigin(t, env, origin, "seed", map[string]string{"README": "x\n"})
	work := filepath.Join(dir, "work")
	e2e.Git(t, dir, env, "clone", "-q", origin, work)

	fake := fakeGitHub(t, origin, env, "tok-123")
	blocked := fake.NewIssue("alice", "Blocked", "b", []string{"agent-blocked"}, "alice")
	ready := fake.NewIssue("alice", "Ready", "r", []string{"agent-ready"}, "alice")
	claimed := fake.NewIssue("alice", "Claimed", "c", []string{"agent-running"}, "alice")
	closed := fake.NewIssue("alice", "Closed", "x", []string{"agent-blocked"}, "alice")
	fake.CloseIssue(closed, "completed", "alice")
	other := fake.NewIssue("alice", "Other blocked", "o", []string{"agent-blocked"}, "alice")
	base := append(env, "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets")
	withToken := append(slices.Clone(base), "GITHUB_TOKEN=tok-123")

	// The retry command of the command tree, in this process: the
	// binary's own start (main, the token's hand-over) is every other
	// driver test's; seven starts of it here were most of this test's CPU.
	var retry cmdutil.Command
	for _, c := range root.Commands() {
		if c.Name == "retry" {
			retry = c
		}
	}
	run := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &errb}, Env: cmdutil.EnvMap(env), Cwd: work, Commands: root.Commands}
		err := retry.Run(context.Background(), a, args)
		if err != nil {
			errb.WriteString(err.Error()) // as main prints it
		}
		return out.String(), errb.String(), cmdutil.ExitCode(err, nil)
	}
	writes := func() int {
		n := 0
		for _, r := range fake.Requests() {
			if r.Method != "GET" {
				n++
			}
		}
		return n
	}
	labels := func(n int) []string {
		is, _ := fake.Issue(n)
		return is.Labels
	}
	comments := func(n int) int {
		is, _ := fake.Issue(n)
		return len(is.Comments)
	}
	clean := func() {
		t.Helper()
		if s := e2e.Git(t, work, env, "status", "--porcelain", "--ignored"); s != "" {
			t.Fatalf("retry changed the clone:\n%s", s)
		}
	}

	// No token: a settings error naming it, before any request.
	_, stderr, code := run(base, "#"+strconv.Itoa(blocked))
	if code != 64 || !strings.Contains(stderr, "GITHUB_TOKEN or GH_TOKEN") {
		t.Fatalf("no token: exit %d, stderr %q", code, stderr)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("no token: %d requests to GitHub", n)
	}
	// No repository: neither GH_REPO nor a GitHub origin.
	_, stderr, code = run(append(slices.Clone(env), "GITHUB_API_URL="+fake.URL(), "GITHUB_TOKEN=tok-123"), "#"+strconv.Itoa(blocked))
	if code != 64 || !strings.Contains(stderr, "--repo owner/name or set GH_REPO") {
		t.Fatalf("no repository: exit %d, stderr %q", code, stderr)
	}

	// Not blocked: refused with exit 1, as a phase that cannot be
	// retried, and nothing written; not even the blocked issue named
	// beside it.
	for _, c := range []struct {
		n    int
		want string
	}{{ready, "already queued"}, {claimed, "claimed"}, {closed, "closed"}} {
		_, stderr, code = run(withToken, "#"+strconv.Itoa(other), "#"+strconv.Itoa(c.n))
		if code != 1 || !strings.Contains(stderr, "not blocked") || !strings.Contains(stderr, c.want) {
			t.Fatalf("#%d: exit %d, stderr %q", c.n, code, stderr)
		}
	}
	if w := writes(); w != 0 {
		t.Fatalf("refused retries wrote %d times to GitHub", w)
	}
	if !slices.Equal(labels(other), []string{"agent-blocked"}) || comments(other) != 0 {
		t.Fatalf("#%d changed by a refused retry: %v", other, labels(other))
	}
	clean()

	// Blocked: relabelled ready, one comment.
	stdout, stderr, code := run(withToken, "#"+strconv.Itoa(blocked))
	if code != 0 {
		t.Fatalf("retry #%d: exit %d, stderr %q", blocked, code, stderr)
	}
	if !strings.Contains(stdout, "queued again on GitHub") {
		t.Fatalf("stdout %q", stdout)
	}
	if got := labels(blocked); !slices.Equal(got, []string{"agent-ready"}) {
		t.Fatalf("labels after retry: %v", got)
	}
	is, _ := fake.Issue(blocked)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "claudopilot retry") || is.Comments[0].Author != "bot" {
		t.Fatalf("comments after retry: %+v", is.Comments)
	}
	clean()
	// Again: it is queued now, so it is refused.
	if _, stderr, code = run(withToken, "#"+strconv.Itoa(blocked)); code != 1 || !strings.Contains(stderr, "already queued") {
		t.Fatalf("second retry: exit %d, stderr %q", code, stderr)
	}
}
