// Package cli holds the end-to-end scripts of the commands around a run
// (plan, doctor, init, help, completion, explain, status, logs, cost,
// attach, notify, demo), and the test of .ci/install:
// testdata/script/*.txtar (the module's testdata/README.md describes them)
// drive the real binary against throwaway git repositories. Its own test
// binary (own go test timeout, run beside the other e2e packages, #23);
// internal/e2e is the harness.
package cli

import (
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }

func TestScript(t *testing.T) { e2e.RunScripts(t, filepath.Join("testdata", "script")) }
