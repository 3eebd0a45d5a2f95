package work

import (
	"slices"
	"strings"
	"testing"
)

// One rule for run and queue (issue 21): secret-named variables are left
// out, the agent CLIs' own keys kept, AGENT_ENV_ALLOW keeps any, and a
// variable holding the queue's token goes whatever its name.
func TestAgentEnv(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=/bin", "HOME=/h", "GITHUB_TOKEN=ghp_x", "GH_TOKEN=y", "NPM_TOKEN=n", "AWS_SECRET_ACCESS_KEY=a",
		"DB_PASSWORD=p", "ANTHROPIC_API_KEY=k", "CLAUDE_CODE_OAUTH_TOKEN=o", "KEEP_TOKEN=kept", "CLAUDOPILOT_ROLE=x",
		"REMOTE=https://u:tok-123456@h/r", "TOKENIZER=x"}
	got := AgentEnv(env, []string{"KEEP_TOKEN", " NPM_TOKEN"}, "tok-123456")
	var names []string
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	want := []string{"PATH", "HOME", "NPM_TOKEN", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "KEEP_TOKEN"}
	if !slices.Equal(names, want) {
		t.Errorf("AgentEnv kept %q, want %q", names, want)
	}
	if out := LeftOut(env, []string{"KEEP_TOKEN"}); !slices.Equal(out, []string{"AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GH_TOKEN", "GITHUB_TOKEN", "NPM_TOKEN", "TOKENIZER"}) {
		t.Errorf("LeftOut = %q", out)
	}
}

// LANE_<id>_CREDENTIALS names a lane's account folder: a path, never
// withheld (docs/lanes.md); other *_CREDENTIALS are.
func TestAgentEnvKeepsLaneCredentials(t *testing.T) {
	t.Parallel()
	env := []string{"LANE_main_CREDENTIALS=/home/u/.claude-work", "GOOGLE_APPLICATION_CREDENTIALS=/k.json"}
	if got := AgentEnv(env, nil); !slices.Equal(got, env[:1]) {
		t.Errorf("AgentEnv = %q", got)
	}
	if out := LeftOut(env, nil); !slices.Equal(out, []string{"GOOGLE_APPLICATION_CREDENTIALS"}) {
		t.Errorf("LeftOut = %q", out)
	}
}
