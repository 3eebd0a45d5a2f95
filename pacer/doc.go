// Package pacer decides how many agents each lane may run at once.
//
// A lane is one agent CLI (and account) with its own quota. Users run these
// CLIs on subscriptions with a weekly window and a five-hour window; an
// overnight run should spend a window's quota evenly instead of idling it
// or hitting its wall at 2 a.m. The pacer is a pure function from the lane
// configuration, usage readings, a resource probe and the previous result
// to each lane's concurrency, so every rule is a table test. Reading the
// usage commands, probing the machine and persisting the result are the
// caller's: this package does no I/O.
package pacer
