package ghfake

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-github/v84/github"

	"github.com/claudopilot/claudopilot/internal/gitobj"
	"github.com/claudopilot/claudopilot/internal/lazy"
	"github.com/claudopilot/claudopilot/worktree"
)

// Options configure a fake.
type Options struct {
	Owner, Repo   string
	DefaultBranch string // default "main"
	// Origin is the bare repository the pull requests' branches live in.
	Origin string
	// GitEnv is the environment for the fake's git commands (merges); nil
	// means none but GIT_CONFIG_NOSYSTEM/GIT_CONFIG_GLOBAL=/dev/null. A
	// committer identity is added.
	GitEnv     []string
	Now        func() time.Time // default time.Now
	MaxPerPage int              // largest page (default 100)
}

// CheckRun is a check run as the CI callback reports it.
type CheckRun struct {
	Name       string
	Status     string // queued, in_progress, completed
	Conclusion string // success, failure, neutral, cancelled, skipped, timed_out, action_required
	Title      string
	DetailsURL string
}

// Status is a commit status as the CI callback reports it.
type Status struct {
	Context, State, Description string // State: pending, success, failure, error
}

// Fault is an injected fault. It hits the next Times requests (0 means 1,
// negative means every one) whose method is Method ("" any) and whose path
// contains Path ("" any; a Path ending in "$" must end the path:
// "/issues/2$" is not "/issues/2/comments").
type Fault struct {
	Method, Path string
	Times        int
	Status       int           // answer with this status (e.g. 502)
	RateLimit    bool          // primary rate limit: 403, X-RateLimit-Remaining: 0, reset after Reset
	Reset        time.Duration // for RateLimit
	// Secondary: a secondary rate limit, 403 MsgSecondary with the
	// token's real X-RateLimit headers (remaining above 0, a reset up to
	// an hour ahead), and Retry-After only when RetryAfter is set.
	Secondary  bool
	RetryAfter time.Duration // for Secondary and Status answers
	Delay      time.Duration // carry out the request, answer after Delay (or when the client gives up)
	// Lost carries out the request, then answers Status instead of the
	// real answer: a write that went through whose answer was lost (a 502
	// from a proxy after GitHub acted).
	Lost bool
	// Drop carries out the request, then cuts the connection without an
	// answer: what a client sees when its timeout ran out, or a proxy
	// dropped the connection, after GitHub acted (a transport error). A
	// test of that costs no wait, unlike a Delay the client must time
	// out of.
	Drop bool
	// Message is the message of a Status answer (default "injected
	// fault"); Body, when set, is the whole JSON answer instead.
	Message string
	Body    any
	// DocURL is the documentation_url of a Secondary or Status answer.
	DocURL string
}

// Messages GitHub answers with, word for word.
const (
	// MsgNotAccessible: an app installation token asked for something only
	// a user has (GET /user), 403.
	MsgNotAccessible = "Resource not accessible by integration"
	// MsgBaseModified: two merges raced and this one lost, 405.
	MsgBaseModified = "Base branch was modified. Review and try the merge again."
	// MsgHeadModified: the merge's sha is no longer the head, 409.
	MsgHeadModified = "Head branch was modified. Review and try the merge again."
	// MsgApprovalRequired (with the count): branch protection wants
	// approving reviews before a merge, 405.
	MsgApprovalRequired = "At least %d approving review is required by reviewers with write access."
	// MsgMergeQueue: the base takes changes only through its merge queue
	// (GraphQL enqueuePullRequest), 405.
	MsgMergeQueue = "Changes must be made through the merge queue"
	// MsgSecondary: a secondary rate limit, 403, often without Retry-After
	// and with X-RateLimit-Remaining above 0.
	MsgSecondary = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID."
)

// MsgMethodRefused is GitHub's 405 to a merge with a method the
// repository does not allow.
var MsgMethodRefused = map[string]string{
	"merge":  "Merge commits are not allowed on this repository.",
	"squash": "Squash merges are not allowed on this repository.",
	"rebase": "Rebase merges are not allowed on this repository.",
}

// HeadInvalid is GitHub's 422 answer to a pull request whose head branch
// it does not know yet (a push it has not processed, or no such branch).
var HeadInvalid = map[string]any{
	"message":           "Validation Failed",
	"errors":            []map[string]string{{"resource": "PullRequest", "field": "head", "code": "invalid"}},
	"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
}

// Request is one request the fake received.
type Request struct {
	Method, Path, Login string
	Body                string
	At                  time.Time // on the fake's clock
	Status              int       // the answer's status
	// Counted: the request counted against the rate limit (a 304 to a
	// conditional request does not).
	Counted bool
}

// Issue is an issue or pull request as the fake holds it.
type Issue struct {
	Number      int
	Title, Body string
	Author      string
	Labels      []string
	State       string // open, closed
	StateReason string
	IsPR        bool
	CreatedAt   time.Time
	UpdatedAt   time.Time // any change: labels, comments, state, title, body
	Deleted     bool
	// MovedTo is the repository the issue was transferred to (TransferIssue).
	MovedTo       string
	movedReadable bool
	movedRepoID   int
	Comments      []Comment
	Events        []Event
	closedByPull  int
}

// Comment is an issue comment.
type Comment struct {
	ID        int64
	Author    string
	Body      string
	CreatedAt time.Time
}

// Event is an issue event (labeled, unlabeled, closed).
type Event struct {
	ID        int64
	Event     string
	Actor     string
	Label     string
	CreatedAt time.Time
}

// Pull is a pull request.
type Pull struct {
	Number      int
	Title, Body string
	Head, Base  string
	Draft       bool
	State       string
	Merged      bool
	MergedAt    time.Time
	MergeSHA    string
	NodeID      string
	Author      string
	Reviews     []PullReview
	Dequeued    []string // why the merge queue removed it, each time
	headSHA     string
	readyAt     time.Time
}

// PullReview is a review of a pull request.
type PullReview struct {
	ID          int64
	User, State string
	CommitID    string
	SubmittedAt time.Time
}

// Label is a repository label.
type Label struct{ Name, Color, Description string }

// Server is the fake.
type Server struct {
	srv   *httptest.Server
	opt   Options
	git   *worktree.Client
	obj   *gitobj.Repo // the origin's files, which the fake writes itself (objects.go); nil: left to git
	mu    sync.Mutex
	now   func() time.Time
	users map[string]string // login → permission (admin, maintain, write, triage, read, none)
	token map[string]string // token → login
	bots  map[string]bool   // logins of apps ("name[bot]")
	// state
	labels  []Label
	issues  map[int]*Issue
	pulls   map[int]*Pull
	nextNum int
	nextID  int64
	faults  []*Fault
	served  int
	reqs    []Request
	ci      func(sha string) ([]CheckRun, []Status)
	ciRules CIRules
	seen    map[string]time.Time // when a sha was first seen as a pull request's head
	onMerge func(pr int)
	// onRefused runs when a merge is refused for want of approvals.
	onRefused func(pr int)
	// onComment runs after a comment is stored, with the issue's number.
	onComment func(n int)
	onGit     func() // OnGitRequest
	// noViewer: GraphQL viewer answers an error (as some tokens' might).
	noViewer bool
	// rate: each token's window of counted requests ("login resource");
	// counted: every counted request by resource; limit: per hour.
	rate    map[string]*rateWindow
	counted map[string]int
	limit   int
	// allowed: the merge methods allowed (nil: all); approvals: approving
	// reviews branch protection wants on the default branch; mergeQueue:
	// the default branch takes changes only through its merge queue.
	allowed    map[string]bool
	approvals  int
	mergeQueue bool
	// apps that may mint tokens; expires: an installation token's expiry;
	// minted: tokens made.
	apps    []App
	expires map[string]time.Time
	minted  int
	queue   map[int]*queueEntry // the merge queue, by pull request
	// foreign holds issues of other repositories ("owner/repo" lowercased
	// → number → issue), readable with GET /repos/{o}/{r}/issues/{n} only.
	foreign map[string]map[int]*Issue
}

