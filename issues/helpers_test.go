package issues

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/worktree"
)

// testProtect is a protected set as the engine composes it, in part: a
// settings file, the driver's folder and git's files.
func testProtect() *protect.Set {
	return &protect.Set{Rules: append([]protect.Rule{
		{Glob: "claudopilot.config", Why: "a settings file, read by the settings model"},
		{Glob: ".claudopilot/**", Why: "the driver's folder"},
	}, worktree.Protected()...)}
}

// vclock is a clock whose Sleep does not wait: it moves the clock on. The
// fake GitHub uses the same clock, so rate-limit resets and claim ages
// agree without the test waiting for them.
type vclock struct {
	mu    sync.Mutex
	off   time.Duration
	slept []time.Duration
}

func (c *vclock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *vclock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.off += d
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	time.Sleep(time.Millisecond)
	return ctx.Err()
}

func (c *vclock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

func (c *vclock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// syncBuf is a log sink safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// soak is CLAUDOPILOT_SOAK=1 (.ci/run sets it): long tests run in full,
// otherwise a short version that proves the same property.
func soak() bool { return os.Getenv("CLAUDOPILOT_SOAK") == "1" }

// testTimeout is every test's request timeout: a bound against a hung
// fake, never a wait. 5 s failed at load 17-52 (the fake merges, and an
// OnMerge hook pushes, with real git inside one answer). A test of an
// answer that never comes cuts the connection (ghfake.Fault.Drop) rather
// than waiting for a timeout.
const testTimeout = 2 * time.Minute

const (
	owner = "acme"
	repo  = "widgets"
	// token has no well-known secret shape: only value scrubbing can
	// catch it.
	token = "tok-3f9a8b7c6d5e4f3a2b1c0d9e"
)

// env is one test's world: a bare origin with a first commit on main, a
// fake GitHub over it, and a virtual clock.
type env struct {
	t      *testing.T
	dir    string
	origin string
	fake   *ghfake.Server
	clock  *vclock
	genv   []string // environment for git and agents
}

func baseEnv(t *testing.T, dir string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C", "TERM=dumb",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvPaged(t, 2)
}

// newEnvPaged is newEnv with the fake's pages perPage long.
func newEnvPaged(t *testing.T, perPage int) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, dir: dir, origin: filepath.Join(dir, "origin.git"), clock: &vclock{}}
	e.genv = baseEnv(t, dir)
	e.git("", "init", "-q", "--bare", "-b", "main", e.origin)
	seed := filepath.Join(dir, "seed")
	e.git("", "init", "-q", "-b", "main", seed)
	e.identity(seed, "Seed")
	writeFile(t, filepath.Join(seed, "README.md"), "# widgets\n")
	e.git(seed, "add", "-A")
	e.git(seed, "commit", "-qm", "init")
	e.git(seed, "push", "-q", e.origin, "main")
	e.fake = ghfake.New(ghfake.Options{Owner: owner, Repo: repo, Origin: e.origin, GitEnv: e.genv, Now: e.clock.Now, MaxPerPage: perPage})
	t.Cleanup(e.fake.Close)
	e.fake.AddUser("alice", "admin")
	e.fake.AddUser("bot", "write")
	e.fake.AddUser("mallory", "read")
	e.fake.AddUser("carol", "triage")
	e.fake.AddToken(token, "bot")
	e.fake.AddToken("alice-token", "alice")
	return e
}

