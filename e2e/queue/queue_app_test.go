package queue

import (
	"context"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/wire"
	"github.com/claudopilot/claudopilot/internal/e2e"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/worktree"
)

// TestAppTokenSettings: GH_APP_TOKEN_CMD (or issue-orchestrator's
// GH_APP_TOKEN_SCRIPT) makes the queue run a command for its tokens;
// GH_APP_ID, GH_APP_INSTALLATION_ID and GH_APP_PRIVATE_KEY_FILE go
// together (issue 24 §6).
func TestAppTokenSettings(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	env := e2e.Env(repo, "")
	e2e.Git(t, repo, env, "init", "-q", "-b", "main")
	wt, err := worktree.Open(context.Background(), repo, env)
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(more ...string) (issues.GitHubConfig, error) {
		env := wire.EnvMap(append(append(env, "GH_REPO=acme/widgets"), more...))
		s, err := settings.Resolve(settings.Input{Scope: settings.Queue, Env: env, Issues: true})
		if err != nil {
			return issues.GitHubConfig{}, err
		}
		return wire.GitHub(context.Background(), s, wt, env, "queue")
	}
	g, err := resolve("GH_APP_TOKEN_SCRIPT=mint-token --app 7")
	if c, ok := g.Tokens.(issues.CommandToken); err != nil || !ok || c.Cmd != "mint-token --app 7" {
		t.Errorf("GH_APP_TOKEN_SCRIPT: %#v, %v", g.Tokens, err)
	}
	if _, err := resolve("GH_APP_ID=7", "GH_APP_INSTALLATION_ID=9"); err == nil || !strings.Contains(err.Error(), "GH_APP_PRIVATE_KEY_FILE together") {
		t.Errorf("a partial app: %v", err)
	}
	if _, err := resolve(); err == nil || !strings.Contains(err.Error(), "GH_APP_TOKEN_CMD") {
		t.Errorf("no token: %v", err)
	}
}
