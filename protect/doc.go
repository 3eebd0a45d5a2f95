// Package protect says which files of the repository steer the driver's
// next run, and finds them among the paths a landing changes.
//
// Whatever an agent commits lands on the base branch, and the next run
// reads the base: a settings file that turns the sandbox off, a prompt
// override, another phase's doc. Such files are protected: a landing that
// adds, changes or deletes one is refused (reason protected), naming the
// file and what reads it.
//
// The set is not a fixed list. Each part of the driver that reads files
// from the repository (the settings model, the prompt loader, the roadmap,
// the control files, git itself) declares them as Rules; the composition
// root gathers them into one Set, with the user's PROTECTED_PATHS, and
// the landings check against that Set. A new reader adds its Rules and is
// protected without a change to any landing.
//
// The package is pure: no I/O, no git.
package protect