// CIRules make the CI callback's answers appear as real CI's do.
type CIRules struct {
	// SkipDrafts: a commit that is the head of draft pull requests only has
	// no checks (CI set up with if: !github.event.pull_request.draft).
	SkipDrafts bool
	// Delay: checks appear Delay after the commit was first seen as a pull
	// request's head (and, with SkipDrafts, after it was marked ready).
	Delay time.Duration
}

// New starts a fake for opt's repository.
func New(opt Options) *Server {
	if opt.DefaultBranch == "" {
		opt.DefaultBranch = "main"
	}
	if opt.MaxPerPage <= 0 {
		opt.MaxPerPage = 100
	}
	s := &Server{
		opt: opt, now: opt.Now, users: map[string]string{}, token: map[string]string{}, bots: map[string]bool{}, seen: map[string]time.Time{},
		issues: map[int]*Issue{}, pulls: map[int]*Pull{}, nextNum: 1, nextID: 1000,
		rate: map[string]*rateWindow{}, counted: map[string]int{}, limit: 5000,
	}
	if s.now == nil {
		s.now = time.Now
	}
	env := opt.GitEnv
	if env == nil {
		env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	}
	env = append(append([]string(nil), env...),
		"GIT_AUTHOR_NAME=GitHub", "GIT_AUTHOR_EMAIL=noreply@github.com",
		"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com")
	s.git = &worktree.Client{Dir: opt.Origin, Env: env}
	s.obj = plainFiles(opt.Origin)
	// What the origin's files do not answer (objects.go: a packed object,
	// an origin left to git) goes to one long-lived cat-file for the
	// server's life (Close ends it), started on first use, not one per
	// burst of requests: a test's pauses outlast its idle time.
	s.git.KeepResolvers(true)
	s.srv = httptest.NewServer(http.HandlerFunc(s.handler))
	return s
}

// URL is the API's base URL (use it as GITHUB_API_URL).
func (s *Server) URL() string { return s.srv.URL + "/" }

// Close stops the server.
func (s *Server) Close() {
	s.srv.Close()
	s.git.KeepResolvers(false)
	s.git.Close() // its long-lived cat-file, if one was started
}

// Has reports whether origin's ref (a branch name, or any name git
// resolves) has path: read from the origin's files (objects.go), not a
// git process of its own.
func (s *Server) Has(ref, path string) bool {
	return s.hasPath(context.Background(), ref, path)
}

// AddUser makes login known with a repository permission: admin,
// maintain, write, triage, read or none.
func (s *Server) AddUser(login, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[login] = permission
}

// AddToken makes token authenticate as login.
func (s *Server) AddToken(token, login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token[token] = login
}

// AddAppToken makes token an app installation token (as Actions'
// GITHUB_TOKEN or a GitHub App's) of app: it acts as "<app>[bot]", a Bot
// with write access, whose GET /user answers 403 MsgNotAccessible and whose
// collaborator permission answers 404 "<app>[bot] is not a user".
func (s *Server) AddAppToken(token, app string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	login := app + "[bot]"
	s.token[token] = login
	s.bots[login] = true
	return login
}

// Compiled at the first request (lazy), not at init: the root package's
// test binary links this fake and runs as the driver hundreds of times a
// suite, and its expressions were the largest init of each start (issue 23).
var accessTokens = lazy.Regexp(`^/app/installations/(\d+)/access_tokens$`)

// App is a GitHub App the fake knows: its id, the installation on the
// fake's repository, the public half of its private key, and its name
// (its tokens act as "<name>[bot]").
type App struct {
	ID           string
	Installation string
	Key          *rsa.PublicKey
	Name         string
}

// AddApp lets app mint installation tokens: POST
// /app/installations/{id}/access_tokens with a JWT (RS256, signed with
// the app's key, issued by its id, expiring within 10 minutes) answers
// 201 with a new token that expires an hour later; an expired token
// answers 401 "Bad credentials" from then on.
func (s *Server) AddApp(app App) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps = append(s.apps, app)
}

// ExpireTokens makes every installation token made so far expire now
// (revoked, or older than GitHub says): their next request answers 401.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.expires {
		s.expires[t] = s.now()
	}
}

// Minted is how many installation tokens were made.
func (s *Server) Minted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.minted
}

// mintToken answers POST /app/installations/{id}/access_tokens; s.mu is
// held.
func (s *Server) mintToken(w http.ResponseWriter, r *http.Request, inst string) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "A JSON web token could not be decoded"})
		return
	}
	for _, app := range s.apps {
		if app.Installation != inst {
			continue
		}
		claims := &jwt.RegisteredClaims{}
		_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return app.Key, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(s.now), jwt.WithIssuer(app.ID), jwt.WithExpirationRequired())
		switch {
		case err != nil:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "'Expiration time' claim ('exp') is too far in the future, or the JWT is invalid: " + err.Error()})
			return
		case claims.ExpiresAt.Sub(s.now()) > 10*time.Minute:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "'Expiration time' claim ('exp') is too far in the future"})
			return
		}
		s.minted++
		tok := fmt.Sprintf("ghs_fake%04d%s", s.minted, strings.Repeat("x", 28))
		login := app.Name + "[bot]"
		s.token[tok], s.bots[login] = login, true
		exp := s.now().Add(time.Hour)
		if s.expires == nil {
			s.expires = map[string]time.Time{}
		}
		s.expires[tok] = exp
		writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": exp.UTC().Format(time.RFC3339)})
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

// SetForeign makes issue n of repository fullName ("owner/repo", another
// than the fake's own) readable, in state (open, closed) with reason
// (completed, not_planned, "").
func (s *Server) SetForeign(fullName string, n int, state, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.foreign == nil {
		s.foreign = map[string]map[int]*Issue{}
	}
	key := strings.ToLower(fullName)
	if s.foreign[key] == nil {
		s.foreign[key] = map[int]*Issue{}
	}
	s.foreign[key][n] = &Issue{Number: n, Title: fmt.Sprintf("%s#%d", fullName, n), Author: "someone", State: state, StateReason: reason, CreatedAt: s.now()}
}

var foreignIssue = lazy.Regexp(`^/repos/([^/]+)/([^/]+)/issues/(\d+)$`)

// serveForeign answers a GET of another repository's issue; s.mu is held.
func (s *Server) serveForeign(c *call) bool {
	m := foreignIssue().FindStringSubmatch(c.r.URL.EscapedPath())
	if m == nil || c.r.Method != http.MethodGet {
		return false
	}
	n, _ := strconv.Atoi(m[3])
	is := s.foreign[strings.ToLower(c.args[0]+"/"+c.args[1])][n]
	if is == nil {
		return false
	}
	gi := s.issueJSON(is)
	gi.HTMLURL = github.Ptr(fmt.Sprintf("https://github.example/%s/%s/issues/%d", c.args[0], c.args[1], n))
	c.json(http.StatusOK, gi)
	return true
}

// RefuseViewer makes GraphQL's viewer query answer an error, so a
// client must learn its identity another way.
func (s *Server) RefuseViewer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noViewer = true
}

// SetCIRules sets how the CI callback's checks appear.
func (s *Server) SetCIRules(r CIRules) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ciRules = r
}

// AddLabel creates a repository label directly.
func (s *Server) AddLabel(l Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels = append(s.labels, l)
}

// Labels returns the repository's labels.
func (s *Server) Labels() []Label {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Label(nil), s.labels...)
}

