// Package proc runs every process the driver starts (agents, supervisors,
// reviewers, gates, prepare, bootstrap) and reports how it
// ended. It knows nothing about DAGs or git.
//
// The agent runs as "sh -c Command" in its own process group, so one signal
// to the group reaches every process the agent started. Its combined output
// goes through a pipe that is always drained into a size-capped log (the tail
// is kept, since the end of a log explains a failure) and into an in-memory
// tail that Classify and CooldownHint read to tell rate limits and transient
// provider errors from real failures.
//
// Run returns only when the group is dead. Cancellation, Timeout and
// StuckTimeout share one path: SIGTERM to the group, SIGKILL after KillGrace,
// and SIGKILL for any member left once the shell has exited. When the shell
// exits by itself, leftover members get SIGTERM and then SIGKILL as well:
// agents must not leave daemons behind in a worktree. Processes that leave
// the group (setsid) are also signalled on the kill paths if they are still
// reachable through parent links; one that escaped after its parent exited
// cannot be found, and Run stops reading its output after a short grace
// instead of waiting for it.
//
// KillGroup and Alive let a restarted driver stop agents whose process group
// ids it journaled before it crashed.
package proc
