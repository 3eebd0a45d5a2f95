// Package manifest reads and edits a Claudopilot EXECUTION-MANIFEST.md.
//
// goldmark decides which lines are list items (so code fences, HTML comments,
// nesting and CRLF are handled as markdown does); the phase grammar is then
// matched on each item's raw first-line bytes. Edits rewrite only the bytes of
// one token, so a hand-edited file keeps every other byte. The package does
// no I/O.
//
// A phase is a list item (ordered or bullet, at any depth) whose first line is
//
//	[<state>] **<id>** — <title>
//
// with state one of pending, running, merged, failed, blocked; the dash may
// be "—", "–" or "-". The title may carry annotations anywhere:
// (deps: a, b), (owns: api/, pkg/x.go), (gate: <cmd>) and (est: 90m). Only
// the first line of the item is read. An item that starts like a phase
// ("[state]", or "[word] **") but does not fit the grammar is an error, never
// skipped; task items ("- [ ] x", "- [x] x") and other list items are prose.
//
// File-level settings are top-level paragraph lines "**Status:** value",
// "**Gate:** cmd" and "**Prepare:** cmd"; "<!-- LOOP-CHECKPOINT: text -->"
// comments are recorded as checkpoints.
package manifest
