// Package examples holds the example roadmaps shipped in the binary:
// demo/ is what `claudopilot demo` runs.
package examples

import "embed"

// Demo is the demo roadmap's repository, under demo/.
//
//go:embed demo
var Demo embed.FS
