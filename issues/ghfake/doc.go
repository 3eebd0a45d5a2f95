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
// (a pull request's head is that repository's branch, read live; a merge
// checks the expected head sha, answers 409 when it moved and 405 for
// drafts and conflicts, and closes the issues the body says it closes).
// Lists paginate with Link headers (MaxPerPage makes pages small).
//
// Faults are injected per request: 5xx answers, primary rate limits (403
// with X-RateLimit-Remaining: 0 and a reset time), secondary rate limits
// (403 with Retry-After), and slow answers (the request is carried out at
// once, the answer comes late, as when a real response times out).
//
// Endpoints: GET /user; GET /repos/{o}/{r}; labels (list, create); issues
// (list with state/labels/sort/direction, get, edit state, add and remove
// labels, events, comments); collaborator permission; pulls (list with
// head/state, create, get, merge); check runs and statuses of a commit;
// POST /graphql markPullRequestReadyForReview. Anything else is 404.
package ghfake
