// Package ghfake is an in-process fake of the GitHub REST API (and the one
// GraphQL mutation claudopilot uses), for tests, in the manner of
// net/http/httptest: New starts it on a loopback port and its URL is a
// plain base URL for go-github.
//
// It keeps real state for one repository: issues and pull requests (one
// numbering), labels, label events, comments with increasing ids and the
// injected clock's timestamps, collaborators and their permissions, check
// runs and commit statuses (from a CI callback, per commit), and merges that
// are real git merges into a local bare repository standing in for origin
// (git's merge-tree where the head lacks the base; the commit and the
// moved branch written as git's own files by the fake, objects.go, as is a
// person's commit, Commit) (a pull request's head is that repository's branch, read live; a merge
// checks the expected head sha, answers 409 when it moved, 405 for drafts
// and conflicts and 405 "Base branch was modified" when the base moved
// under it, and closes the issues the body says it closes; update-branch
// merges the base into the head and answers 202). Lists paginate with Link
// headers (MaxPerPage makes pages small).
//
// It answers as GitHub really does where that differs from the docs' happy
// path: an app installation token (AddAppToken) acts as "name[bot]" (type
// Bot), gets 403 "Resource not accessible by integration" from GET /user,
// and its login gets 404 "name[bot] is not a user" from the collaborator
// permission endpoint; a pull request whose head branch GitHub does not
// know answers 422 {"resource":"PullRequest","field":"head","code":
// "invalid"}; with CIRules, a draft's commit has no checks (CI that skips
// drafts) and checks appear some time after a push, not at once; a
// transferred issue (TransferIssue) answers 301 to its new place by
// repository id, or 404 when the token cannot read the target.
//
// Every answer carries the token's X-RateLimit headers (limit, remaining,
// used, reset, resource), counted as GitHub counts (Counted): an hour's
// window per token, every authenticated request but a 304. A successful
// GET carries an ETag, and a GET whose If-None-Match names the current
// ETag is answered 304 without a body.
//
// A GitHub App (AddApp) mints installation tokens: POST
// /app/installations/{id}/access_tokens with an RS256 JWT the app signed
// (its id as issuer, expiring within 10 minutes) answers 201 with a token
// that expires an hour later; an expired token answers 401 "Bad
// credentials". A repository's merge settings (SetMergeMethods:
// allow_merge_commit, allow_squash_merge, allow_rebase_merge, shown only
// to who may push) and branch protection (RequireApprovals, reviews) give
// GitHub's 405 merge refusals word for word.
//
// Faults are injected per request: 5xx answers with any message or body,
// primary rate limits (403 with X-RateLimit-Remaining: 0 and a reset time),
// secondary rate limits (403 "You have exceeded a secondary rate limit"
// with remaining above 0, the window's reset, and Retry-After only when
// the fault sets one; any documentation URL), slow
// answers (the request is carried out at once, the answer comes late, as
// when a real response times out) and lost answers (carried out, answered
// with an error, as a 502 from a proxy after GitHub acted).
//
// Endpoints: GET /user; GET /repos/{o}/{r}; labels (list, create); issues
// (list with state/labels/sort/direction, get, edit state, add and remove
// labels, events, comments); collaborator permission; pulls (list with
// head/state, create, get, merge, update-branch); compare; check runs and
// statuses of a commit; POST /graphql viewer and
// markPullRequestReadyForReview; GET of an issue of another repository
// set with SetForeign. Anything else is 404.
package ghfake
