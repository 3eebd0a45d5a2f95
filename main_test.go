package main

// End-to-end tests: testdata/script/*.txtar drive the real binary (this test
// binary, installed on $PATH as "claudopilot" by internal/e2e.Main) against
// throwaway git repositories, with the fake agents of testdata/agents.
// testdata/README.md describes the scripts, the agents and the commands.
//
//	GIT_CONFIG_GLOBAL=/dev/null go test -run TestScript -count=1 .
//	go test -run TestScript/plan_ok -update .   # rewrite golden sections

import (
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }

func TestScript(t *testing.T) { e2e.RunScripts(t, filepath.Join("testdata", "script")) }
