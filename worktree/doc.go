// Package worktree is claudopilot's only door to git: it creates and removes
// the git worktrees agents run in, inspects and commits their changes, and
// builds merge commits into the base branch without touching any checkout.
//
// Every operation shells out to the git CLI as `git -C <dir> ...` with the
// Client's environment; there is no go-git and no package-level state. Each
// call takes a context and the git process is killed when it is cancelled.
//
// Concurrency: a Client may be used from many goroutines. `git worktree
// add/remove/prune` (and the reads of .git/worktrees that race with them:
// listing worktrees, deleting branches) are serialized by a per-Client mutex,
// because parallel `git worktree add` fails in git 2.39 ("failed to read
// .git/worktrees/…/commondir"). Two Clients on the same repository do not
// share that mutex, so a process should use one Client per repository.
// Everything else runs concurrently; ReplaceFiles builds trees in a private
// temporary index and never touches a worktree's index.
//
// The merge flow is plumbing only: MergeTree (git merge-tree --write-tree)
// → ReplaceFiles (rewrite e.g. the manifest in the merged tree) → CommitTree
// → UpdateRef with the expected old value (compare-and-swap; ErrStale when
// another writer won). If the moved branch is checked out somewhere,
// WouldOverwrite and AdvanceCheckout then bring that checkout forward the way
// `git merge` would have.
//
// Failed git commands return *GitError (args, exit code, stderr). Error
// classification never parses git's (localized) messages: it relies on exit
// codes and follow-up queries.
package worktree