// SetCI sets the callback that gives each commit's check runs and
// statuses (read at every request). nil means none.
func (s *Server) SetCI(f func(sha string) ([]CheckRun, []Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ci = f
}

// OnMerge sets a callback run at the start of every merge request, before
// the head is checked (e.g. to push to the branch and provoke a 409).
func (s *Server) OnMerge(f func(pr int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onMerge = f
}

// OnApprovalRefusal sets a callback run when a merge is refused for want of
// an approving review, before the refusal is answered: a test that approves
// there approves after the refusal and before the queue can look again, with
// no race against the refusal's own check (as approving at OnMerge had).
func (s *Server) OnApprovalRefusal(f func(pr int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRefused = f
}

// OnComment sets a callback run after each comment posted through the API
// is stored (the fake's lock released), so a test can wait for a comment as
// an event instead of polling the fake.
func (s *Server) OnComment(f func(n int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onComment = f
}

// AddFault injects a fault.
func (s *Server) AddFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Times == 0 {
		f.Times = 1
	}
	s.faults = append(s.faults, &f)
}

// FaultsServed is how many requests got a fault.
func (s *Server) FaultsServed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// NewIssue opens an issue by author with labels, each applied by
// labeledBy (author when ""), and returns its number.
func (s *Server) NewIssue(author, title, body string, labels []string, labeledBy string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if labeledBy == "" {
		labeledBy = author
	}
	is := &Issue{Number: s.nextNum, Title: title, Body: body, Author: author, State: "open", CreatedAt: s.now()}
	s.nextNum++
	s.issues[is.Number] = is
	for _, l := range labels {
		s.addLabel(is, l, labeledBy)
	}
	return is.Number
}

// LabelIssue applies label to issue n as actor.
func (s *Server) LabelIssue(n int, label, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[n]; is != nil {
		s.addLabel(is, label, actor)
	}
}

// UnlabelIssue removes label from issue n as actor.
func (s *Server) UnlabelIssue(n int, label, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[n]; is != nil {
		s.removeLabel(is, label, actor)
	}
}

// CommentOn posts a comment as author.
func (s *Server) CommentOn(n int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[n]
	if is == nil {
		return 0
	}
	c := Comment{ID: s.id(), Author: author, Body: body, CreatedAt: s.now()}
	is.Comments = append(is.Comments, c)
	is.UpdatedAt = s.now()
	return c.ID
}

// CloseIssue closes issue n with reason (completed, not_planned).
func (s *Server) CloseIssue(n int, reason, actor string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[n]; is != nil {
		s.closeIssue(is, reason, actor)
	}
}

// ClosePull closes pull request n without merging it.
func (s *Server) ClosePull(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pulls[n]; p != nil && !p.Merged {
		p.State = "closed"
		s.issues[n].State = "closed"
	}
}

// DeleteIssue makes issue n vanish (404 from then on).
func (s *Server) DeleteIssue(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[n]; is != nil {
		is.Deleted = true
	}
}

// Issue returns a copy of issue (or pull request) n.
func (s *Server) Issue(n int) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[n]
	if is == nil {
		return Issue{}, false
	}
	c := *is
	c.Labels = append([]string(nil), is.Labels...)
	c.Comments = append([]Comment(nil), is.Comments...)
	c.Events = append([]Event(nil), is.Events...)
	return c, true
}

// Pulls returns copies of every pull request, by number.
func (s *Server) Pulls() []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pull
	for _, n := range sortedNums(s.pulls) {
		out = append(out, *s.pulls[n])
	}
	return out
}

func sortedNums[V any](m map[int]V) []int {
	ns := make([]int, 0, len(m))
	for n := range m {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func (s *Server) addLabel(is *Issue, name, actor string) {
	l := s.label(name)
	if l == nil {
		s.labels = append(s.labels, Label{Name: name, Color: "ededed"})
		l = &s.labels[len(s.labels)-1]
	}
	for _, have := range is.Labels {
		if strings.EqualFold(have, name) {
			return
		}
	}
	is.Labels = append(is.Labels, l.Name)
	is.Events = append(is.Events, Event{ID: s.id(), Event: "labeled", Actor: actor, Label: l.Name, CreatedAt: s.now()})
	is.UpdatedAt = s.now()
}

func (s *Server) removeLabel(is *Issue, name, actor string) bool {
	for i, have := range is.Labels {
		if strings.EqualFold(have, name) {
			is.Labels = append(is.Labels[:i:i], is.Labels[i+1:]...)
			is.Events = append(is.Events, Event{ID: s.id(), Event: "unlabeled", Actor: actor, Label: have, CreatedAt: s.now()})
			is.UpdatedAt = s.now()
			return true
		}
	}
	return false
}

func (s *Server) closeIssue(is *Issue, reason, actor string) {
	if is.State == "closed" {
		return
	}
	is.State, is.StateReason = "closed", reason
	is.Events = append(is.Events, Event{ID: s.id(), Event: "closed", Actor: actor, CreatedAt: s.now()})
	is.UpdatedAt = s.now()
}

func (s *Server) label(name string) *Label {
	for i := range s.labels {
		if strings.EqualFold(s.labels[i].Name, name) {
			return &s.labels[i]
		}
	}
	return nil
}

// serve applies faults, authenticates, routes, answers a conditional
// GET whose ETag still holds with 304, and counts the request against the
// token's rate limit (a 304 is not counted, as on GitHub).
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	s.mu.Lock()
	login := s.token[tokenOf(r)]
	now := s.now()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.EscapedPath(), Login: login, Body: string(body), At: now})
	idx := len(s.reqs) - 1
	f := s.fault(r)
	s.mu.Unlock()
	rec := httptest.NewRecorder()
	var delay time.Duration
	switch {
	case f == nil:
		s.route(rec, r, login)
	case f.RateLimit:
		s.mu.Lock()
		rec.Header().Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(f.Reset).Unix(), 10))
		s.mu.Unlock()
		writeJSON(rec, http.StatusForbidden, map[string]string{"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"})
	case f.Secondary:
		doc := f.DocURL
		if doc == "" {
			doc = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
		}
		// Retry-After only when the fault has one: GitHub often sends
		// none, with X-RateLimit-Remaining well above 0.
		if f.RetryAfter > 0 {
			rec.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter/time.Second)))
		}
		writeJSON(rec, http.StatusForbidden, map[string]string{"message": MsgSecondary, "documentation_url": doc})
	case f.Lost:
		s.route(httptest.NewRecorder(), r, login)
		f.answer(rec)
	case f.Drop:
		s.route(rec, r, login)
	case f.Status != 0:
		f.answer(rec)
	case f.Delay > 0:
		s.route(rec, r, login)
		delay = f.Delay
	}
	s.mu.Lock()
	s.conditional(rec, r)
	s.count(rec, r, login, f != nil && f.RateLimit)
	s.reqs[idx].Status = rec.Code
	s.reqs[idx].Counted = rec.Code != http.StatusNotModified && login != ""
	s.mu.Unlock()
	if f != nil && f.Drop {
		// net/http closes the connection without an answer (and logs
		// nothing).
		panic(http.ErrAbortHandler)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// conditional gives a successful GET its ETag and turns it into a 304
// without a body when the request's If-None-Match names that ETag.
// s.mu is held.
func (s *Server) conditional(rec *httptest.ResponseRecorder, r *http.Request) {
	if r.Method != http.MethodGet || rec.Code != http.StatusOK {
		return
	}
	h := sha256.New()
	h.Write([]byte(rec.Header().Get("Link")))
	h.Write(rec.Body.Bytes())
	etag := fmt.Sprintf(`W/"%x"`, h.Sum(nil)[:16])
	rec.Header().Set("ETag", etag)
	for _, m := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if strings.TrimSpace(m) == etag {
			rec.Code = http.StatusNotModified
			rec.Body.Reset()
			rec.Header().Del("Content-Type")
			return
		}
	}
}

// count books one request against login's hourly rate limit and sets the
// X-RateLimit headers, as GitHub does on every answer: a 304 is not
// counted; the window starts at the first counted request and resets an
// hour later. A primary rate-limit fault answers with 0 remaining.
// s.mu is held.
func (s *Server) count(rec *httptest.ResponseRecorder, r *http.Request, login string, limited bool) {
	if login == "" {
		return
	}
	resource := "core"
	if r.URL.Path == "/graphql" {
		resource = "graphql"
	}
	key := login + " " + resource
	rl := s.rate[key]
	now := s.now()
	if rl == nil || !now.Before(rl.reset) {
		rl = &rateWindow{reset: now.Add(time.Hour)}
		s.rate[key] = rl
	}
	if rec.Code != http.StatusNotModified {
		rl.used++
		s.counted[resource]++
	}
	limit := s.limit
	remaining := max(limit-rl.used, 0)
	if limited {
		remaining = 0
	}
	rec.Header().Set("X-RateLimit-Limit", strconv.Itoa(limit))
	rec.Header().Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	rec.Header().Set("X-RateLimit-Used", strconv.Itoa(rl.used))
	rec.Header().Set("X-RateLimit-Resource", resource)
	if rec.Header().Get("X-RateLimit-Reset") == "" {
		rec.Header().Set("X-RateLimit-Reset", strconv.FormatInt(rl.reset.Unix(), 10))
	}
}

