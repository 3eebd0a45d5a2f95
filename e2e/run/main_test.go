// Package run holds the end-to-end scripts that run agents (run, fail,
// review, lanes, safe, sandbox, protect, agent_env):
// testdata/script/*.txtar (the module's testdata/README.md describes them)
// drive the real binary against throwaway git repositories. Its own test
// binary (own go test timeout, run beside the other e2e packages, #23);
// internal/e2e is the harness.
package run

import (
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }

func TestScript(t *testing.T) { e2e.RunScripts(t, filepath.Join("testdata", "script")) }
