// Package queue holds the end-to-end tests of the issue queue (run
// --issues, queue, retry against a fake GitHub) and of the web page in a
// headless Chromium (one browser shared by the package's tests, closed
// after them), and the scripts of agents' questions (needs_input), an
// issue's logs and the migrations from the older drivers (issuepilot,
// Claudopilot v0.4): testdata/script/*.txtar (the module's
// testdata/README.md describes them). Its own test binary (own go test
// timeout, run beside the other e2e packages, #23); internal/e2e is the
// harness.
package queue

import (
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/e2e"
)

func TestMain(m *testing.M) { e2e.Main(m, chromium.close) }

func TestScript(t *testing.T) { e2e.RunScripts(t, filepath.Join("testdata", "script")) }
