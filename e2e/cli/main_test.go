// Package cli holds the end-to-end scripts of the commands: those that
// run agents (run, fail, review, lanes, safe, sandbox, protect, agent_env)
// and those around a run (plan, doctor, init, help, completion, explain,
// status, logs, cost, attach, notify, demo), and the test of .ci/install:
// testdata/script/*.txtar (the module's testdata/README.md describes them)
// drive the real binary against throwaway git repositories. One test
// binary for both (they were e2e/cli and e2e/run: a link of ~250 MB, ~3 s
// of CPU, less per go test ./..., #23); its own go test timeout, run
// beside the other e2e packages; internal/e2e is the harness.
package cli

import (
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }

func TestScript(t *testing.T) { e2e.RunScripts(t, filepath.Join("testdata", "script")) }