// rateWindow is one token's hour of counted requests.
type rateWindow struct {
	used  int
	reset time.Time
}

// SetRateLimit sets the requests an hour each token is allowed (default
// 5000; Actions' GITHUB_TOKEN has 1000 per repository).
func (s *Server) SetRateLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = n
}

// Counted is how many requests of resource ("core" for REST, "graphql")
// counted against the rate limit so far: every authenticated request but
// a 304 answer to a conditional one.
func (s *Server) Counted(resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counted[resource]
}

// answer writes a Status fault's answer.
func (f *Fault) answer(w http.ResponseWriter) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter/time.Second)))
	}
	if f.Body != nil {
		writeJSON(w, f.Status, f.Body)
		return
	}
	msg := f.Message
	if msg == "" {
		msg = "injected fault"
	}
	body := map[string]string{"message": msg}
	if f.DocURL != "" {
		body["documentation_url"] = f.DocURL
	}
	writeJSON(w, f.Status, body)
}

func tokenOf(r *http.Request) string {
	a := r.Header.Get("Authorization")
	for _, p := range []string{"Bearer ", "token ", "bearer "} {
		if t, ok := strings.CutPrefix(a, p); ok {
			return t
		}
	}
	return ""
}

// fault returns the fault for r, if any; s.mu is held.
func (s *Server) fault(r *http.Request) *Fault {
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method || !pathMatches(r.URL.Path, f.Path) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		s.served++
		return f
	}
	return nil
}

func pathMatches(path, want string) bool {
	if w, ok := strings.CutSuffix(want, "$"); ok {
		return strings.HasSuffix(path, w)
	}
	return strings.Contains(path, want)
}

// route is one endpoint of the fake: its method, its path and its handler.
type route struct {
	method string
	re     *regexp.Regexp
	h      func(s *Server, c *call)
}

