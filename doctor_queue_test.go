package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/issues/ghfake"
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
	env := crashEnv(dir, filepath.Join(dir, "trace"))
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
	check := func(token string) doctorCheck {
		a := &app{s: &Streams{}, cwd: repo, env: envMap(append(env, "GITHUB_TOKEN="+token, "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets"))}
		d := &doctorState{a: a, git: wt}
		d.checkSettings(nil)
		cs := doctorQueueChecks(context.Background(), d)
		if len(cs) != 1 {
			t.Fatalf("%d checks", len(cs))
		}
		return cs[0]
	}
	if c := check("good"); c.level != doctorOK || !strings.Contains(c.msg, "the token works (as bot) and acme/widgets is reachable") {
		t.Errorf("good token: %+v", c)
	}
	if c := check("bad"); c.level != doctorFail || !strings.Contains(c.msg, "GitHub refused the token") {
		t.Errorf("bad token: %+v", c)
	}
	// No token: nothing to check, and no failure.
	a := &app{s: &Streams{}, cwd: repo, env: envMap(env)}
	d := &doctorState{a: a, git: wt}
	d.checkSettings(nil)
	if cs := doctorQueueChecks(context.Background(), d); len(cs) != 1 || cs[0].level != doctorOK {
		t.Errorf("no token: %+v", cs)
	}
}
