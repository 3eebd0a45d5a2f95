// Package bench holds claudopilot's performance measurements: Go benchmarks
// of the scheduler's quality against fake runners (sched_test.go), and
// scripts that drive the real binary (overhead.sh). It has no code of its
// own; see README.md in this folder and BENCHMARKS.md at the top.
package bench
