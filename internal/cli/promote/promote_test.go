package promote

import (
	"bytes"
	"context"
	"github.com/claudopilot/claudopilot/internal/gittest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// `claudopilot promote` through the engine's composition: both steps of
// the chain promoted, NOTIFY_CMD told of each with an announce event
// holding the changelog; --now promotes within the interval and --to
// stops the chain at that branch; misuse (no PROMOTE_TO, a --to not in it, a
// repository without merge commits) exits 64 and promotes nothing.
func TestPromoteCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := gittest.Env(dir)
	git := gittest.Runner(t, env)
	origin, work := gittest.Origin(t, dir, env, "staging", "production")
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644)
	git("-C", work, "add", "-A")
	git("-C", work, "commit", "-qm", "the API (#4)")
	git("-C", work, "push", "-q", "origin", "main")
	fake := ghfake.New(ghfake.Options{Owner: "acme", Repo: "widgets", Origin: origin, GitEnv: env})
	t.Cleanup(fake.Close)
	fake.AddUser("bot", "write")
	fake.AddToken("tok-1", "bot")
	fake.SetCI(func(string) ([]ghfake.CheckRun, []ghfake.Status) {
		return []ghfake.CheckRun{{Name: "ci", Status: "completed", Conclusion: "success"}}, nil
	})
	said := filepath.Join(dir, "said")
	full := append(env, "GITHUB_TOKEN=tok-1", "GITHUB_API_URL="+fake.URL(), "GH_REPO=acme/widgets",
		"NOTIFY_CMD=cat >> "+said)
	run := func(extra []string, args ...string) (string, int) {
		var out bytes.Buffer
		a := &cmdutil.App{S: &cmdutil.Streams{Out: &out, Err: &out}, Cwd: work, Env: cmdutil.EnvMap(append(full, extra...))}
		err := NewCmd(nil).Run(context.Background(), a, args)
		if err != nil {
			out.WriteString("error: " + err.Error())
		}
		return out.String(), cmdutil.ExitCode(err, nil)
	}
	if out, code := run(nil); code != cmdutil.ExitUsage {
		t.Errorf("no PROMOTE_TO: exit %d\n%s", code, out)
	}
	chain := []string{"PROMOTE_TO=staging production"}
	if out, code := run(chain, "--to", "qa"); code != cmdutil.ExitUsage {
		t.Errorf("--to qa: exit %d\n%s", code, out)
	}
	out, code := run(chain)
	if code != 0 || !strings.Contains(out, "main → staging: promoted (pull request #1)") || !strings.Contains(out, "staging → production: promoted (pull request #2)") {
		t.Fatalf("promote (exit %d):\n%s", code, out)
	}
	git("-C", origin, "cat-file", "-e", "production:a.txt")
	ev, _ := os.ReadFile(said)
	if strings.Count(string(ev), `"event":"announce"`) != 2 || !strings.Contains(string(ev), "the API (#4)") ||
		!strings.Contains(string(ev), `"phase":"staging→production","detail":"pull request #2 merged\n\n## Changelog\n\n- Promote main to staging (#1)\n- the API (#4)`) {
		t.Errorf("NOTIFY_CMD got:\n%s", ev)
	}
	if out, _ := run(chain); !strings.Contains(out, "main → staging: not due") {
		t.Errorf("again:\n%s", out)
	}
	// New work, within the interval: --now promotes it, --to staging
	// only as far as staging.
	os.WriteFile(filepath.Join(work, "b.txt"), []byte("b\n"), 0o644)
	git("-C", work, "add", "-A")
	git("-C", work, "commit", "-qm", "the CLI (#5)")
	git("-C", work, "push", "-q", "origin", "main")
	if out, code := run(chain, "--now", "--to", "staging"); code != 0 || !strings.Contains(out, "main → staging: promoted (pull request #3)") || strings.Contains(out, "production") {
		t.Errorf("--now --to staging (exit %d):\n%s", code, out)
	}
	git("-C", origin, "cat-file", "-e", "staging:b.txt")
	if cmd := exec.Command("git", "-C", origin, "cat-file", "-e", "production:b.txt"); cmd.Run() == nil {
		t.Error("--to staging promoted production too")
	}
	fake.SetMergeMethods(false, true, true)
	if out, code := run(chain, "--now"); code != cmdutil.ExitUsage || !strings.Contains(out, "allows none") {
		t.Errorf("no merge commits: exit %d\n%s", code, out)
	}
}
