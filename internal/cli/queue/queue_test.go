package queue

import (
	"bytes"
	"context"
	"github.com/claudopilot/claudopilot/internal/gittest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// A queue with PROMOTE_TO on a repository that allows no merge commits is
// refused loudly at start (exit 64, the reason named) before it claims,
// labels or comments on anything: a promotion is always a merge commit.
func TestPromoteRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := gittest.Env(dir)
	origin, work := gittest.Origin(t, dir, env, "staging")
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("alice", "admin")
	fake.AddUser("bot", "write")
	fake.AddToken("tok-1", "bot")
	fake.NewIssue("alice", "Ready", "work", []string{"agent-ready"}, "alice")
	fake.SetMergeMethods(false, true, true)
	full := append(env, "GITHUB_TOKEN=tok-1", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"PROMOTE_TO=staging", "AGENT_CMD=false")
	var out bytes.Buffer
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: work, Env: cmdutil.EnvMap(full)}
	err := NewCmd(nil).Run(context.Background(), a, []string{"--once"})
	if code := cmdutil.ExitCode(err, nil); code != cmdutil.ExitUsage || err == nil || !strings.Contains(err.Error(), "allows none") {
		t.Fatalf("exit %d, %v\n%s", code, err, out.String())
	}
	for _, r := range fake.Requests() {
		if r.Method != "GET" {
			t.Errorf("a refused start wrote: %s %s", r.Method, r.Path)
		}
	}
	if is, _ := fake.Issue(1); len(is.Labels) != 1 || len(is.Comments) != 0 {
		t.Errorf("the issue changed: %+v", is)
	}
	// The driver's own state folder (the lock, the instance's name, an
	// empty journal) is all a refused start leaves: nothing recorded.
	if b, _ := os.ReadFile(filepath.Join(work, ".claudopilot", "state", "journal.jsonl")); len(b) > 0 {
		t.Errorf("the journal holds:\n%s", b)
	}
}

// watch passes writes on and closes a channel the first time the output
// holds its text.
type watch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	text string
	seen chan struct{}
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.text != "" && strings.Contains(w.buf.String(), w.text) {
		close(w.seen)
		w.text = ""
	}
	return len(p), nil
}

func (w *watch) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

// The queue feeds production end to end, against the fake GitHub: a
// maintainer's ready issue is worked and merged on main, then the running
// queue's promote loop (PROMOTE_TO=staging production dr) carries it
// through staging and production, each by a pull request merged with a
// merge commit whose body is the changelog naming the issue, announced to
// NOTIFY_CMD, and stops at the red step production → dr (its head's
// checks are red): dr does not move, NOTIFY_CMD gets promote-red.
func TestQueueFeedsProduction(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := gittest.Env(dir)
	git := gittest.Runner(t, env)
	origin, work := gittest.Origin(t, dir, env, "staging", "production", "dr")
	dr := git("-C", origin, "rev-parse", "dr")
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("alice", "admin")
	fake.AddUser("bot", "write")
	fake.AddToken("tok-1", "bot")
	// CI is red on production's promotion merge only.
	fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		c := ghfake.CheckRun{Name: "ci", Status: "completed", Conclusion: "success"}
		cmd := exec.Command("git", "-C", origin, "log", "-1", "--format=%s", sha)
		cmd.Env = env
		if s, _ := cmd.Output(); strings.HasPrefix(string(s), "Promote staging to production") {
			c.Conclusion = "failure"
		}
		return []ghfake.CheckRun{c}, nil
	})
	n := fake.NewIssue("alice", "Add the parser", "Write parser.txt.", []string{"agent-ready"}, "alice")
	agent := filepath.Join(dir, "agent.sh")
	os.WriteFile(agent, []byte("#!/bin/sh\nset -e\ncat >/dev/null\necho parser > parser.txt\ngit add parser.txt\ngit commit -qm \"the parser (#"+strconv.Itoa(n)+")\"\n"), 0o755)
	said := filepath.Join(dir, "said")
	full := append(env, "GITHUB_TOKEN=tok-1", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "AGENT_CMD="+agent,
		"SANDBOX=off", "AUTO_MERGE=1", "POLL_SECONDS=1", "PROMOTE_TO=staging production dr", "NOTIFY_CMD=cat >> "+said, "REFILL_THRESHOLD=0")
	out := &watch{text: "promote production → dr: red", seen: make(chan struct{})}
	a := &cmdutil.App{S: &cmdutil.Streams{Out: out, Err: out}, Cwd: work, Env: cmdutil.EnvMap(full)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- NewCmd(nil).Run(ctx, a, nil) }()
	select {
	case <-out.seen:
	case err := <-ran:
		t.Fatalf("the queue ended: %v\n%s", err, out)
	case <-time.After(3 * time.Minute): // a bound for a hung run, not a wait
		t.Fatalf("the red step never came:\n%s", out)
	}
	cancel()
	<-ran
	for _, b := range []string{"main", "staging", "production"} {
		git("-C", origin, "cat-file", "-e", b+":parser.txt")
	}
	for _, b := range []string{"staging", "production"} {
		if parents := strings.Fields(git("-C", origin, "log", "-1", "--format=%P", b)); len(parents) != 2 {
			t.Errorf("%s's tip is not a merge commit: parents %v", b, parents)
		}
	}
	if got := git("-C", origin, "rev-parse", "dr"); got != dr {
		t.Errorf("dr moved past the red step")
	}
	ev, _ := os.ReadFile(said)
	if strings.Count(string(ev), `"event":"announce"`) != 2 || strings.Count(string(ev), `"event":"promote-red"`) != 1 ||
		!strings.Contains(string(ev), "the parser (#"+strconv.Itoa(n)+")") {
		t.Errorf("NOTIFY_CMD got:\n%s\nlog:\n%s", ev, out)
	}
}

// queue --help promised "3 rounds" of repair while the queue hard-coded
// its own counts (issue 23): it names the one retry policy's knob, and no
// count of its own.
func TestQueueHelpNamesTheOneRetryPolicy(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: t.TempDir(), Env: map[string]string{}}
	NewCmd(nil).Run(context.Background(), a, []string{"--help"})
	help := out.String()
	if !strings.Contains(help, "MAX_SUPERVISOR_ATTEMPTS_PER_PHASE") || !strings.Contains(help, "one retry policy whatever the command") {
		t.Errorf("queue --help does not name the retry policy's knob:\n%s", help)
	}
	if m := regexp.MustCompile(`\b\d+ (rounds|repair|retries)\b`).FindString(help); m != "" {
		t.Errorf("queue --help promises a count of its own (%q):\n%s", m, help)
	}
}
