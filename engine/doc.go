// Package engine composes one run: it opens the repository, finishes what
// a killed driver left half done, loads the roadmap, resolves the run's
// settings (through the caller's resolver: flags and their precedence are
// the command line's business), takes the repository lock, opens the
// journal, and wires the runner, the landing, the scheduler, the watcher
// of the manifest, the controls (pause, lanes and the pacer) and the issue
// queue. It exposes the event stream and the controls; rendering them is
// the caller's.
//
// `run`, `run --issues` and `queue` call it (`queue` without a roadmap as
// an empty roadmap with no local merger: Options.NoRoadmap), and so will
// any other front end: package main parses flags and renders, nothing
// else.
package engine