func (e *env) git(dir string, args ...string) string {
	e.t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = e.genv
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// identity gives a repository its own git identity.
func (e *env) identity(dir, name string) {
	e.git(dir, "config", "user.name", name)
	e.git(dir, "config", "user.email", strings.ToLower(name)+"@example.com")
}

// clone makes a working clone of origin with its own identity.
func (e *env) clone(name string) string {
	dst := filepath.Join(e.dir, name)
	e.git("", "clone", "-q", e.origin, dst)
	e.identity(dst, name)
	return dst
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// script writes an agent script into the test's folder and returns its path.
func (e *env) script(name, body string) string {
	p := filepath.Join(e.dir, "agents", name)
	writeFile(e.t, p, "#!/bin/sh\n"+body)
	return p
}

// okAgent commits work/issue-<n>.txt; with $RECORD set it appends the
// issue id there.
const okAgent = `set -e
n=${CLAUDOPILOT_PHASE#\#}
test "$CLAUDOPILOT_BRANCH" = "claudopilot/issue-$n"
test -f "$CLAUDOPILOT_PHASE_DOC"
test -s "$CLAUDOPILOT_PROMPT_FILE"
mkdir -p work
echo "issue $n" > work/issue-$n.txt
git add work
git commit -qm "work on #$n"
if [ -n "$RECORD" ]; then echo "$CLAUDOPILOT_PHASE" >> "$RECORD"; fi
`

func (e *env) github(mod func(*GitHubConfig)) *GitHub {
	e.t.Helper()
	c := GitHubConfig{Owner: owner, Repo: repo, Token: token, APIURL: e.fake.URL(), Timeout: testTimeout, Clock: e.clock,
		Log: func(s string) { e.t.Log(s) }}
	if mod != nil {
		mod(&c)
	}
	g, err := NewGitHub(c)
	if err != nil {
		e.t.Fatal(err)
	}
	return g
}

// queue builds a Queue on a fresh clone; mod adjusts the config.
func (e *env) queue(name string, log *syncBuf, mod func(*Config)) *Queue {
	e.t.Helper()
	return e.queueAt(e.clone(name), log, mod)
}

// queueAt builds a Queue on the clone dir (a driver started again there).
func (e *env) queueAt(dir string, log *syncBuf, mod func(*Config)) *Queue {
	e.t.Helper()
	git, err := worktree.Open(context.Background(), dir, append(e.genv, "GITHUB_TOKEN="+token))
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := Config{
		GitHub: e.github(nil), Git: git, Base: "main", Agent: e.script("ok.sh", okAgent),
		Poll: 50 * time.Millisecond, CheckPoll: 20 * time.Millisecond, ChecksGrace: 40 * time.Millisecond, Once: true, AutoMerge: true,
		Env: append(e.genv, "GITHUB_TOKEN="+token, "GH_TOKEN="+token), Token: token, Clock: e.clock, Log: log,
		KillGrace: time.Second, Protect: testProtect(),
	}
	if mod != nil {
		mod(&cfg)
	}
	q, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return q
}

// run runs q with a generous bound and returns its summary.
func run(t *testing.T, q *Queue, log *syncBuf) Summary {
	t.Helper()
	return runWith(t, q, log, harness{})
}

// runWith is run with h's scheduler settings.
func runWith(t *testing.T, q *Queue, log *syncBuf, h harness) Summary {
	t.Helper()
	// An upper bound for a hung queue, not a wait: a busy machine can take
	// many times a quiet one's few seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sum, err := runQueue(ctx, q, h)
	if err != nil {
		t.Fatalf("Run: %v\nlog:\n%s", err, log)
	}
	return sum
}

func (e *env) issue(n int) ghfake.Issue {
	e.t.Helper()
	is, ok := e.fake.Issue(n)
	if !ok {
		e.t.Fatalf("no issue #%d", n)
	}
	return is
}

func hasLabel(is ghfake.Issue, l string) bool {
	for _, x := range is.Labels {
		if x == l {
			return true
		}
	}
	return false
}

// onMain reports whether origin's main has path.
func (e *env) onMain(path string) bool {
	cmd := exec.Command("git", "-C", e.origin, "cat-file", "-e", "main:"+path)
	cmd.Env = e.genv
	return cmd.Run() == nil
}

func commentsWith(is ghfake.Issue, sub string) int {
	n := 0
	for _, c := range is.Comments {
		if strings.Contains(c.Body, sub) {
			n++
		}
	}
	return n
}

func dump(e *env, n int) string {
	is, _ := e.fake.Issue(n)
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s labels=%v\n", n, is.State, is.Labels)
	for _, c := range is.Comments {
		fmt.Fprintf(&b, "  [%d %s] %s\n", c.ID, c.Author, c.Body)
	}
	return b.String()
}
