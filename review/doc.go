// Package review holds the rules of the independent review gate, with no
// I/O: the fingerprint that binds a verdict to the exact tree a reviewer
// read, the marker line a reviewer ends its output with, which markers the
// driver accepts, how reviewers' lenses are shared out, and what a round's
// verdicts decide. Running reviewers is the job of package work; owning the
// rounds is the scheduler's.
package review
