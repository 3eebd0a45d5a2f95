package promote

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
	"time"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/worktree"
)

// clock is a virtual clock: Sleep moves it on at once.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type world struct {
	t      *testing.T
	env    []string
	origin string
	fake   *ghfake.Server
	clock  *clock
	p      *Promoter
	said   []Result
}

func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit makes a commit adding file on origin's main (one fast-import;
// a seed clone's add, commit and push were three gits and five children
// of the push each time).
func (w *world) commit(file, msg string) {
	w.t.Helper()
	gittest.Import(w.t, w.env, w.origin, gittest.Commit{Ref: "main", From: "main^0", Message: msg + "\n", Files: map[string]string{file: msg + "\n"}})
}

// TestMain makes the worlds' repositories once for the test binary
// (templates).
func TestMain(m *testing.M) {
	gittest.RunWithTemplates(m, "promote-templates-", func(t *gittest.Templates) { templates = t })
}

// templates holds the origin and its clone every world starts from: made
// once and copied (an init, two clones, a commit and two pushes were 25
// processes a test).
var templates *gittest.Templates

// makeOrigin makes dir/origin.git (main, staging and production at one
// commit; no automatic gc in its receive-pack, which a local push starts
// without the test's GIT_CONFIG_COUNT) and dir/clone, its clone.
func makeOrigin(dir string, env []string) error {
	origin := filepath.Join(dir, "origin.git")
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", origin},
		{"-C", origin, "config", "receive.autogc", "false"},
		{"-C", origin, "config", "gc.auto", "0"},
	} {
		if err := gitRun("", env, args...); err != nil {
			return err
		}
	}
	if err := importInit(origin, env); err != nil {
		return err
	}
	return gitRun("", env, "clone", "-q", origin, filepath.Join(dir, "clone"))
}

// importInit commits README.md ("init") on main, staging and production
// of the bare repository origin.
func importInit(origin string, env []string) error {
	cmd := exec.Command("git", "-C", origin, "fast-import", "--quiet")
	cmd.Env = env
	cmd.Stdin = strings.NewReader("commit refs/heads/main\nmark :1\ncommitter t <t@x> 1764892800 +0000\ndata 5\ninit\n\n" +
		"M 100644 inline README.md\ndata 5\ninit\n\nreset refs/heads/staging\nfrom :1\n\nreset refs/heads/production\nfrom :1\n\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git fast-import: %w\n%s", err, out)
	}
	return nil
}

func gitRun(dir string, env []string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %w\n%s", args, err, out)
	}
	return nil
}

// newWorld is an origin with main, staging and production at one commit,
// a fake GitHub over it whose CI is red only where red says, and a
// promoter for main → staging → production.
func newWorld(t *testing.T, red func(subject string, hasRed bool) bool) *world {
	dir := t.TempDir()
	w := &world{t: t, clock: &clock{now: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)}}
	w.env = append(gittest.NoAutoMaintenance(), "PATH="+os.Getenv("PATH"), "HOME="+dir, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	repos := filepath.Join(dir, "repos")
	templates.Copy(t, "origin", repos, func(d string) error { return makeOrigin(d, w.env) })
	w.origin = filepath.Join(repos, "origin.git")
	clone := filepath.Join(repos, "clone")
	// The copied clone's origin is the template's: it is pointed at this
	// world's (a file write, not a git config).
	cfg := filepath.Join(clone, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "url = ")
	url, _, _ := strings.Cut(rest, "\n")
	if !ok || url == "" {
		t.Fatalf("no remote url in %s:\n%s", cfg, b)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "url = "+url+"\n", "url = "+w.origin+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	w.fake = ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: w.origin, GitEnv: w.env, Now: w.clock.Now})
	t.Cleanup(w.fake.Close)
	w.fake.AddUser("bot", "write")
	w.fake.AddToken("tok", "bot")
	// A commit's CI is asked at every look at its checks; a commit's
	// subject and tree never change, so its answer is worked out once
	// (two gits; 8 per commit before).
	var mu sync.Mutex
	ci := map[string]string{}
	w.fake.SetCI(func(sha string) ([]ghfake.CheckRun, []ghfake.Status) {
		mu.Lock()
		defer mu.Unlock()
		if ci[sha] == "" {
			subject := w.git(w.origin, "log", "-1", "--format=%s", sha)
			has := exec.Command("git", "-C", w.origin, "cat-file", "-e", sha+":red.txt")
			has.Env = w.env
			ci[sha] = "success"
			if red(subject, has.Run() == nil) {
				ci[sha] = "failure"
			}
		}
		return []ghfake.CheckRun{{Name: "ci", Status: "completed", Conclusion: ci[sha]}}, nil
	})
	// The request timeout is a bound against a hung fake, never a wait:
	// the fake's check-run hook runs git inside an answer, which takes
	// longer than 10 s on a loaded machine (issues' testTimeout, #23).
	gh, err := issues.NewGitHub(issues.GitHubConfig{Owner: "acme", Repo: "widgets", Token: "tok", APIURL: w.fake.URL(), Timeout: 2 * time.Minute, Clock: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	g, err := worktree.Open(context.Background(), clone, w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.p = &Promoter{GitHub: gh, Git: g, Base: func() string { return "main" }, To: []string{"staging", "production"}, Every: 24 * time.Hour,
		Grace: 2 * time.Minute, Timeout: time.Hour, Poll: time.Minute, Ledger: filepath.Join(dir, "state", LedgerName), Clock: w.clock,
		Announce: func(r Result) { w.said = append(w.said, r) }}
	return w
}

func kinds(rs []Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.From+">"+r.To+":"+r.Kind)
	}
	return strings.Join(out, " ")
}

