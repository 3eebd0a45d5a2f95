// Package notify runs NOTIFY_CMD for the events a person away from the
// screen cares about: a phase merged, parked or failed, the run finished,
// a rate-limit cooldown starting or ending, a budget reached, pause and
// resume, and a lane's concurrency changed by the pacer. The message goes
// in CLAUDOPILOT_NOTIFY_MSG and the event as JSON on stdin, never spliced
// into a shell string. Commands run one at a time in a goroutine of their
// own with a bounded queue, so a slow or broken notifier never holds the
// run; its failures are logged.
package notify
