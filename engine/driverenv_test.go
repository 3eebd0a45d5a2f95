package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
)

// driverEnv is the environment of an in-process driver run over a test
// repository in dir, as a map (settings.Input's Env) and as a list (the
// engine's and git's): no machine git configuration, a fixed identity, the
// agent dir/agent.sh, a gate that passes, no sandbox, base main, and no
// automatic git maintenance after each commit and merge; extra are more
// keys.
func driverEnv(dir, maxParallel string, extra map[string]string) (map[string]string, []string) {
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": dir,
		"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
		"AGENT_CMD": "sh " + filepath.Join(dir, "agent.sh"), "GATE_CMD": "true", "SANDBOX": "off",
		"BASE_BRANCH": "main", "MAX_PARALLEL": maxParallel, "POLL_SECONDS": "60",
	}
	for k, v := range extra {
		env[k] = v
	}
	list := gittest.NoAutoMaintenance()
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	return env, list
}

// writeFile writes body at p, making its folder.
func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
