// Package crash holds the end-to-end tests that kill the driver (SIGKILL
// and stops, by journal events) and check what it promises after a
// restart: everything merged exactly once, no agent's commit lost, only
// gated merges on the base's first-parent history, the user's edits kept.
// Its own test binary (own go test timeout, run beside the other e2e
// packages, #23); internal/e2e is the harness.
package crash

import (
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m) }
