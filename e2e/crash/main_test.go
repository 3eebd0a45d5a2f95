// Package crash holds the end-to-end tests of stopping the driver: the Go
// tests that kill it (SIGKILL and stops, by journal events) and check what
// it promises after a restart (everything merged exactly once, no agent's
// commit lost, only gated merges on the base's first-parent history, the
// user's edits kept), and the scripts of interrupting, draining, pausing
// and restarting a run and of what a stop leaves (clean, doctor's
// leftovers, status mid-landing): testdata/script/*.txtar (the module's
// testdata/README.md describes them). Its own test binary (own go test
// timeout, run beside the other e2e packages, #23); internal/e2e is the
// harness.
package crash

import (
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }

func TestScript(t *testing.T) { e2e.RunScripts(t, filepath.Join("testdata", "script")) }