// routes are compiled at the first request, not at init (see accessTokens).
var routes = sync.OnceValue(func() []route {
	return []route{
		{"GET", regexp.MustCompile(`^/user$`), (*Server).getUser},
		{"POST", regexp.MustCompile(`^/graphql$`), (*Server).graphql},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)$`), (*Server).getRepo},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/labels$`), (*Server).listLabels},
		{"POST", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/labels$`), (*Server).createLabel},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues$`), (*Server).listIssues},
		{"POST", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues$`), (*Server).createIssue},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)$`), (*Server).getIssue},
		{"PATCH", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)$`), (*Server).editIssue},
		{"POST", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/labels$`), (*Server).addLabels},
		{"DELETE", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/labels/([^/]+)$`), (*Server).deleteLabel},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/events$`), (*Server).listEvents},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$`), (*Server).listComments},
		{"POST", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$`), (*Server).createComment},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/collaborators/([^/]+)/permission$`), (*Server).permission},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls$`), (*Server).listPulls},
		{"POST", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls$`), (*Server).createPull},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)$`), (*Server).getPull},
		{"PATCH", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)$`), (*Server).editPull},
		{"PUT", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)/merge$`), (*Server).mergePull},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)/reviews$`), (*Server).listReviews},
		{"PUT", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/pulls/(\d+)/update-branch$`), (*Server).updateBranch},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/compare/([^/]+)$`), (*Server).compare},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/git/ref/heads/(.+)$`), (*Server).getRef},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/commits/([^/]+)/check-runs$`), (*Server).checkRuns},
		{"GET", regexp.MustCompile(`^/repos/([^/]+)/([^/]+)/commits/([^/]+)/statuses$`), (*Server).statuses},
	}
})

// call is one routed request.
type call struct {
	w     http.ResponseWriter
	r     *http.Request
	login string
	args  []string // path parameters, unescaped
	num   int      // the issue/pull number when the route has one
}

func (c *call) json(code int, v any) { writeJSON(c.w, code, v) }

func (c *call) fail(code int, msg string) { writeJSON(c.w, code, map[string]string{"message": msg}) }

// route matches the escaped path segment by segment, as GitHub does: an
// unescaped "/" in a label name makes another path, a "#" ends it.
func (s *Server) route(w http.ResponseWriter, r *http.Request, login string) {
	if m := accessTokens().FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.mintToken(w, r, m[1])
		return
	}
	s.mu.Lock()
	expired := login != "" && !s.expires[tokenOf(r)].IsZero() && !s.now().Before(s.expires[tokenOf(r)])
	s.mu.Unlock()
	if expired {
		// An installation token an hour old: GitHub answers 401.
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if login == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	path := r.URL.EscapedPath()
	for _, rt := range routes() {
		m := rt.re.FindStringSubmatch(path)
		if m == nil || rt.method != r.Method {
			continue
		}
		c := &call{w: w, r: r, login: login}
		for _, a := range m[1:] {
			u, err := url.PathUnescape(a)
			if err != nil {
				c.fail(http.StatusBadRequest, "bad path")
				return
			}
			c.args = append(c.args, u)
		}
		if len(c.args) >= 2 && (c.args[0] != s.opt.Owner || c.args[1] != s.opt.Repo) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if !s.serveForeign(c) {
				c.fail(http.StatusNotFound, "Not Found")
			}
			return
		}
		if len(c.args) >= 3 {
			c.num, _ = strconv.Atoi(c.args[2])
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		rt.h(s, c)
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// paginate slices n items for the request's page and per_page and sets
// the Link header.
func (s *Server) paginate(c *call, n int) (lo, hi int) {
	q := c.r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, s.opt.MaxPerPage)
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	last := max((n+per-1)/per, 1)
	link := func(p int, rel string) string {
		v := c.r.URL.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.srv.URL, c.r.URL.Path, v.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	return lo, hi
}

func ts(t time.Time) *github.Timestamp { return &github.Timestamp{Time: t} }

// user is login as GitHub shows an author or actor: type Bot for apps.
func (s *Server) user(login string) *github.User {
	typ := "User"
	if s.bots[login] {
		typ = "Bot"
	}
	return &github.User{Login: github.Ptr(login), Type: github.Ptr(typ)}
}

func (s *Server) htmlURL(kind string, n int) string {
	return fmt.Sprintf("https://github.example/%s/%s/%s/%d", s.opt.Owner, s.opt.Repo, kind, n)
}

func (s *Server) issueJSON(is *Issue) *github.Issue {
	gi := &github.Issue{
		Number: github.Ptr(is.Number), Title: github.Ptr(is.Title), Body: github.Ptr(is.Body),
		User: s.user(is.Author), State: github.Ptr(is.State), CreatedAt: ts(is.CreatedAt), UpdatedAt: ts(updated(is)),
		HTMLURL: github.Ptr(s.htmlURL("issues", is.Number)),
	}
	if is.StateReason != "" {
		gi.StateReason = github.Ptr(is.StateReason)
	}
	for _, l := range is.Labels {
		gi.Labels = append(gi.Labels, &github.Label{Name: github.Ptr(l)})
	}
	if is.IsPR {
		gi.PullRequestLinks = &github.PullRequestLinks{URL: github.Ptr(s.htmlURL("pull", is.Number))}
		if p := s.pulls[is.Number]; p != nil && p.Merged {
			gi.PullRequestLinks.MergedAt = ts(p.MergedAt)
		}
	}
	return gi
}

// updated is when is last changed (its creation if never since).
func updated(is *Issue) time.Time {
	if is.UpdatedAt.IsZero() {
		return is.CreatedAt
	}
	return is.UpdatedAt
}

func (s *Server) getUser(c *call) {
	if s.bots[c.login] {
		c.json(http.StatusForbidden, map[string]string{"message": MsgNotAccessible, "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user", "status": "403"})
		return
	}
	c.json(http.StatusOK, s.user(c.login))
}

func (s *Server) getRepo(c *call) {
	r := &github.Repository{
		Name: github.Ptr(s.opt.Repo), FullName: github.Ptr(s.opt.Owner + "/" + s.opt.Repo),
		DefaultBranch: github.Ptr(s.opt.DefaultBranch), Owner: &github.User{Login: github.Ptr(s.opt.Owner)},
	}
	// The merge settings are shown only to who may push (GitHub leaves
	// them out for readers).
	if s.bots[c.login] || writer(s.users[c.login]) {
		m := s.methods()
		r.AllowMergeCommit, r.AllowSquashMerge, r.AllowRebaseMerge = github.Ptr(m["merge"]), github.Ptr(m["squash"]), github.Ptr(m["rebase"])
	}
	c.json(http.StatusOK, r)
}

func writer(perm string) bool { return perm == "admin" || perm == "maintain" || perm == "write" }

// methods are the merge methods the repository allows (all by default).
func (s *Server) methods() map[string]bool {
	if s.allowed == nil {
		return map[string]bool{"merge": true, "squash": true, "rebase": true}
	}
	return s.allowed
}

// SetMergeMethods sets which merge methods the repository allows
// (allow_merge_commit, allow_squash_merge, allow_rebase_merge); a merge
// with another answers 405 as GitHub does.
func (s *Server) SetMergeMethods(merge, squash, rebase bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allowed = map[string]bool{"merge": merge, "squash": squash, "rebase": rebase}
}

// RequireApprovals makes branch protection on the base require n
// approving reviews (by users with write access, not the author) before a
// merge: fewer answer 405 MsgApprovalRequired.
func (s *Server) RequireApprovals(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.approvals = n
}

// Review adds a review of pull request pr by login, in state (APPROVED,
// CHANGES_REQUESTED, COMMENTED).
func (s *Server) Review(pr int, login, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pulls[pr]; p != nil {
		p.Reviews = append(p.Reviews, PullReview{ID: s.id(), User: login, State: state, CommitID: s.headSHA(p), SubmittedAt: s.now()})
	}
}

// approved counts the users with write access (the author aside) whose
// latest review of p approves it.
func (s *Server) approved(p *Pull) int {
	last := map[string]string{}
	for _, r := range p.Reviews {
		if r.State == "APPROVED" || r.State == "CHANGES_REQUESTED" || r.State == "DISMISSED" {
			last[r.User] = r.State
		}
	}
	n := 0
	for u, st := range last {
		if st == "APPROVED" && u != p.Author && writer(s.users[u]) {
			n++
		}
	}
	return n
}

func (s *Server) listReviews(c *call) {
	p := s.pull(c)
	if p == nil {
		return
	}
	lo, hi := s.paginate(c, len(p.Reviews))
	out := []*github.PullRequestReview{}
	for _, r := range p.Reviews[lo:hi] {
		out = append(out, &github.PullRequestReview{ID: github.Ptr(r.ID), User: s.user(r.User), State: github.Ptr(r.State), CommitID: github.Ptr(r.CommitID), SubmittedAt: ts(r.SubmittedAt)})
	}
	c.json(http.StatusOK, out)
}

func (s *Server) listLabels(c *call) {
	lo, hi := s.paginate(c, len(s.labels))
	out := []*github.Label{}
	for _, l := range s.labels[lo:hi] {
		out = append(out, &github.Label{Name: github.Ptr(l.Name), Color: github.Ptr(l.Color), Description: github.Ptr(l.Description)})
	}
	c.json(http.StatusOK, out)
}

func (s *Server) createLabel(c *call) {
	var in github.Label
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil || in.GetName() == "" {
		c.fail(http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	if s.label(in.GetName()) != nil {
		writeJSON(c.w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]string{{"resource": "Label", "code": "already_exists", "field": "name"}}})
		return
	}
	s.labels = append(s.labels, Label{Name: in.GetName(), Color: in.GetColor(), Description: in.GetDescription()})
	c.json(http.StatusCreated, &in)
}

func (s *Server) issue(c *call) *Issue {
	is := s.issues[c.num]
	switch {
	case is == nil || is.Deleted || (is.MovedTo != "" && !is.movedReadable):
		// A transfer to a repository the token cannot read looks like
		// a deletion.
		c.fail(http.StatusNotFound, "Not Found")
		return nil
	case is.MovedTo != "":
		// GitHub redirects every request about a transferred issue to
		// its new place, by repository id.
		loc := fmt.Sprintf("%s/repositories/%d/issues/%d", s.srv.URL, is.movedRepoID, is.Number)
		c.w.Header().Set("Location", loc)
		writeJSON(c.w, http.StatusMovedPermanently, map[string]string{"message": "Moved Permanently", "url": loc, "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue"})
		return nil
	}
	return is
}

// TransferIssue moves issue n to repository to ("owner/name"): from then
// on every request about it answers 301 to its new place when the token
// can read to (readable), else 404; it leaves the repository's lists.
func (s *Server) TransferIssue(n int, to string, readable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[n]; is != nil {
		is.MovedTo, is.movedReadable, is.movedRepoID = to, readable, 900000+n
	}
}

func (s *Server) listIssues(c *call) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		want = strings.Split(l, ",")
	}
	var list []*Issue
	for _, n := range sortedNums(s.issues) {
		is := s.issues[n]
		if is.Deleted || is.MovedTo != "" || (state != "all" && is.State != state) {
			continue
		}
		ok := true
		for _, w := range want {
			has := false
			for _, l := range is.Labels {
				has = has || strings.EqualFold(l, strings.TrimSpace(w))
			}
			ok = ok && has
		}
		if ok {
			list = append(list, is)
		}
	}
	desc := q.Get("direction") != "asc"
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt) != desc
		}
		return (a.Number < b.Number) != desc
	})
	lo, hi := s.paginate(c, len(list))
	out := []*github.Issue{}
	for _, is := range list[lo:hi] {
		out = append(out, s.issueJSON(is))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) getIssue(c *call) {
	if is := s.issue(c); is != nil {
		c.json(http.StatusOK, s.issueJSON(is))
	}
}

func (s *Server) editIssue(c *call) {
	is := s.issue(c)
	if is == nil {
		return
	}
	var in github.IssueRequest
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	is.UpdatedAt = s.now()
	if in.Title != nil {
		is.Title = *in.Title
	}
	if in.Body != nil {
		is.Body = *in.Body
	}
	switch in.GetState() {
	case "closed":
		reason := in.GetStateReason()
		if reason == "" {
			reason = "completed"
		}
		s.closeIssue(is, reason, c.login)
	case "open":
		is.State, is.StateReason = "open", "reopened"
	}
	c.json(http.StatusOK, s.issueJSON(is))
}

func (s *Server) addLabels(c *call) {
	is := s.issue(c)
	if is == nil {
		return
	}
	raw, _ := io.ReadAll(c.r.Body)
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			c.fail(http.StatusBadRequest, "Problems parsing JSON")
			return
		}
		names = obj.Labels
	}
	for _, n := range names {
		s.addLabel(is, n, c.login)
	}
	out := []*github.Label{}
	for _, l := range is.Labels {
		out = append(out, &github.Label{Name: github.Ptr(l)})
	}
	c.json(http.StatusOK, out)
}

func (s *Server) deleteLabel(c *call) {
	is := s.issue(c)
	if is == nil {
		return
	}
	if !s.removeLabel(is, c.args[3], c.login) {
		c.fail(http.StatusNotFound, "Label does not exist")
		return
	}
	out := []*github.Label{}
	for _, l := range is.Labels {
		out = append(out, &github.Label{Name: github.Ptr(l)})
	}
	c.json(http.StatusOK, out)
}

func (s *Server) listEvents(c *call) {
	is := s.issue(c)
	if is == nil {
		return
	}
	lo, hi := s.paginate(c, len(is.Events))
	out := []*github.IssueEvent{}
	for _, e := range is.Events[lo:hi] {
		ge := &github.IssueEvent{ID: github.Ptr(e.ID), Event: github.Ptr(e.Event), Actor: s.user(e.Actor), CreatedAt: ts(e.CreatedAt)}
		if e.Label != "" {
			ge.Label = &github.Label{Name: github.Ptr(e.Label)}
		}
		out = append(out, ge)
	}
	c.json(http.StatusOK, out)
}

func (s *Server) commentJSON(cm Comment) *github.IssueComment {
	return &github.IssueComment{ID: github.Ptr(cm.ID), Body: github.Ptr(cm.Body), User: s.user(cm.Author), CreatedAt: ts(cm.CreatedAt)}
}

func (s *Server) listComments(c *call) {
	is := s.issue(c)
	if is == nil {
		return
	}
	lo, hi := s.paginate(c, len(is.Comments))
	out := []*github.IssueComment{}
	for _, cm := range is.Comments[lo:hi] {
		out = append(out, s.commentJSON(cm))
	}
	c.json(http.StatusOK, out)
}

// createIssue opens an issue as GitHub does (POST /repos/{o}/{r}/issues):
// a title is required (422 otherwise); labels are set only when the caller
// has push access, and silently dropped otherwise; 201 with the issue.
func (s *Server) createIssue(c *call) {
	var in github.IssueRequest
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil || strings.TrimSpace(in.GetTitle()) == "" {
		c.fail(http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	is := &Issue{Number: s.nextNum, Title: in.GetTitle(), Body: in.GetBody(), Author: c.login, State: "open", CreatedAt: s.now(), UpdatedAt: s.now()}
	s.nextNum++
	s.issues[is.Number] = is
	if in.Labels != nil && (writer(s.users[c.login]) || s.bots[c.login]) {
		for _, l := range *in.Labels {
			s.addLabel(is, l, c.login)
		}
	}
	c.json(http.StatusCreated, s.issueJSON(is))
}

func (s *Server) createComment(c *call) {
	is := s.issue(c)
	if is == nil {
		return
	}
	var in github.IssueComment
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil || in.GetBody() == "" {
		c.fail(http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	cm := Comment{ID: s.id(), Author: c.login, Body: in.GetBody(), CreatedAt: s.now()}
	is.Comments = append(is.Comments, cm)
	is.UpdatedAt = s.now()
	s.callUnlocked(s.onComment, is.Number)
	c.json(http.StatusCreated, s.commentJSON(cm))
}

func (s *Server) permission(c *call) {
	user := c.args[2]
	if s.bots[user] {
		// Apps are not collaborators: GitHub knows no permission for them.
		c.fail(http.StatusNotFound, user+" is not a user")
		return
	}
	perm, ok := s.users[user]
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	legacy := perm
	switch perm {
	case "maintain":
		legacy = "write"
	case "triage":
		legacy = "read"
	}
	c.json(http.StatusOK, &github.RepositoryPermissionLevel{Permission: github.Ptr(legacy), RoleName: github.Ptr(perm), User: &github.User{Login: github.Ptr(user)}})
}

// headSHA reads the pull request's head from origin (live), keeping the
// last one seen when the branch is gone.
func (s *Server) headSHA(p *Pull) string {
	if sha, err := s.tip(context.Background(), p.Head); err == nil {
		p.headSHA = sha
	}
	if _, ok := s.seen[p.headSHA]; !ok && p.headSHA != "" {
		s.seen[p.headSHA] = s.now()
	}
	return p.headSHA
}

func (s *Server) pullJSON(p *Pull) *github.PullRequest {
	gp := &github.PullRequest{
		Number: github.Ptr(p.Number), NodeID: github.Ptr(p.NodeID), State: github.Ptr(p.State), Title: github.Ptr(p.Title),
		Body: github.Ptr(p.Body), Draft: github.Ptr(p.Draft), Merged: github.Ptr(p.Merged),
		HTMLURL: github.Ptr(s.htmlURL("pull", p.Number)), User: s.user(p.Author),
		Head: &github.PullRequestBranch{Ref: github.Ptr(p.Head), SHA: github.Ptr(s.headSHA(p)), Label: github.Ptr(s.opt.Owner + ":" + p.Head)},
		Base: &github.PullRequestBranch{Ref: github.Ptr(p.Base)},
	}
	if p.Merged {
		gp.MergedAt = ts(p.MergedAt)
		gp.MergeCommitSHA = github.Ptr(p.MergeSHA)
	}
	return gp
}

func (s *Server) listPulls(c *call) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	var list []*Pull
	for _, n := range sortedNums(s.pulls) {
		p := s.pulls[n]
		if s.issues[n].Deleted || (state != "all" && p.State != state) {
			continue
		}
		if head != "" && head != s.opt.Owner+":"+p.Head {
			continue
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		list = append(list, p)
	}
	if q.Get("direction") != "asc" {
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	}
	lo, hi := s.paginate(c, len(list))
	out := []*github.PullRequest{}
	for _, p := range list[lo:hi] {
		out = append(out, s.pullJSON(p))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) createPull(c *call) {
	var in github.NewPullRequest
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	head := strings.TrimPrefix(in.GetHead(), s.opt.Owner+":")
	invalid := func(msg string) {
		writeJSON(c.w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]string{{"resource": "PullRequest", "code": "custom", "message": msg}}})
	}
	ctx := context.Background()
	if _, err := s.tip(ctx, head); err != nil {
		c.json(http.StatusUnprocessableEntity, HeadInvalid)
		return
	}
	if _, err := s.tip(ctx, in.GetBase()); err != nil {
		invalid("base invalid: " + in.GetBase())
		return
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == head && p.Base == in.GetBase() {
			invalid(fmt.Sprintf("A pull request already exists for %s:%s.", s.opt.Owner, head))
			return
		}
	}
	n := s.nextNum
	s.nextNum++
	s.issues[n] = &Issue{Number: n, Title: in.GetTitle(), Body: in.GetBody(), Author: c.login, State: "open", IsPR: true, CreatedAt: s.now()}
	p := &Pull{Number: n, Title: in.GetTitle(), Body: in.GetBody(), Head: head, Base: in.GetBase(), Draft: in.GetDraft(), State: "open", NodeID: fmt.Sprintf("PR_node%d", n), Author: c.login}
	if !p.Draft {
		p.readyAt = s.now()
	}
	s.pulls[n] = p
	c.json(http.StatusCreated, s.pullJSON(p))
}

func (s *Server) pull(c *call) *Pull {
	p := s.pulls[c.num]
	if p == nil || s.issues[c.num].Deleted {
		c.fail(http.StatusNotFound, "Not Found")
		return nil
	}
	return p
}

func (s *Server) getPull(c *call) {
	if p := s.pull(c); p != nil {
		c.json(http.StatusOK, s.pullJSON(p))
	}
}

// editPull changes a pull request's state (closed, or open again), title
// or body.
func (s *Server) editPull(c *call) {
	p := s.pull(c)
	if p == nil {
		return
	}
	var in struct {
		State *string `json:"state"`
		Title *string `json:"title"`
		Body  *string `json:"body"`
	}
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.State != nil && !p.Merged {
		p.State = *in.State
		s.issues[p.Number].State = *in.State
		s.issues[p.Number].UpdatedAt = s.now()
	}
	c.json(http.StatusOK, s.pullJSON(p))
}

var closes = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s+#(\d+)`)

