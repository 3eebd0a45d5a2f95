// Package cmdutil is what every command of the command tree shares: the
// streams and the App each command gets (the environment as given, the
// working folder), the Command type, flag parsing and its misuse error,
// the one place an error becomes an exit code, and the helpers several
// commands use (finding the roadmap folder, the repository's state
// folder, the driver lock, the status snapshot).
package cmdutil
