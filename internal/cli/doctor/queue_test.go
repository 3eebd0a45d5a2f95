package doctor

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues/ghfake"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// doctor checks queue mode when a token is set: a good token and a
// reachable repository pass; a refused token is a blocking problem.
func TestDoctorQueueChecks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	t.Parallel()
	dir := t.TempDir()
	env := testEnv(dir)
	origin := filepath.Join(dir, "origin.git")
	git(t, dir, env, "init", "-q", "--bare", "-b", "main", origin)
	repo := filepath.Join(dir, "repo")
	git(t, dir, env, "init", "-q", "-b", "main", repo)
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, env, "add", "-A")
	git(t, repo, env, "commit", "-qm", "init")
	git(t, repo, env, "push", "-q", origin, "main")
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("bot", "write")
	fake.AddToken("good", "bot")
	wt, err := worktree.Open(context.Background(), repo, env)
	if err != nil {
		t.Fatal(err)
	}
	checks := func(token string, more ...string) []doctorCheck {
		a := &cmdutil.App{S: &cmdutil.Streams{}, Cwd: repo, Env: cmdutil.EnvMap(append(append(env, "GITHUB_TOKEN="+token, "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "REFILL_THRESHOLD=2"), more...))}
		d := &doctorState{a: a, git: wt}
		d.checkSettings(nil)
		return doctorQueueChecks(context.Background(), d)
	}
	check := func(token string) doctorCheck { return checks(token)[0] }
	if c := check("good"); c.level != doctorOK || !strings.Contains(c.msg, "the token works (as bot) and acme/widgets is reachable") {
		t.Errorf("good token: %+v", c)
	}
	// MERGE_METHOD's changed default is announced until it is set; an
	// explicit method the repository refuses is named (issue 24 §4).
	fake.SetMergeMethods(false, true, false)
	if cs := checks("good"); len(cs) != 2 || cs[1].level != doctorOK || !strings.Contains(cs[1].msg, "MERGE_METHOD now defaults to auto (was merge): merging with squash") {
		t.Errorf("the default's note: %+v", cs)
	}
	if cs := checks("good", "MERGE_METHOD=merge"); len(cs) != 2 || cs[1].level != doctorFail || !strings.Contains(cs[1].msg, "MERGE_METHOD=merge: the repository does not allow merge merges (it allows: squash)") {
		t.Errorf("a refused method: %+v", cs)
	}
	if cs := checks("good", "MERGE_METHOD=squash"); len(cs) != 1 {
		t.Errorf("an allowed method: %+v", cs)
	}
	// The queue's feed (issue 28): PROMOTE_TO on a repository without
	// merge commits fails; the refill's new default is announced until
	// REFILL_THRESHOLD is set.
	if cs := checks("good", "MERGE_METHOD=squash", "PROMOTE_TO=staging"); len(cs) != 2 || cs[1].level != doctorFail || !strings.Contains(cs[1].msg, "promote: PROMOTE_TO needs merge commits") {
		t.Errorf("PROMOTE_TO without merge commits: %+v", cs)
	}
	{
		a := &cmdutil.App{S: &cmdutil.Streams{}, Cwd: repo, Env: cmdutil.EnvMap(append(env, "GITHUB_TOKEN=good", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets", "MERGE_METHOD=squash"))}
		d := &doctorState{a: a, git: wt}
		d.checkSettings(nil)
		if cs := doctorQueueChecks(context.Background(), d); len(cs) != 2 || cs[1].level != doctorOK || !strings.Contains(cs[1].msg, "runs a scanner") {
			t.Errorf("the refill's note: %+v", cs)
		}
	}
	if c := check("bad"); c.level != doctorFail || !strings.Contains(c.msg, "GitHub refused the token") {
		t.Errorf("bad token: %+v", c)
	}
	// No token: nothing to check, and no failure.
	a := &cmdutil.App{S: &cmdutil.Streams{}, Cwd: repo, Env: cmdutil.EnvMap(env)}
	d := &doctorState{a: a, git: wt}
	d.checkSettings(nil)
	if cs := doctorQueueChecks(context.Background(), d); len(cs) != 1 || cs[0].level != doctorOK {
		t.Errorf("no token: %+v", cs)
	}
}

// testEnv is an environment for git that leans on nothing of the
// machine's: no global configuration, a fixed identity, HOME at home.
func testEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, knob := settings.Lookup(k); strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "CLAUDOPILOT_") || knob || k == "GITHUB_TOKEN" || k == "GH_TOKEN" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Doctor Test", "GIT_AUTHOR_EMAIL=doctor@example.com",
		"GIT_COMMITTER_NAME=Doctor Test", "GIT_COMMITTER_EMAIL=doctor@example.com")
}

func git(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