// callUnlocked runs a test's hook without the fake's lock, so that the
// hook may call the fake itself.
func (s *Server) callUnlocked(f func(pr int), pr int) {
	if f == nil {
		return
	}
	s.mu.Unlock()
	f(pr)
	s.mu.Lock()
}

func (s *Server) mergePull(c *call) {
	s.callUnlocked(s.onMerge, c.num)
	p := s.pull(c)
	if p == nil {
		return
	}
	var in struct {
		SHA         string `json:"sha"`
		MergeMethod string `json:"merge_method"`
		CommitTitle string `json:"commit_title"`
	}
	_ = json.NewDecoder(c.r.Body).Decode(&in)
	switch {
	case p.Merged || p.State != "open":
		c.fail(http.StatusMethodNotAllowed, "Pull Request is not open")
		return
	case p.Draft:
		c.fail(http.StatusMethodNotAllowed, "Pull Request is still a draft")
		return
	case s.mergeQueue && p.Base == s.opt.DefaultBranch:
		c.fail(http.StatusMethodNotAllowed, MsgMergeQueue)
		return
	case s.approvals > 0 && p.Base == s.opt.DefaultBranch && s.approved(p) < s.approvals:
		s.callUnlocked(s.onRefused, p.Number)
		c.fail(http.StatusMethodNotAllowed, fmt.Sprintf(MsgApprovalRequired, s.approvals))
		return
	}
	method := in.MergeMethod
	if method == "" {
		method = "merge"
	}
	if !s.methods()[method] {
		c.fail(http.StatusMethodNotAllowed, MsgMethodRefused[method])
		return
	}
	ctx := context.Background()
	head := s.headSHA(p)
	if in.SHA != "" && in.SHA != head {
		c.fail(http.StatusConflict, MsgHeadModified)
		return
	}
	base, err := s.tip(ctx, p.Base)
	if err != nil {
		c.fail(http.StatusUnprocessableEntity, "base branch is gone")
		return
	}
	tree, conflicts, err := s.mergeTree(ctx, base, head)
	if err != nil || len(conflicts) > 0 {
		c.fail(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
		return
	}
	title := in.CommitTitle
	parents := []string{base, head}
	switch in.MergeMethod {
	case "squash", "rebase":
		parents = []string{base}
		if title == "" {
			title = fmt.Sprintf("%s (#%d)", p.Title, p.Number)
		}
	default:
		if title == "" {
			title = fmt.Sprintf("Merge pull request #%d from %s/%s", p.Number, s.opt.Owner, p.Head)
		}
	}
	sha, err := s.commitObject(ctx, tree, parents, title)
	if err == nil {
		err = s.moveRef(ctx, "refs/heads/"+p.Base, sha, base)
	}
	if err != nil {
		// Another merge moved the base between our read and our write.
		c.fail(http.StatusMethodNotAllowed, MsgBaseModified)
		return
	}
	s.merged(p, sha, c.login)
	c.json(http.StatusOK, &github.PullRequestMergeResult{SHA: github.Ptr(sha), Merged: github.Ptr(true), Message: github.Ptr("Pull Request successfully merged")})
}

// merged books pull request p merged as sha by login, and closes the
// issues its body closes (on the default branch).
func (s *Server) merged(p *Pull, sha, login string) {
	p.Merged, p.State, p.MergeSHA, p.MergedAt = true, "closed", sha, s.now()
	s.issues[p.Number].State = "closed"
	if p.Base == s.opt.DefaultBranch {
		for _, m := range closes.FindAllStringSubmatch(p.Body, -1) {
			n, _ := strconv.Atoi(m[1])
			if is := s.issues[n]; is != nil && !is.IsPR && !is.Deleted {
				s.closeIssue(is, "completed", login)
				is.closedByPull = p.Number
			}
		}
	}
}

// SetMergeQueue makes the default branch take changes only through its
// merge queue: a merge answers 405 MsgMergeQueue; GraphQL's
// enqueuePullRequest (with the expected head oid) queues the pull
// request, whose merge group (the base with the head merged in) is a
// commit CI reports on like any; green, the base moves to it and the pull
// request is merged; red, it is removed from the queue (a
// RemovedFromMergeQueueEvent with reason "failed status checks").
func (s *Server) SetMergeQueue(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mergeQueue = on
}

// queueEntry is a pull request in the merge queue.
type queueEntry struct {
	group, base string // the merge group's commit, and the base it was made on
	login       string
}

// enqueue answers GraphQL's enqueuePullRequest; s.mu is held.
func (s *Server) enqueue(c *call, vars map[string]any) {
	id, _ := vars["id"].(string)
	oid, _ := vars["oid"].(string)
	for _, p := range s.pulls {
		if p.NodeID != id || s.issues[p.Number].Deleted {
			continue
		}
		head := s.headSHA(p)
		switch {
		case p.State != "open" || p.Merged:
			c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "UNPROCESSABLE", "message": "Pull request is not open"}}})
		case oid != "" && oid != head:
			c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "UNPROCESSABLE", "message": "Expected head oid " + oid + " does not match the pull request's head " + head}}})
		default:
			if s.queue == nil {
				s.queue = map[int]*queueEntry{}
			}
			if s.queue[p.Number] == nil {
				s.queue[p.Number] = &queueEntry{login: c.login}
			}
			c.json(http.StatusOK, map[string]any{"data": map[string]any{"enqueuePullRequest": map[string]any{"mergeQueueEntry": map[string]any{"state": "QUEUED"}}}})
		}
		return
	}
	c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "NOT_FOUND", "message": "Could not resolve to a node with the global id of '" + id + "'"}}})
}

