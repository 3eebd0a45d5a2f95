package work

import (
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/launch"
)

// AgentKeys are the agent CLIs' own keys (Claude Code, Codex): secret
// by name, but an agent started without its key cannot work, so they are
// kept.
var AgentKeys = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY"}

// AgentEnv is the environment agents, gates, WORKTREE_PREPARE_CMD and
// LOCKFILE_CMD get from the driver's (env): the one rule for run and
// queue (issue 21). Left out: the driver's own CLAUDOPILOT_ variables;
// GITHUB_TOKEN, GH_TOKEN and every other variable whose name says it holds
// a secret (launch.SecretName), except AgentKeys; and any variable holding one of
// tokens (the queue's token, at least 6 characters). allow (AGENT_ENV_ALLOW)
// names variables kept whatever their name or value.
func AgentEnv(env []string, allow []string, tokens ...string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !leftOut(kv, allow, tokens) {
			out = append(out, kv)
		}
	}
	return out
}

// LeftOut names the variables of env that AgentEnv leaves out because of
// their name or value (not the driver's own), sorted: what a run says at
// its start.
func LeftOut(env []string, allow []string, tokens ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "CLAUDOPILOT_") && leftOut(kv, allow, tokens) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func leftOut(kv string, allow, tokens []string) bool {
	k, v, _ := strings.Cut(kv, "=")
	switch {
	case strings.HasPrefix(k, "CLAUDOPILOT_"):
		return true
	case slices.ContainsFunc(allow, func(a string) bool { return strings.TrimSpace(a) == k }):
		return false
	case k == "GITHUB_TOKEN" || k == "GH_TOKEN":
		return true
	case launch.SecretName(k) && !slices.Contains(AgentKeys, k):
		return true
	}
	for _, t := range tokens {
		if len(t) >= 6 && strings.Contains(v, t) {
			return true
		}
	}
	return false
}
