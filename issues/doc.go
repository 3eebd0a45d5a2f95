// Package issues is claudopilot's issue-queue mode: open GitHub issues
// labelled READY_LABEL become nodes "#N" of the same kind of dependency
// graph as a manifest's phases, and each is worked like a phase by an agent
// in its own worktree, then pushed, opened as a draft pull request that
// closes the issue, watched until its checks are green (red checks go to
// the repair supervisor) and merged or handed to a human for review.
//
// The pieces:
//
//   - GitHub (github.go): the only door to the API, go-github wrapped in one
//     fault policy: primary rate limits wait for their reset, secondary ones
//     for Retry-After (any 403/429 carrying one), 5xx and timeouts back off
//     and retry, 404 is ErrNotFound. Writes whose answer was lost are
//     checked before a retry (a comment by its nonce, a pull request by its
//     branch, a merge by the pull request's merged flag, ready and
//     update-branch by the pull request), so nothing is done twice and a
//     merged pull request is never reported as failed; 405 "Base branch was
//     modified" and 422 head invalid (a push GitHub has not processed) are
//     waited out. An app installation token's login comes from GraphQL's
//     viewer or the author of our own first comment. Every posted text is
//     scrubbed. Label names are path-escaped (go-github's RemoveLabelForIssue
//     does not). IssuesDone is what a roadmap phase depending on "#N" asks.
//   - ParseDeps (deps.go): the deps in an issue body, read with goldmark.
//   - graphProblems (graph.go): self-deps, unknown issues and phases, and
//     cycles through issues and manifest phases, found by the roadmap
//     package's own validation.
//   - the claim protocol (claim.go): labels plus "claimed by <instance>"
//     comments with hidden markers, folded the same way by every instance,
//     so exactly one instance works an issue even across machines; stale
//     claims of crashed instances are released.
//   - Queue (queue.go): the one loop that owns the queue's state. It polls,
//     releases stale claims, blocks issues with invalid deps, and starts
//     workers; workers report their Result over a channel.
//   - the worker (worker.go): claim, worktree from <remote>/<base>, agent
//     with the same contract as a roadmap phase, done check, gate; then the
//     landing (land.go): push, pull request marked ready before its checks
//     count, checks (CHECKS_GRACE, CHECKS_TIMEOUT), repairs, the branch
//     brought up to date when the base moved, merge or review; or one
//     blocking comment with the scrubbed log tail.
//   - the queue as the one scheduler's landing strategy (outside.go): Land
//     does the landing above for a tip the scheduler's runner gated and
//     ends at red checks (the scheduler's supervisor repairs, and Land
//     carries on from the kept pull request); Record keeps labels and
//     comments in step with the state the scheduler gives an issue, from
//     one bookkeeping goroutine (Bookkeep); Claimed starts the claim
//     heartbeat and Release gives a claim up.
//   - Scrubber (scrub.go): the driver's redaction funnel (secret.Redactor,
//     knowing the token) as the queue holds it: out of everything posted
//     or shown; AgentEnv keeps the token out of agents.
//
// Package ghfake is the in-process fake GitHub the tests run against.
package issues
