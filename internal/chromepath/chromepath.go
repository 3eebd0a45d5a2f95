// Package chromepath finds the Chromium that the browser tests drive: the
// one list for package web's tests and e2e/queue's.
package chromepath

import "os/exec"

// names are the commands tried, in order. Debian's chromium-headless-shell
// first: Chromium without its window code, it runs web's three browser
// tests for about a third of the CPU (BENCHMARKS.md §5, session 13 brw);
// .ci/install installs it beside chromium.
var names = []string{"chromium-headless-shell", "headless-shell", "chromium", "chromium-browser", "google-chrome"}

// Find is the first of names found on PATH, or "" when there is none (a
// browser test then skips).
func Find() string {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
