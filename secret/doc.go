// Package secret knows what a secret looks like and keeps it out of what
// the driver lands and writes.
//
//   - The rules (shapes.go, rules.go, assign.go, base64.go, lines.go): token
//     and key shapes, private keys, secret assignments and fields anywhere
//     in a line, high-entropy values under secret names, base64 of any of
//     them, a token split over two lines. A one-pass table of the bytes
//     that may start a rule's hint picks the rules worth trying on a line
//     (hints.go).
//   - The scan (scan.go): Scanner.Landing reads everything a landing
//     brings into history (the tree's added lines, every commit's own
//     changes, merges against each parent, messages, binary files' bytes)
//     and reports each hit by place and rule, never its value; allow
//     comments and SECRET_ALLOW accept false positives. Push is the same
//     scan for what the issue queue pushes.
//   - The funnel (redact.go): one Redactor, built once from the driver's
//     environment, replaces the values of its secret-named variables (raw,
//     URL-escaped, base64) and whatever the rules find with [REDACTED], in
//     strings, lines and streams (a process's output).
package secret