// advanceQueue moves pull request p through the merge queue, as GitHub
// does in the background: a merge group on the current base, its checks,
// then merged or removed. s.mu is held.
func (s *Server) advanceQueue(p *Pull) {
	e := s.queue[p.Number]
	if e == nil {
		return
	}
	ctx := context.Background()
	base, err := s.tip(ctx, p.Base)
	if err != nil {
		return
	}
	if e.group == "" || e.base != base {
		tree, conflicts, err := s.mergeTree(ctx, base, s.headSHA(p))
		if err != nil || len(conflicts) > 0 {
			s.dequeue(p, "merge conflict")
			return
		}
		sha, err := s.commitObject(ctx, tree, []string{base, s.headSHA(p)}, fmt.Sprintf("Merge pull request #%d from %s/%s", p.Number, s.opt.Owner, p.Head))
		if err != nil {
			return
		}
		e.group, e.base = sha, base
		s.seen[sha] = s.now()
	}
	runs, sts := s.ciFor(e.group)
	var cs []CheckRun
	cs = append(cs, runs...)
	for _, st := range sts {
		cr := CheckRun{Name: st.Context, Status: "completed", Conclusion: st.State}
		if st.State == "pending" {
			cr.Status, cr.Conclusion = "in_progress", ""
		}
		cs = append(cs, cr)
	}
	for _, r := range cs {
		switch {
		case r.Status != "completed":
			return // awaiting checks
		case r.Conclusion != "success" && r.Conclusion != "neutral" && r.Conclusion != "skipped":
			s.dequeue(p, "failed status checks")
			return
		}
	}
	if s.moveRef(ctx, "refs/heads/"+p.Base, e.group, base) != nil {
		return // the base moved: a new group next time
	}
	delete(s.queue, p.Number)
	s.merged(p, e.group, e.login)
}

func (s *Server) dequeue(p *Pull, reason string) {
	delete(s.queue, p.Number)
	p.Dequeued = append(p.Dequeued, reason)
}

// queueStatus answers a GraphQL query of a pull request's merge queue
// state; s.mu is held.
func (s *Server) queueStatus(c *call, vars map[string]any) {
	n := 0
	switch v := vars["number"].(type) {
	case float64:
		n = int(v)
	}
	p := s.pulls[n]
	if p == nil || s.issues[n].Deleted {
		c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "NOT_FOUND", "message": fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", n)}}})
		return
	}
	s.advanceQueue(p)
	var entry any
	if s.queue[p.Number] != nil {
		st := "QUEUED"
		if s.queue[p.Number].group != "" {
			st = "AWAITING_CHECKS"
		}
		entry = map[string]any{"state": st}
	}
	nodes := []any{}
	if k := len(p.Dequeued); k > 0 {
		nodes = append(nodes, map[string]any{"reason": p.Dequeued[k-1]})
	}
	c.json(http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"merged": p.Merged, "state": strings.ToUpper(p.State), "mergeQueueEntry": entry,
		"timelineItems": map[string]any{"totalCount": len(p.Dequeued), "nodes": nodes},
	}}}})
}

func (s *Server) ciFor(sha string) ([]CheckRun, []Status) {
	if s.ci == nil || !s.ciVisible(sha) {
		return nil, nil
	}
	s.mu.Unlock()
	defer s.mu.Lock()
	return s.ci(sha)
}

// ciVisible applies the CI rules: has CI reported on sha yet?
func (s *Server) ciVisible(sha string) bool {
	r := s.ciRules
	if !r.SkipDrafts && r.Delay == 0 {
		return true
	}
	from, ok := s.seen[sha]
	if !ok {
		return r.Delay == 0 && !r.SkipDrafts
	}
	if r.SkipDrafts {
		ready := false
		for _, p := range s.pulls {
			if p.headSHA == sha && !p.Draft {
				ready = true
				if p.readyAt.After(from) {
					from = p.readyAt
				}
			}
		}
		if !ready {
			return false
		}
	}
	return !s.now().Before(from.Add(r.Delay))
}

