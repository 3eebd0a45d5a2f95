// Package transcript reads an agent's output, as its log holds it, as a
// transcript: what the assistant said, each tool it called with its input
// in one line and its result beside it (folded when shown), and what each
// turn spent. It knows Claude Code's stream-json (`claude -p
// --output-format stream-json --verbose`), Codex's `codex exec --json` and
// opencode's `opencode run --format json`; a line that is none of them
// (plain output, a gate's log, the driver's own notes) is kept as text.
//
// It is the one renderer of agent output: `claudopilot logs --pretty`
// prints Text, the web page shows HTML, and both read the entries a Parser
// builds. The output is the agent's, so it is never trusted: HTML escapes
// everything, Text drops control characters and escape sequences, and
// nothing in it is followed or run.
package transcript
