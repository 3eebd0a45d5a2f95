package issues

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/internal/gittest"
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

// soakOnly skips an end-to-end queue run unless CLAUDOPILOT_SOAK=1: its
// property is proven, without a driver run, by the tests provedBy names
// (issue 23: a few end-to-end runs per feature by default).
func soakOnly(t *testing.T, provedBy string) {
	t.Helper()
	if !soak() {
		t.Skip("end to end only under CLAUDOPILOT_SOAK=1; proven by " + provedBy)
	}
}

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

// baseEnv is git's and the agents' environment in a test: no global or
// system configuration, and no `git maintenance run --auto` after each
// commit, merge and fetch (gittest.NoAutoMaintenance: one git process
// fewer each time; no test here is about housekeeping).
func baseEnv(t *testing.T, dir string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C", "TERM=dumb",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	}, gittest.NoAutoMaintenance()...)
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
	fx := theFixture(t)
	if err := copyTree(filepath.Join(fx, "origin.git"), e.origin); err != nil {
		t.Fatal(err)
	}
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

// fixture is the folder of the repositories every test starts from, made
// once per test binary by real git (fixtureOnce) and removed by TestMain:
// "origin.git", a bare origin whose main has one commit (README.md), and
// "clone", a clone of it. A test copies them (copyTree) instead of making
// its own: 10 git processes per test, each 10-35 ms of CPU, were a quarter
// of the package's git processes (BENCHMARKS.md, section 5, session 7).
var fixture struct {
	once sync.Once
	dir  string
	err  error
}

// theFixture is the fixture's folder, made on first use.
func theFixture(t *testing.T) string {
	t.Helper()
	fixture.once.Do(func() { fixture.dir, fixture.err = makeFixture() })
	if fixture.err != nil {
		t.Fatalf("fixture: %v", fixture.err)
	}
	return fixture.dir
}

// makeFixture builds the fixture's repositories with real git, as each
// test once did, without git's sample hooks (an empty template).
func makeFixture() (string, error) {
	dir, err := os.MkdirTemp("", "issues-fixture-")
	if err != nil {
		return "", err
	}
	genv := baseEnv(nil, dir)
	origin, seed, tmpl := filepath.Join(dir, "origin.git"), filepath.Join(dir, "seed"), filepath.Join(dir, "template")
	if err := os.Mkdir(tmpl, 0o755); err != nil {
		return dir, err
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Env = genv
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := git("init", "-q", "--bare", "--template="+tmpl, "-b", "main", origin); err != nil {
		return dir, err
	}
	if err := git("init", "-q", "--template="+tmpl, "-b", "main", seed); err != nil {
		return dir, err
	}
	// No `git gc --auto` after each push into origin: one process of the
	// 7 a push costs here. It is origin's own setting because git keeps
	// the pusher's GIT_CONFIG_* (baseEnv) from a local receive-pack.
	// Nor a for-each-ref per push (/bin/true, ~1 ms, instead of a git,
	// ~5.5): receive-pack checks what was pushed in a quarantine whose
	// one alternate is origin's own object store, and that alternate's
	// refs (core.alternateRefsCommand lists them) are origin's own, which
	// the check's --all names already.
	if err := appendFile(filepath.Join(origin, "config"), "[receive]\n\tautogc = false\n[core]\n\talternateRefsCommand = true\n"); err != nil {
		return dir, err
	}
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# widgets\n"), 0o644); err != nil {
		return dir, err
	}
	for _, args := range [][]string{
		{"-C", seed, "add", "README.md"},
		{"-C", seed, "-c", "user.name=Seed", "-c", "user.email=seed@example.com", "commit", "-qm", "init"},
		{"-C", seed, "push", "-q", origin, "main"},
		{"clone", "-q", "--template=" + tmpl, origin, filepath.Join(dir, "clone")},
	} {
		if err := git(args...); err != nil {
			return dir, err
		}
	}
	return dir, nil
}

// appendFile appends body to the file p.
func appendFile(p, body string) error {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// removeFixture removes the fixture's folder (TestMain, after the tests).
func removeFixture() {
	if fixture.dir != "" {
		os.RemoveAll(fixture.dir)
	}
}

// copyTree copies the folder src to dst (regular files and folders, with
// their modes), as cp -a does without a process.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
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

// clone makes a working clone of origin with its own identity. While
// origin's refs are still the fixture's, it is a copy of the fixture's
// clone, its origin set to e.origin (as git clone of e.origin writes it);
// once a test moved them (a push), git clone makes it.
func (e *env) clone(name string) string {
	e.t.Helper()
	dst := filepath.Join(e.dir, name)
	fx := theFixture(e.t)
	fxOrigin := filepath.Join(fx, "origin.git")
	if sameRefs(e.t, fxOrigin, e.origin) {
		if err := copyTree(filepath.Join(fx, "clone"), dst); err != nil {
			e.t.Fatal(err)
		}
	} else {
		e.git("", "clone", "-q", e.origin, dst)
	}
	cfg := filepath.Join(dst, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("url = "+fxOrigin+"\n"), []byte("url = "+e.origin+"\n"), 1)
	if !bytes.Contains(b, []byte("url = "+e.origin+"\n")) {
		e.t.Fatalf("the clone's origin is not %s:\n%s", e.origin, b)
	}
	b = fmt.Appendf(b, "[user]\n\tname = %s\n\temail = %s@example.com\n", name, strings.ToLower(name))
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return dst
}

// sameRefs reports whether the bare repositories a and b have the same
// refs: the same files under refs/ with the same contents, and the same
// packed-refs.
func sameRefs(t *testing.T, a, b string) bool {
	t.Helper()
	read := func(repo string) map[string]string {
		refs := map[string]string{}
		err := filepath.WalkDir(filepath.Join(repo, "refs"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			c, err := os.ReadFile(p)
			rel, _ := filepath.Rel(repo, p)
			refs[rel] = string(c)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if c, err := os.ReadFile(filepath.Join(repo, "packed-refs")); err == nil {
			refs["packed-refs"] = string(c)
		}
		return refs
	}
	return maps.Equal(read(a), read(b))
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

// testPoll is a test queue's POLL_SECONDS. An issue's end and a claim
// that failed wake the poll at once (Source.kick); the timer serves only
// what changes outside while issues run (an issue closed or answered, a
// new one), and each poll reads the open issues and every held one: at
// 50 ms a one-issue run made ~400 of its ~430 requests polling at load 30,
// their CPU growing with the run's wall time (BENCHMARKS.md §5, session
// 10). A test that waits on such a change is bounded, never timed.
const testPoll = 250 * time.Millisecond

// queue builds a Queue on a fresh clone; mod adjusts the config.
func (e *env) queue(name string, log *syncBuf, mod func(*Config)) *Queue {
	e.t.Helper()
	return e.queueAt(e.clone(name), log, mod)
}

// queueAt builds a Queue on the clone dir (a driver started again there).
//
// The clone is the test's own (e.clone), so its top level and .git are
// known: worktree.Known, not Open's rev-parse (one git per queue, 76 in
// the package's run). TestFixtureCloneIsAClone shows what e.clone makes.
func (e *env) queueAt(dir string, log *syncBuf, mod func(*Config)) *Queue {
	e.t.Helper()
	top, err := filepath.EvalSymlinks(dir) // as git's --show-toplevel gives it
	if err != nil {
		e.t.Fatal(err)
	}
	git := worktree.Known(top, filepath.Join(top, ".git"), append(e.genv, "GITHUB_TOKEN="+token))
	cfg := Config{
		GitHub: e.github(nil), Git: git, Base: "main", Agent: e.script("ok.sh", okAgent),
		Poll: testPoll, CheckPoll: 20 * time.Millisecond, ChecksGrace: 40 * time.Millisecond, Once: true, AutoMerge: true,
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

// originRef is the object id of origin's ref name (refs/heads/…), read
// from its loose ref file as git keeps it after a push (no gc packs
// origin's refs here: receive.autogc is off), or asked of git once packed.
// A fake CI's check reads it at every poll: no process then.
func (e *env) originRef(name string) string {
	if b, err := os.ReadFile(filepath.Join(e.origin, filepath.FromSlash(name))); err == nil {
		return strings.TrimSpace(string(b))
	}
	cmd := exec.Command("git", "-C", e.origin, "rev-parse", "-q", "--verify", name)
	cmd.Env = e.genv
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// originCommit commits path with body on origin's branch, on its tip (a
// new branch on main's), by "human": what their fetch, commit and push
// would leave there, written in origin by the fake (ghfake.Server.Commit:
// no git process; by plumbing it was 6, by a clone's checkout, add,
// commit and push 10, with a fetch 14). The ref moves only from the tip
// read (a new one only if still missing).
func (e *env) originCommit(branch, path, body, msg string) string {
	e.t.Helper()
	sha, err := e.fake.Commit(branch, "main", path, body, msg, "human <human@example.com>")
	if err != nil {
		e.t.Fatalf("commit %s on %s: %v", path, branch, err)
	}
	return sha
}

// onMain reports whether origin's main has path (ghfake.Server.Has: no
// git process of its own, 49 in the package's run).
func (e *env) onMain(path string) bool { return e.fake.Has("main", path) }

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

// TestFixtureCloneIsAClone: a copied clone is what git clone of the test's
// own origin makes: clean, on main at origin's main, fetching from and
// pushing to e.origin (not the fixture's), with its own identity; a clone
// made after a push has origin's new main.
func TestFixtureCloneIsAClone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.clone("Pat")
	if st := e.git(dir, "status", "--porcelain"); st != "" {
		t.Errorf("status of a fresh clone: %q", st)
	}
	writeFile(t, filepath.Join(dir, "x.txt"), "x\n")
	e.git(dir, "add", "x.txt")
	e.git(dir, "commit", "-qm", "x")
	e.git(dir, "push", "-q", "origin", "main")
	got := e.git(e.origin, "log", "-1", "--format=%an <%ae> %s", "main")
	if got != "Pat <pat@example.com> x" || !e.onMain("README.md") {
		t.Errorf("origin's main: %q", got)
	}
	// A clone made once origin moved has its new main.
	want := e.git(e.origin, "rev-parse", "main")
	if got := e.git(e.clone("Sam"), "rev-parse", "main", "origin/main"); got != want+"\n"+want {
		t.Errorf("a clone after the push has main and origin/main %q, want origin's new main %s", got, want)
	}
}

// countRequests counts the requests among reqs (the fake's log, or a
// tail of it) made with method to a path ending in suffix.
func countRequests(reqs []ghfake.Request, method, suffix string) int {
	n := 0
	for _, r := range reqs {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// TestFakeCommitIsGits: what the fake writes into origin itself (a web
// commit's blob, trees and commit; update-branch's and a merge's commits
// and the branches they move) is what git reads and checks as its own:
// fsck --strict (sorted trees, well-formed commits) and the files, the
// authors and the parents where each was written; with origin packed, the
// fake's reads and writes go through git and agree.
func TestFakeCommitIsGits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.originCommit("main", "a/b.txt", "b\n", "a folder")
	e.originCommit("main", "a.txt", "a\n", "a file beside it")
	deeper := e.originCommit("main", "a/c/d.txt", "d\n", "deeper")
	feat := e.originCommit("feature", "f.txt", "f\n", "a branch")
	base := e.originCommit("main", "README.md", "# changed\n", "a file replaced")
	ctx := context.Background()
	g := e.github(nil)
	pr, err := g.CreatePR(ctx, "feature", "main", "f", "", false)
	if err != nil {
		t.Fatal(err)
	}
	head, err := g.UpdateBranch(ctx, pr.Number, feat)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Merge(ctx, pr.Number, head, "merge", ""); err != nil {
		t.Fatal(err)
	}
	if got := e.git(e.origin, "fsck", "--strict", "--no-dangling"); got != "" {
		t.Errorf("fsck: %s", got)
	}
	if got, want := e.git(e.origin, "ls-tree", "-r", "--name-only", "main"), "README.md\na.txt\na/b.txt\na/c/d.txt\nf.txt"; got != want {
		t.Errorf("main's files: %q, want %q", got, want)
	}
	got := e.git(e.origin, "show", "-s", "--format=%an <%ae>|%cn|%s|%P", "main", "main^2", "main^2^2")
	want := "GitHub <noreply@github.com>|GitHub|Merge pull request #1 from acme/feature|" + base + " " + head + "\n" +
		"GitHub <noreply@github.com>|GitHub|Merge branch 'main' into feature|" + feat + " " + base + "\n" +
		"human <human@example.com>|human|a file replaced|" + deeper
	if got != want {
		t.Errorf("main's history:\n%s\nwant\n%s", got, want)
	}
	// Packed (objects and refs), what the files do not answer is asked of
	// git: the same answers, and a commit on a packed branch.
	e.git(e.origin, "repack", "-a", "-d", "-q")
	e.git(e.origin, "pack-refs", "--all")
	if !e.fake.Has("main", "a/c/d.txt") || e.fake.Has("main", "a/c/x.txt") || !e.fake.Has("feature", "f.txt") {
		t.Error("Has, packed: wrong")
	}
	merge := e.git(e.origin, "rev-parse", "main")
	if got, err := g.BranchTip(ctx, "main"); err != nil || got != merge {
		t.Errorf("the tip of main, packed: %s, %v, want %s", got, err, merge)
	}
	packed := e.originCommit("main", "a/e.txt", "e\n", "on a packed branch")
	if got := e.git(e.origin, "show", "-s", "--format=%H %s %P", "main"); got != packed+" on a packed branch "+merge {
		t.Errorf("main after a commit on it packed: %q", got)
	}
	if got := e.git(e.origin, "fsck", "--strict", "--no-dangling"); got != "" {
		t.Errorf("fsck: %s", got)
	}
}
