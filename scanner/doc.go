// Package scanner is the queue's refill (docs/queue.md, "Scanners and
// refill"): read-only agent runs on a clean checkout of the base that
// print candidate issues as JSON lines, which the driver dedupes against
// its scanner ledger (.claudopilot/state/scans.jsonl) and the open issues,
// and files as proposals a maintainer approves by adding the ready label.
//
// A scanner's prompt is markdown: built in (builtin/*.md, written for
// this project), replaced or added by committed files in
// claudopilot/scanners/*.md, with claudopilot/scanners/CONTEXT.md given
// to every scanner. Those files steer what the driver files, so they are
// protected control files (Protected).
//
// A scanner's output is untrusted: it is only ever filed as an issue
// without the ready label, redacted, and never run or followed.
package scanner