// A promote chain moves green work through two branches, each by a pull
// request merged with a merge commit whose body is the changelog, and
// stops at a red step, which is reported and tried again only at the next
// interval.
func TestPromoteChain(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(subject string, hasRed bool) bool {
		return hasRed && strings.HasPrefix(subject, "Promote main to staging")
	})
	w.commit("work.txt", "work on the parser (#3)")
	ctx := context.Background()
	rs, err := w.p.Round(ctx, false, "")
	if err != nil || kinds(rs) != "main>staging:promoted staging>production:promoted" {
		t.Fatalf("round 1: %s %v", kinds(rs), err)
	}
	for _, b := range []string{"staging", "production"} {
		if parents := strings.Fields(w.git(w.origin, "log", "-1", "--format=%P", b)); len(parents) != 2 {
			t.Errorf("%s's tip is not a merge commit: parents %v", b, parents)
		}
		w.git(w.origin, "cat-file", "-e", b+":work.txt")
	}
	pulls := w.fake.Pulls()
	if len(pulls) != 2 || !pulls[0].Merged || !strings.Contains(pulls[0].Body, "work on the parser (#3)") || !strings.Contains(pulls[0].Body, "Issues and pull requests: #3") {
		t.Fatalf("pull requests: %+v", pulls)
	}
	if len(w.said) != 2 || w.said[0].Kind != Promoted || !strings.Contains(w.said[0].Changelog, "#3") {
		t.Errorf("announced %+v", w.said)
	}
	// Nothing new, within the interval: not due.
	if rs, _ := w.p.Round(ctx, false, ""); kinds(rs) != "main>staging:not due staging>production:not due" {
		t.Errorf("round 2: %s", kinds(rs))
	}
	// Red work: main's head is green, staging's merge of it is red.
	w.commit("red.txt", "a change CI fails once merged (#5)")
	prod := w.git(w.origin, "rev-parse", "production")
	if rs, _ := w.p.Round(ctx, true, ""); kinds(rs) != "main>staging:promoted staging>production:red" || !strings.Contains(rs[1].Why, "red: ci") {
		t.Fatalf("round 3: %s %+v", kinds(rs), rs)
	}
	if w.git(w.origin, "rev-parse", "production") != prod {
		t.Error("production moved past a red step")
	}
	if last := w.said[len(w.said)-1]; last.Kind != Red || last.To != "production" {
		t.Errorf("the red step was not announced: %+v", last)
	}
	// Retried at the next interval, not before.
	if rs, _ := w.p.Round(ctx, false, ""); kinds(rs) != "main>staging:not due staging>production:not due" {
		t.Errorf("round 4: %s", kinds(rs))
	}
	w.clock.Advance(25 * time.Hour)
	if rs, _ := w.p.Round(ctx, false, ""); kinds(rs) != "main>staging:current staging>production:red" {
		t.Errorf("round 5: %s", kinds(rs))
	}
	// --to staging: only the first step.
	if _, err := w.p.Chain("qa"); err == nil {
		t.Error("a branch not in PROMOTE_TO was taken")
	}
	if rs, _ := w.p.Round(ctx, true, "staging"); kinds(rs) != "main>staging:current" {
		t.Errorf("--to staging: %s", kinds(rs))
	}
}

// A repository that allows no merge commits is refused.
func TestNoMergeCommits(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(string, bool) bool { return false })
	if err := CheckRepo(context.Background(), w.p.GitHub); err != nil {
		t.Fatal(err)
	}
	w.fake.SetMergeMethods(false, true, true)
	if err := CheckRepo(context.Background(), w.p.GitHub); !errors.Is(err, ErrNoMergeCommits) {
		t.Errorf("got %v", err)
	}
}

// The loop asks at every poll: a step that stays current is logged once,
// not at each round; once it has promoted, current is news again.
func TestCurrentLoggedOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, func(string, bool) bool { return false })
	var lines []string
	w.p.Log = func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
	ctx := context.Background()
	for range 3 {
		if _, err := w.p.Round(ctx, true, ""); err != nil {
			t.Fatal(err)
		}
	}
	want := "promote main → staging: current|promote staging → production: current"
	if got := strings.Join(lines, "|"); got != want {
		t.Errorf("three rounds with nothing to promote logged:\n%s\nwant:\n%s", got, want)
	}
	lines = nil
	w.commit("work.txt", "work (#3)")
	w.p.Round(ctx, true, "")
	w.p.Round(ctx, true, "")
	want = "promote main → staging: promoted|promote staging → production: promoted|promote main → staging: current|promote staging → production: current"
	if got := strings.Join(lines, "|"); got != want {
		t.Errorf("a promotion, then nothing:\n%s\nwant:\n%s", got, want)
	}
}
