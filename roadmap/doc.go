// Package roadmap turns a parsed manifest and the phase docs beside it into a
// validated dependency graph, and answers the questions a plan or a
// scheduler asks of it: waves, critical path, what may start now.
//
// Validation reports every problem at once (duplicate ids, unknown deps,
// self-deps, cycles with their whole path, missing docs) as
// "path:line: message". All graph algorithms are linear in phases plus deps.
package roadmap