func (s *Server) checkRuns(c *call) {
	runs, _ := s.ciFor(c.args[2])
	lo, hi := s.paginate(c, len(runs))
	out := &github.ListCheckRunsResults{Total: github.Ptr(len(runs)), CheckRuns: []*github.CheckRun{}}
	for i, r := range runs[lo:hi] {
		cr := &github.CheckRun{ID: github.Ptr(int64(lo + i + 1)), Name: github.Ptr(r.Name), Status: github.Ptr(r.Status), HeadSHA: github.Ptr(c.args[2])}
		if r.Conclusion != "" {
			cr.Conclusion = github.Ptr(r.Conclusion)
		}
		if r.Title != "" {
			cr.Output = &github.CheckRunOutput{Title: github.Ptr(r.Title)}
		}
		if r.DetailsURL != "" {
			cr.DetailsURL = github.Ptr(r.DetailsURL)
		}
		out.CheckRuns = append(out.CheckRuns, cr)
	}
	c.json(http.StatusOK, out)
}

func (s *Server) statuses(c *call) {
	_, sts := s.ciFor(c.args[2])
	lo, hi := s.paginate(c, len(sts))
	out := []*github.RepoStatus{}
	for i, st := range sts[lo:hi] {
		out = append(out, &github.RepoStatus{ID: github.Ptr(int64(lo + i + 1)), Context: github.Ptr(st.Context), State: github.Ptr(st.State), Description: github.Ptr(st.Description)})
	}
	c.json(http.StatusOK, out)
}

func (s *Server) graphql(c *call) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(c.r.Body).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if strings.Contains(in.Query, "viewer") && !strings.Contains(in.Query, "mutation") {
		// GraphQL's viewer works for app installation tokens too.
		if s.noViewer {
			c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "FORBIDDEN", "message": MsgNotAccessible}}})
			return
		}
		c.json(http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]any{"login": c.login}}})
		return
	}
	switch {
	case strings.Contains(in.Query, "enqueuePullRequest"):
		s.enqueue(c, in.Variables)
		return
	case strings.Contains(in.Query, "mergeQueueEntry"):
		s.queueStatus(c, in.Variables)
		return
	}
	if !strings.Contains(in.Query, "markPullRequestReadyForReview") {
		c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"message": "the fake supports only viewer, markPullRequestReadyForReview, enqueuePullRequest and a pull request's mergeQueueEntry"}}})
		return
	}
	id, _ := in.Variables["id"].(string)
	for _, p := range s.pulls {
		if p.NodeID == id && !s.issues[p.Number].Deleted {
			if p.Draft {
				p.readyAt = s.now()
			}
			p.Draft = false
			c.json(http.StatusOK, map[string]any{"data": map[string]any{"markPullRequestReadyForReview": map[string]any{"pullRequest": map[string]any{"isDraft": false}}}})
			return
		}
	}
	c.json(http.StatusOK, map[string]any{"errors": []map[string]string{{"type": "NOT_FOUND", "message": "Could not resolve to a node with the global id of '" + id + "'"}}})
}

// updateBranch merges the base into the pull request's branch, as GitHub's
// update-branch does (asynchronously there; at once here), answering 202.
func (s *Server) updateBranch(c *call) {
	p := s.pull(c)
	if p == nil {
		return
	}
	var in struct {
		ExpectedHeadSHA string `json:"expected_head_sha"`
	}
	_ = json.NewDecoder(c.r.Body).Decode(&in)
	if p.State != "open" {
		c.fail(http.StatusUnprocessableEntity, "Pull request is not open")
		return
	}
	ctx := context.Background()
	head := s.headSHA(p)
	if in.ExpectedHeadSHA != "" && in.ExpectedHeadSHA != head {
		c.fail(http.StatusUnprocessableEntity, "expected head sha didn't match current head ref.")
		return
	}
	base, err := s.tip(ctx, p.Base)
	if err != nil {
		c.fail(http.StatusUnprocessableEntity, "base branch is gone")
		return
	}
	if rh, err := s.reach(ctx, head); err == nil && rh[base] {
		c.fail(http.StatusUnprocessableEntity, "There are no new commits on the base branch.")
		return
	}
	tree, conflicts, err := s.git.MergeTree(ctx, head, base)
	if err != nil || len(conflicts) > 0 {
		c.fail(http.StatusUnprocessableEntity, "merge conflict between base and head")
		return
	}
	sha, err := s.commitObject(ctx, tree, []string{head, base}, fmt.Sprintf("Merge branch '%s' into %s", p.Base, p.Head))
	if err == nil {
		err = s.moveRef(ctx, "refs/heads/"+p.Head, sha, head)
	}
	if err != nil {
		c.fail(http.StatusUnprocessableEntity, "expected head sha didn't match current head ref.")
		return
	}
	s.headSHA(p)
	c.json(http.StatusAccepted, map[string]string{"message": "Updating pull request branch.", "url": s.htmlURL("pull", p.Number)})
}

// mergeTree is the tree of base and head merged: head's own when head
// holds base (a landing merges only such a head; its tree read from the
// origin's files, commitOf), else git merge-tree's.
func (s *Server) mergeTree(ctx context.Context, base, head string) (string, []string, error) {
	if rh, err := s.reach(ctx, head); err == nil && rh[base] {
		tree, _, err := s.commitOf(ctx, head)
		return tree, nil, err
	}
	return s.git.MergeTree(ctx, base, head)
}

// reach is the set of commits reachable from tip, tip included: each
// commit's parents read from the origin's files (commitOf); a commit
// that is missing has none.
func (s *Server) reach(ctx context.Context, tip string) (map[string]bool, error) {
	seen := map[string]bool{}
	todo := []string{tip}
	for len(todo) > 0 {
		id := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		_, parents, err := s.commitOf(ctx, id)
		if err != nil && !errors.Is(err, worktree.ErrNoRev) {
			return nil, err
		}
		todo = append(todo, parents...)
	}
	return seen, nil
}

// getRef answers GET /git/ref/heads/{branch}: the branch's tip in the
// origin, read from its files (tip: no git process), or 404.
func (s *Server) getRef(c *call) {
	b := c.args[2]
	sha, err := s.tip(context.Background(), b)
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, &github.Reference{Ref: github.Ptr("refs/heads/" + b), Object: &github.GitObject{SHA: github.Ptr(sha), Type: github.Ptr("commit")}})
}

// compare answers GET /compare/{base}...{head} with the counts only.
func (s *Server) compare(c *call) {
	base, head, ok := strings.Cut(c.args[2], "...")
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	ctx := context.Background()
	rev := func(r string) (string, bool) {
		if sha, err := s.tip(ctx, r); err == nil {
			return sha, true
		}
		if gitobj.IsID(r) {
			if _, _, err := s.commitOf(ctx, r); err == nil {
				return r, true
			}
		}
		sha, err := s.git.RevParse(ctx, r+"^{commit}")
		return sha, err == nil
	}
	b, ok1 := rev(base)
	h, ok2 := rev(head)
	if !ok1 || !ok2 {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	// The commits only b has (behind) and those only h has (ahead), as
	// rev-list --left-right --count b...h counts them, from each side's
	// history read from the origin's files (reach): no git process (a
	// test's cost is its processes; a test's history is short).
	rb, err1 := s.reach(ctx, b)
	rh, err2 := s.reach(ctx, h)
	if err1 != nil || err2 != nil {
		c.fail(http.StatusInternalServerError, "compare failed")
		return
	}
	var ahead, behind int
	for id := range rb {
		if !rh[id] {
			behind++
		}
	}
	for id := range rh {
		if !rb[id] {
			ahead++
		}
	}
	status := "diverged"
	switch {
	case ahead == 0 && behind == 0:
		status = "identical"
	case behind == 0:
		status = "ahead"
	case ahead == 0:
		status = "behind"
	}
	c.json(http.StatusOK, &github.CommitsComparison{Status: github.Ptr(status), AheadBy: github.Ptr(ahead), BehindBy: github.Ptr(behind), TotalCommits: github.Ptr(ahead)})
}
