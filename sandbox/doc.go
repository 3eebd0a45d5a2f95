// Package sandbox confines an agent's processes with bubblewrap (bwrap), so
// that staying inside its worktree does not depend on the model obeying a
// prompt.
//
// Args builds the bwrap command line for one process: the whole filesystem
// read-only; a private /tmp; the base checkout and the other worktrees
// hidden under empty tmpfs mounts; the git common directory read-only
// except objects/, the worktree's own admin folder and the folder holding
// its branch ref; the worktree and the agent CLIs' state folders writable;
// a PID namespace and die-with-parent, so nothing the agent starts outlives
// the attempt; no capabilities, so the read-only mounts cannot be undone
// from inside.
//
// Git writes a branch ref by creating "<ref>.lock" beside it and renaming
// it over the ref, so the folder holding the ref must be writable, and that
// folder (refs/heads/auto/) holds every phase's branch. Instead of binding
// it, Prepare gives each attempt a private folder holding only its own ref,
// mounted over refs/heads/auto/ (and another over its reflogs). The agent
// commits as usual; whatever it writes to a sibling ref stays in the
// private folder. Sync then moves the real branch to the agent's tip with a
// compare-and-swap and reports every other ref the agent wrote.
//
// Watch is the fallback without a sandbox: it names files of the base
// checkout and of other worktrees that changed while an attempt ran (one
// inotify watch while attempts run, git status only where it saw a
// change). Nothing can attribute such a change without a sandbox, so it
// is only reported.
package sandbox
