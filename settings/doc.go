// Package settings is the one settings model: it resolves flags, the
// environment, the settings files at the repository's top level and the
// manifest's **Gate:**/**Prepare:** lines into one typed Settings, records
// where each value came from, and reports every problem at once, each with
// its source. Every command that reads a setting (doctor, plan, run, queue,
// explain, status, lanes) resolves it here, so they agree by construction.
//
// It does no I/O on the process: the environment, the flags and the
// repository's top level are its inputs; it reads only the settings files
// (Files) and, for the base rule, asks git through an interface.
//
// Adding a knob is one entry in the table (knobs.go) and its typed field in
// Settings.
package settings
