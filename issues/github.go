package issues

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/claudopilot/claudopilot/proc"
)

// Errors the GitHub client returns (wrapped, with the call that failed).
var (
	// ErrNotFound: the issue, pull request or label is gone (404/410). The
	// queue drops what vanished.
	ErrNotFound = errors.New("not found on GitHub")
	// ErrHeadMoved: a merge was refused because the pull request's head is
	// no longer the commit whose checks were read (409).
	ErrHeadMoved = errors.New("the pull request's head moved")
	// ErrNotMergeable: GitHub refused the merge (405): conflicts, a draft,
	// branch protection.
	ErrNotMergeable = errors.New("the pull request cannot be merged")
	// ErrMethodRefused: the repository does not allow the merge method
	// (405 "Merge commits are not allowed on this repository.").
	ErrMethodRefused = errors.New("the repository does not allow this merge method")
	// ErrApprovalRequired: branch protection wants an approving review
	// (405 "At least 1 approving review is required …").
	ErrApprovalRequired = errors.New("the base branch requires an approving review")
	// ErrMergeQueue: the base takes changes only through its merge queue
	// (405 "Changes must be made through the merge queue").
	ErrMergeQueue = errors.New("the base branch requires the merge queue")
	// ErrConflict: the pull request's branch conflicts with its base, so
	// GitHub cannot bring it up to date (update-branch answered 422).
	ErrConflict = errors.New("the pull request conflicts with its base")
	// ErrMoved: GitHub redirected the request (301): a transferred issue
	// (or a renamed repository: set GH_REPO to its new name).
	ErrMoved = errors.New("moved on GitHub (transferred)")
	// ErrAuth: the token was refused (401).
	ErrAuth = errors.New("GitHub refused the token")
	// ErrUnavailable: GitHub kept failing (5xx, timeouts, rate limits)
	// through every retry; worth trying again later.
	ErrUnavailable = errors.New("GitHub is unavailable")
)

// GitHubConfig configures a GitHub client.
type GitHubConfig struct {
	Owner, Repo string
	Token       string
	// APIURL is the REST API's base URL; "" means https://api.github.com/.
	// It is used as given (a trailing slash is added): unlike go-github's
	// WithEnterpriseURLs nothing is appended, so GitHub Enterprise takes
	// https://HOST/api/v3 (what GitHub Actions puts in GITHUB_API_URL) and a
	// test server takes its plain URL.
	APIURL string
	// HTTPClient is used when set (a copy, its transport wrapped to make
	// GETs conditional); otherwise one with Timeout.
	HTTPClient *http.Client
	Timeout    time.Duration // per request (default 30s); a timeout is retried
	MaxRetries int           // tries after 5xx and timeouts (default 6)
	MaxWait    time.Duration // longest single rate-limit wait (default 65m)
	Clock      Clock         // default RealClock
	Scrubber   *Scrubber     // scrubs whatever is posted; default: the token and common shapes
	// Tokens, when set, gives the token instead of Token: an app's
	// installation tokens, made again before they expire and on a 401.
	Tokens TokenSource
	Log    func(string) // one line per fault and wait; nil: silent
}

// GitHub is the queue's client for one repository: go-github calls wrapped
// in retries (5xx, timeouts: backoff; rate limits: rateWait), with every
// posted text scrubbed.
// It is safe for concurrent use.
type GitHub struct {
	c            *github.Client
	owner, repo  string
	graphqlURL   string
	clock        Clock
	scrub        *Scrubber
	log          func(string)
	maxRetries   int
	maxWait      time.Duration
	mu           sync.Mutex
	perms        map[string]permEntry
	tok          *tokens
	login        string // the token's own login: asked at Login, or learned from our own comments
	loginFetched bool
}

type permEntry struct {
	perm string
	at   time.Time
}

// permTTL is how long a collaborator's permission is cached.
const permTTL = 5 * time.Minute

// NewGitHub builds a client. It makes no request.
func NewGitHub(cfg GitHubConfig) (*GitHub, error) {
	if cfg.Owner == "" || cfg.Repo == "" {
		return nil, fmt.Errorf("github: repository not set (want owner/name)")
	}
	var hc *http.Client
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		hc = &c
	} else {
		t := cfg.Timeout
		if t <= 0 {
			t = 30 * time.Second
		}
		hc = &http.Client{Timeout: t}
	}
	g0 := &GitHub{scrub: cfg.Scrubber}
	if g0.scrub == nil {
		g0.scrub = NewScrubber(cfg.Token)
	}
	src := cfg.Tokens
	if src == nil {
		src = StaticToken(cfg.Token)
	}
	tok := &tokens{src: src, clock: clockOr(cfg.Clock), scrub: g0.scrub, log: cfg.Log}
	// Every GET is conditional (a 304 costs none of the rate limit), and
	// every request carries the current token, made again before it
	// expires and after a 401.
	hc.Transport = &authTransport{base: newETagCache(hc.Transport), tok: tok}
	// A redirect is an answer, not a detour: GitHub answers 301 for a
	// transferred issue, which must not read as the issue itself.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := github.NewClient(hc)
	// The client must not refuse requests on its own from the last known
	// limits: waits are ours, on our clock.
	c.DisableRateLimitCheck = true
	g := &GitHub{
		c: c, owner: cfg.Owner, repo: cfg.Repo, clock: cfg.Clock, scrub: g0.scrub, log: cfg.Log, tok: tok,
		maxRetries: cfg.MaxRetries, maxWait: cfg.MaxWait, perms: map[string]permEntry{},
	}
	if g.clock == nil {
		g.clock = RealClock{}
	}
	if g.maxRetries <= 0 {
		g.maxRetries = 6
	}
	if g.maxWait <= 0 {
		g.maxWait = 65 * time.Minute
	}
	base, gql, err := apiURLs(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	c.BaseURL = base
	g.graphqlURL = gql
	return g, nil
}

// apiURLs returns the REST base URL and the GraphQL endpoint for an API
// URL: https://api.github.com/ → …/graphql; https://HOST/api/v3 →
// https://HOST/api/graphql; any other URL U → U/graphql.
func apiURLs(api string) (*url.URL, string, error) {
	if strings.TrimSpace(api) == "" {
		api = "https://api.github.com/"
	}
	u, err := url.Parse(strings.TrimSpace(api))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, "", fmt.Errorf("github: GITHUB_API_URL %q is not an absolute URL", api)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	gql := *u
	if p, ok := strings.CutSuffix(u.Path, "/api/v3/"); ok {
		gql.Path = p + "/api/graphql"
	} else {
		gql.Path = u.Path + "graphql"
	}
	return u, gql.String(), nil
}

// Credential is the user name and password the driver's fetch and push
// give the repository's HTTPS remote (worktree.Client.WithCredential):
// the current token, an app's current installation token, as GitHub
// takes it (x-access-token is the name app tokens need; any name does for
// a personal token).
func (g *GitHub) Credential(ctx context.Context) (string, string, error) {
	tok, err := g.tok.get(ctx, false, "")
	return "x-access-token", tok, err
}

// Tokens are every token the client has used (the fixed one, or each
// installation token made so far): secrets a push must not carry.
func (g *GitHub) Tokens() []string { return g.tok.all() }

// Repo is "owner/name".
func (g *GitHub) Repo() string { return g.owner + "/" + g.repo }

func (g *GitHub) logf(format string, args ...any) {
	if g.log != nil {
		g.log(g.scrub.Scrub(fmt.Sprintf(format, args...)))
	}
}

// do runs one API call with the fault policy: rate limits wait (their
// reset, or Retry-After), 5xx/timeouts/transport errors back off and retry
// up to maxRetries, 404 becomes ErrNotFound, 401 ErrAuth, anything else is
// returned at once. retry, when set, runs before every new try (e.g. to
// see whether a timed-out create went through after all); done=true ends
// the call successfully.
func (g *GitHub) do(ctx context.Context, what string, call func(ctx context.Context) (*github.Response, error), retry func(ctx context.Context) (done bool, err error)) error {
	transient, limited := 0, 0
	for {
		resp, err := call(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		wait, kind := g.classify(resp, err, transient, limited)
		switch kind {
		case faultNotFound:
			return fmt.Errorf("%s: %w: %w", what, ErrNotFound, err)
		case faultAuth:
			return fmt.Errorf("%s: %w: %w", what, ErrAuth, err)
		case faultMoved:
			return fmt.Errorf("%s: %w: %w", what, ErrMoved, err)
		case faultFatal:
			return fmt.Errorf("%s: %w", what, err)
		case faultTransient:
			transient++
			if transient > g.maxRetries {
				return fmt.Errorf("%s: %w: giving up after %d tries: %w", what, ErrUnavailable, transient, err)
			}
		case faultLimit:
			limited++
			if limited > 20 {
				return fmt.Errorf("%s: %w: still rate limited after %d waits: %w", what, ErrUnavailable, limited, err)
			}
		}
		g.logf("github: %s: %v; retrying in %s", what, err, wait.Round(time.Millisecond))
		if err := g.clock.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if retry != nil {
			done, err := retry(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if done {
				return nil
			}
		}
	}
}

type faultKind int

const (
	faultFatal faultKind = iota
	faultTransient
	faultLimit
	faultNotFound
	faultAuth
	faultMoved
)

// backoff is the wait before retry n+1 after a transient fault: 1 s
// doubling, capped at 1 min (proc's one rule).
func backoff(n int) time.Duration { return proc.Doubling(n+1, time.Second, time.Minute) }

func (g *GitHub) classify(resp *github.Response, err error, transient, limited int) (time.Duration, faultKind) {
	var (
		er  *github.ErrorResponse
		acc *github.AcceptedError
		re  *github.RedirectionError
		ue  *url.Error
		ne  net.Error
	)
	if r, msg, doc := errorAnswer(err); r != nil && (r.StatusCode == http.StatusForbidden || r.StatusCode == http.StatusTooManyRequests) {
		if wait, ok := g.rateWait(r, msg, doc, limited); ok {
			return min(wait, g.maxWait), faultLimit
		}
		return 0, faultFatal // a 403 that is no rate limit is a refusal
	}
	switch {
	case errors.As(err, &re):
		return 0, faultMoved
	case errors.As(err, &acc):
		return backoff(transient), faultTransient
	case errors.As(err, &er):
		code := 0
		if er.Response != nil {
			code = er.Response.StatusCode
		}
		switch {
		case code == http.StatusNotFound || code == http.StatusGone:
			return 0, faultNotFound
		case code == http.StatusUnauthorized:
			return 0, faultAuth
		case code >= 500:
			return backoff(transient), faultTransient
		}
		return 0, faultFatal
	case errors.As(err, &ue), errors.As(err, &ne), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return backoff(transient), faultTransient
	}
	if resp != nil && resp.StatusCode >= 500 {
		return backoff(transient), faultTransient
	}
	return 0, faultFatal
}

// errorAnswer returns the HTTP answer behind a go-github error, with its
// message and documentation URL (nil when err carries none).
func errorAnswer(err error) (r *http.Response, msg, doc string) {
	var (
		rl    *github.RateLimitError
		abuse *github.AbuseRateLimitError
		er    *github.ErrorResponse
	)
	switch {
	case errors.As(err, &rl):
		return rl.Response, rl.Message, ""
	case errors.As(err, &abuse):
		return abuse.Response, abuse.Message, ""
	case errors.As(err, &er):
		return er.Response, er.Message, er.DocumentationURL
	}
	return nil, "", ""
}

// rateWait decides how long a 403 or 429 answer asks to wait, as GitHub's
// rate-limit documentation says (go-github's fallback to the reset header
// for a secondary limit without Retry-After would wait up to an hour):
//
//   - Retry-After: wait that long;
//   - X-RateLimit-Remaining 0: the primary limit, wait until
//     X-RateLimit-Reset (the reset is used only then);
//   - a secondary limit (its message or documentation URL says so, or a
//     429) without Retry-After: wait a minute, then longer, doubling with
//     each wait of the same call (limited before this one), up to 16 min.
//
// ok is false for a 403 that is none of these: a refusal.
func (g *GitHub) rateWait(r *http.Response, msg, doc string, limited int) (time.Duration, bool) {
	if d, ok := retryAfter(r); ok {
		return max(d, time.Second), true
	}
	if r.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(g.clock.Now())+time.Second, time.Second), true
		}
		return time.Minute, true
	}
	lower := strings.ToLower(msg + " " + doc)
	if r.StatusCode == http.StatusTooManyRequests || strings.Contains(lower, "secondary rate limit") ||
		strings.Contains(lower, "secondary-rate-limits") || strings.Contains(lower, "abuse") {
		return proc.Doubling(limited+1, time.Minute, 16*time.Minute), true
	}
	return 0, false
}

func retryAfter(r *http.Response) (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	v := r.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	var secs int
	if _, err := fmt.Sscanf(v, "%d", &secs); err != nil || secs < 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// statusOf returns the HTTP status of a go-github error, or 0.
func statusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// Issue is what the queue reads of an issue (or a pull request: GitHub
// lists both as issues).
type Issue struct {
	Number      int
	Title, Body string
	Author      string
	Labels      []string
	State       string // open, closed
	StateReason string // completed, not_planned, reopened, …
	IsPR        bool
	CreatedAt   time.Time
	UpdatedAt   time.Time // any change: labels, comments, state
	URL         string
}

// HasLabel reports whether the issue carries label name (GitHub compares
// label names case-insensitively).
func (i *Issue) HasLabel(name string) bool {
	for _, l := range i.Labels {
		if strings.EqualFold(l, name) {
			return true
		}
	}
	return false
}

func toIssue(gi *github.Issue) *Issue {
	is := &Issue{
		Number: gi.GetNumber(), Title: gi.GetTitle(), Body: gi.GetBody(), Author: gi.GetUser().GetLogin(),
		State: gi.GetState(), StateReason: gi.GetStateReason(), IsPR: gi.PullRequestLinks != nil,
		CreatedAt: gi.GetCreatedAt().Time, UpdatedAt: gi.GetUpdatedAt().Time, URL: gi.GetHTMLURL(),
	}
	for _, l := range gi.Labels {
		is.Labels = append(is.Labels, l.GetName())
	}
	return is
}

// Comment is one issue comment.
type Comment struct {
	ID        int64
	Author    string
	Body      string
	CreatedAt time.Time
}

// Login returns the login the token belongs to. An app installation token
// (Actions' GITHUB_TOKEN, a GitHub App's) gets 403 "Resource not
// accessible by integration" from GET /user; its login ("name[bot]") is
// then read from GraphQL's viewer, which answers for app tokens too. When
// neither tells, Login returns "" and the client learns its login from the
// author of the first comment it posts (Self).
func (g *GitHub) Login(ctx context.Context) (string, error) {
	g.mu.Lock()
	if g.loginFetched {
		defer g.mu.Unlock()
		return g.login, nil
	}
	g.mu.Unlock()
	var u *github.User
	err := g.do(ctx, "read the token's user", func(ctx context.Context) (r *github.Response, err error) {
		u, r, err = g.c.Users.Get(ctx, "")
		return r, err
	}, nil)
	login := u.GetLogin()
	if err != nil {
		if errors.Is(err, ErrAuth) || ctx.Err() != nil {
			return "", err
		}
		if s := statusOf(err); s != http.StatusForbidden && s != http.StatusNotFound {
			return "", err
		}
		var out struct {
			Viewer struct {
				Login string `json:"login"`
			} `json:"viewer"`
		}
		verr := g.graphql(ctx, "read the token's login (GraphQL viewer)", `query { viewer { login } }`, nil, &out, nil)
		switch {
		case errors.Is(verr, ErrAuth) || ctx.Err() != nil:
			return "", verr
		case verr != nil:
			g.logf("github: the token's login is unknown (GET /user: %v; viewer: %v); it is learned from the first comment posted", err, verr)
		}
		login = out.Viewer.Login
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.login == "" {
		g.login = login
	}
	g.loginFetched = true
	return g.login, nil
}

// Self returns the token's own login as far as known: what Login read, or
// the author of a comment this client posted; "" before either.
func (g *GitHub) Self() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.login
}

// learnSelf records the author of a comment this client posted: that is
// the token's own login, whatever kind of token it is.
func (g *GitHub) learnSelf(author string) {
	if author == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.login == "" {
		g.login = author
	}
}

// DefaultBranch returns the repository's default branch.
func (g *GitHub) DefaultBranch(ctx context.Context) (string, error) {
	var r *github.Repository
	err := g.do(ctx, "read the repository "+g.Repo(), func(ctx context.Context) (resp *github.Response, err error) {
		r, resp, err = g.c.Repositories.Get(ctx, g.owner, g.repo)
		return resp, err
	}, nil)
	if err != nil {
		return "", err
	}
	return r.GetDefaultBranch(), nil
}

// LabelSpec is a label to create when it is missing.
type LabelSpec struct{ Name, Color, Description string }

// EnsureLabels creates every label of want that the repository lacks
// (compared case-insensitively) and returns the names it created. An
// existing label is never modified.
func (g *GitHub) EnsureLabels(ctx context.Context, want []LabelSpec) ([]string, error) {
	have := map[string]bool{}
	opt := &github.ListOptions{PerPage: 100}
	for {
		var ls []*github.Label
		var resp *github.Response
		err := g.do(ctx, "list labels", func(ctx context.Context) (r *github.Response, err error) {
			ls, r, err = g.c.Issues.ListLabels(ctx, g.owner, g.repo, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			have[strings.ToLower(l.GetName())] = true
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	var created []string
	for _, w := range want {
		if w.Name == "" || have[strings.ToLower(w.Name)] {
			continue
		}
		err := g.do(ctx, "create label "+w.Name, func(ctx context.Context) (*github.Response, error) {
			_, r, err := g.c.Issues.CreateLabel(ctx, g.owner, g.repo, &github.Label{
				Name: github.Ptr(w.Name), Color: github.Ptr(w.Color), Description: github.Ptr(w.Description),
			})
			return r, err
		}, nil)
		if err != nil {
			// Another instance may have created it a moment ago.
			if statusOf(err) == http.StatusUnprocessableEntity {
				continue
			}
			return created, err
		}
		have[strings.ToLower(w.Name)] = true
		created = append(created, w.Name)
	}
	return created, nil
}

// OpenIssues lists up to limit open issues (pull requests left out) that
// carry label (every open issue for ""), oldest or newest first.
func (g *GitHub) OpenIssues(ctx context.Context, label string, newestFirst bool, limit int) ([]*Issue, error) {
	dir := "asc"
	if newestFirst {
		dir = "desc"
	}
	if limit <= 0 {
		limit = 25
	}
	opt := &github.IssueListByRepoOptions{State: "open", Sort: "created", Direction: dir}
	if label != "" { // "": every open issue
		opt.Labels = []string{label}
	}
	opt.ListOptions = github.ListOptions{PerPage: min(limit, 100)}
	var out []*Issue
	for len(out) < limit {
		var is []*github.Issue
		var resp *github.Response
		err := g.do(ctx, "list issues labelled "+label, func(ctx context.Context) (r *github.Response, err error) {
			is, r, err = g.c.Issues.ListByRepo(ctx, g.owner, g.repo, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, gi := range is {
			if gi.PullRequestLinks == nil && len(out) < limit {
				out = append(out, toIssue(gi))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.ListOptions.Page = resp.NextPage
	}
	return out, nil
}

// Issue reads one issue (or pull request). A vanished one is ErrNotFound.
func (g *GitHub) Issue(ctx context.Context, n int) (*Issue, error) {
	var gi *github.Issue
	err := g.do(ctx, fmt.Sprintf("read issue #%d", n), func(ctx context.Context) (r *github.Response, err error) {
		gi, r, err = g.c.Issues.Get(ctx, g.owner, g.repo, n)
		return r, err
	}, nil)
	if err != nil {
		return nil, err
	}
	return toIssue(gi), nil
}

// Comments reads every comment of issue n, oldest first.
func (g *GitHub) Comments(ctx context.Context, n int) ([]Comment, error) {
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var out []Comment
	for {
		var cs []*github.IssueComment
		var resp *github.Response
		err := g.do(ctx, fmt.Sprintf("read the comments of #%d", n), func(ctx context.Context) (r *github.Response, err error) {
			cs, r, err = g.c.Issues.ListComments(ctx, g.owner, g.repo, n, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out = append(out, Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody(), CreatedAt: c.GetCreatedAt().Time})
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// PostComment posts body, scrubbed, on issue n, exactly once: the body
// carries a hidden nonce, and before a retry the comments are read to see
// whether a timed-out try went through after all.
func (g *GitHub) PostComment(ctx context.Context, n int, body string) (Comment, error) {
	nonce := randomHex(8)
	body = g.scrub.Scrub(body) + "\n<!-- claudopilot:nonce " + nonce + " -->"
	var got Comment
	err := g.do(ctx, fmt.Sprintf("comment on #%d", n), func(ctx context.Context) (*github.Response, error) {
		c, r, err := g.c.Issues.CreateComment(ctx, g.owner, g.repo, n, &github.IssueComment{Body: github.Ptr(body)})
		if err == nil {
			got = Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), Body: c.GetBody(), CreatedAt: c.GetCreatedAt().Time}
		}
		return r, err
	}, func(ctx context.Context) (bool, error) {
		cs, err := g.Comments(ctx, n)
		if err != nil {
			return false, nil // try again; the next try re-checks
		}
		for _, c := range cs {
			if strings.Contains(c.Body, "claudopilot:nonce "+nonce) {
				got = c
				return true, nil
			}
		}
		return false, nil
	})
	if err == nil {
		g.learnSelf(got.Author)
	}
	return got, err
}

// AddLabels adds labels to issue (or pull request) n.
func (g *GitHub) AddLabels(ctx context.Context, n int, labels ...string) error {
	return g.do(ctx, fmt.Sprintf("label #%d %s", n, strings.Join(labels, ", ")), func(ctx context.Context) (*github.Response, error) {
		_, r, err := g.c.Issues.AddLabelsToIssue(ctx, g.owner, g.repo, n, labels)
		return r, err
	}, nil)
}

// RemoveLabel removes label from issue n; a label the issue does not carry
// is not an error. The name is path-escaped here: go-github's
// RemoveLabelForIssue does not escape it ("area/api" would hit another URL,
// "prio#1" would be cut at the "#").
func (g *GitHub) RemoveLabel(ctx context.Context, n int, label string) error {
	u := fmt.Sprintf("repos/%s/%s/issues/%d/labels/%s", url.PathEscape(g.owner), url.PathEscape(g.repo), n, url.PathEscape(label))
	err := g.do(ctx, fmt.Sprintf("remove label %s from #%d", label, n), func(ctx context.Context) (*github.Response, error) {
		req, err := g.c.NewRequest(http.MethodDelete, u, nil)
		if err != nil {
			return nil, err
		}
		return g.c.Do(ctx, req, nil)
	}, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// LabeledBy returns who last applied label to issue n, and when, from the
// issue's events ("" when no labeled event names it).
func (g *GitHub) LabeledBy(ctx context.Context, n int, label string) (string, time.Time, error) {
	opt := &github.ListOptions{PerPage: 100}
	var (
		who  string
		when time.Time
		id   int64
	)
	for {
		var evs []*github.IssueEvent
		var resp *github.Response
		err := g.do(ctx, fmt.Sprintf("read the events of #%d", n), func(ctx context.Context) (r *github.Response, err error) {
			evs, r, err = g.c.Issues.ListIssueEvents(ctx, g.owner, g.repo, n, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return "", time.Time{}, err
		}
		for _, e := range evs {
			if e.GetEvent() != "labeled" || e.Label == nil || !strings.EqualFold(e.Label.GetName(), label) {
				continue
			}
			t := e.GetCreatedAt().Time
			if who == "" || t.After(when) || (t.Equal(when) && e.GetID() > id) {
				who, when, id = e.GetActor().GetLogin(), t, e.GetID()
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return who, when, nil
}

// HasWrite reports whether login has write access (write, maintain or
// admin) to the repository, through the collaborator permission endpoint.
// Answers are cached for a few minutes.
func (g *GitHub) HasWrite(ctx context.Context, login string) (bool, error) {
	if login == "" {
		return false, nil
	}
	// The token's own login writes (it labels and comments); an app's
	// login ("name[bot]") has no collaborator permission to ask for: 404.
	if self := g.Self(); self != "" && strings.EqualFold(login, self) {
		return true, nil
	}
	key := strings.ToLower(login)
	g.mu.Lock()
	e, ok := g.perms[key]
	g.mu.Unlock()
	if !ok || g.clock.Now().Sub(e.at) > permTTL {
		var pl *github.RepositoryPermissionLevel
		err := g.do(ctx, "read the permission of "+login, func(ctx context.Context) (r *github.Response, err error) {
			pl, r, err = g.c.Repositories.GetPermissionLevel(ctx, g.owner, g.repo, login)
			return r, err
		}, nil)
		perm := "none"
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return false, err
		default:
			perm = strings.ToLower(pl.GetPermission())
			if rn := strings.ToLower(pl.GetRoleName()); rn == "maintain" || rn == "admin" || rn == "write" {
				perm = rn
			}
		}
		e = permEntry{perm: perm, at: g.clock.Now()}
		g.mu.Lock()
		g.perms[key] = e
		g.mu.Unlock()
	}
	return e.perm == "admin" || e.perm == "maintain" || e.perm == "write", nil
}

// PR is what the queue reads of a pull request.
type PR struct {
	Number  int
	NodeID  string
	State   string // open, closed
	Draft   bool
	Merged  bool
	HeadSHA string
	Head    string // branch name
	Base    string // the branch it goes into
	URL     string
	Body    string
}

func toPR(p *github.PullRequest) *PR {
	return &PR{
		Number: p.GetNumber(), NodeID: p.GetNodeID(), State: p.GetState(), Draft: p.GetDraft(),
		Merged: p.GetMerged() || p.MergedAt != nil, HeadSHA: p.GetHead().GetSHA(), Head: p.GetHead().GetRef(), Base: p.GetBase().GetRef(), URL: p.GetHTMLURL(), Body: p.GetBody(),
	}
}

// FindPR returns the newest pull request from branch head in state
// ("open", "closed" or "all"), or nil.
func (g *GitHub) FindPR(ctx context.Context, head, state string) (*PR, error) {
	prs, err := g.PRs(ctx, head, state)
	if err != nil || len(prs) == 0 {
		return nil, err
	}
	return prs[0], nil
}

// PRs lists the pull requests from branch head in state, newest first.
func (g *GitHub) PRs(ctx context.Context, head, state string) ([]*PR, error) {
	opt := &github.PullRequestListOptions{State: state, Head: g.owner + ":" + head, ListOptions: github.ListOptions{PerPage: 100}}
	var out []*PR
	for {
		var ps []*github.PullRequest
		var resp *github.Response
		err := g.do(ctx, "list pull requests from "+head, func(ctx context.Context) (r *github.Response, err error) {
			ps, r, err = g.c.PullRequests.List(ctx, g.owner, g.repo, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.GetHead().GetRef() == head {
				out = append(out, toPR(p))
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	return out, nil
}

// PR reads pull request n.
func (g *GitHub) PR(ctx context.Context, n int) (*PR, error) {
	var p *github.PullRequest
	err := g.do(ctx, fmt.Sprintf("read pull request #%d", n), func(ctx context.Context) (r *github.Response, err error) {
		p, r, err = g.c.PullRequests.Get(ctx, g.owner, g.repo, n)
		return r, err
	}, nil)
	if err != nil {
		return nil, err
	}
	return toPR(p), nil
}

// CreatePR opens a pull request from head into base (a draft if draft), or
// returns the open one from head if there is one already. Title and body
// are scrubbed. A repository that refuses drafts gets a normal one.
func (g *GitHub) CreatePR(ctx context.Context, head, base, title, body string, draft bool) (*PR, error) {
	if p, err := g.FindPR(ctx, head, "open"); err != nil || p != nil {
		return p, err
	}
	title, body = g.scrub.Scrub(title), g.scrub.Scrub(body)
	var got *PR
	create := func(draft bool) error {
		return g.do(ctx, "open a pull request from "+head, func(ctx context.Context) (*github.Response, error) {
			p, r, err := g.c.PullRequests.Create(ctx, g.owner, g.repo, &github.NewPullRequest{
				Title: github.Ptr(title), Head: github.Ptr(head), Base: github.Ptr(base), Body: github.Ptr(body), Draft: github.Ptr(draft),
			})
			if err == nil {
				got = toPR(p)
			}
			return r, err
		}, func(ctx context.Context) (bool, error) {
			p, err := g.FindPR(ctx, head, "open")
			if err == nil && p != nil {
				got = p
				return true, nil
			}
			return false, nil
		})
	}
	err := create(draft)
	// Right after a push GitHub may not know the branch yet: 422 with
	// {"resource":"PullRequest","field":"head","code":"invalid"} until it
	// has processed the push. Wait and try again, for up to headWait.
	var waited time.Duration
	for i := 0; err != nil && headInvalid(err) && waited < headWait; i++ {
		d := min(backoff(i), headWait-waited)
		g.logf("github: GitHub does not know the branch %s yet (422 head invalid); trying again in %s", head, d)
		if serr := g.clock.Sleep(ctx, d); serr != nil {
			return nil, fmt.Errorf("open a pull request from %s: %w", head, serr)
		}
		waited += d
		err = create(draft)
	}
	if err != nil && draft && statusOf(err) == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(err.Error()), "draft") {
		err = create(false)
	}
	if err != nil && statusOf(err) == http.StatusUnprocessableEntity {
		if p, ferr := g.FindPR(ctx, head, "open"); ferr == nil && p != nil {
			return p, nil
		}
	}
	return got, err
}

// headWait is how long a pull request whose head GitHub does not know yet
// (422 head invalid, right after a push) is tried again.
const headWait = 30 * time.Second

// headInvalid reports GitHub's 422 for a head branch it does not know.
func headInvalid(err error) bool {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || statusOf(err) != http.StatusUnprocessableEntity {
		return false
	}
	for _, e := range er.Errors {
		if e.Resource == "PullRequest" && e.Field == "head" && e.Code == "invalid" {
			return true
		}
	}
	return false
}

// graphql runs one GraphQL request; an answer with errors is an error.
// retry, when set, runs before a retry as in do.
func (g *GitHub) graphql(ctx context.Context, what, query string, vars map[string]any, data any, retry func(ctx context.Context) (bool, error)) error {
	payload := map[string]any{"query": query}
	if vars != nil {
		payload["variables"] = vars
	}
	return g.do(ctx, what, func(ctx context.Context) (*github.Response, error) {
		req, err := g.c.NewRequest(http.MethodPost, g.graphqlURL, payload)
		if err != nil {
			return nil, err
		}
		var out struct {
			Data   json.RawMessage `json:"data"`
			Errors []struct {
				Message string `json:"message"`
			} `json:"errors"`
		}
		r, err := g.c.Do(ctx, req, &out)
		switch {
		case err != nil:
		case len(out.Errors) > 0:
			err = fmt.Errorf("graphql: %s", out.Errors[0].Message)
		case data != nil && len(out.Data) > 0:
			err = json.Unmarshal(out.Data, data)
		}
		return r, err
	}, retry)
}

// MarkReady turns a draft pull request into one ready for review (GraphQL:
// REST cannot). It reads the pull request first, so a try whose answer was
// lost is not repeated: a pull request that is no longer a draft is done.
func (g *GitHub) MarkReady(ctx context.Context, p *PR) error {
	cur, err := g.PR(ctx, p.Number)
	if err != nil {
		return err
	}
	if !cur.Draft {
		p.Draft = false
		return nil
	}
	what := fmt.Sprintf("mark pull request #%d ready for review", p.Number)
	ready := func(ctx context.Context) (bool, error) {
		now, err := g.PR(ctx, p.Number)
		return err == nil && !now.Draft, nil
	}
	for try := 0; ; try++ {
		err := g.graphql(ctx, what, `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }`, map[string]any{"id": cur.NodeID}, nil, ready)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		// Whatever the answer, the pull request says whether it worked.
		if now, rerr := g.PR(ctx, p.Number); rerr == nil && !now.Draft {
			p.Draft = false
			return nil
		}
		if err != nil || try >= g.maxRetries {
			if err == nil {
				err = fmt.Errorf("%s: still a draft after %d tries: %w", what, try+1, ErrUnavailable)
			}
			return err
		}
		if err := g.clock.Sleep(ctx, backoff(try)); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// Merge merges pull request n if its head is still sha. Before every retry
// (after a lost answer or a race) the pull request is read again: merged
// means done, so a merge whose answer was lost is never reported as
// failed. A moved head is ErrHeadMoved (409, or a head other than sha
// when read again); 405 "Base branch was modified" (two merges raced) is
// tried again; any other 405 is ErrNotMergeable.
func (g *GitHub) Merge(ctx context.Context, n int, sha, method, title string) error {
	what := fmt.Sprintf("merge pull request #%d", n)
	// check reads the pull request: done when it is merged; ErrHeadMoved
	// when its head is no longer sha.
	check := func(ctx context.Context) (bool, error) {
		p, err := g.PR(ctx, n)
		if err != nil {
			return false, nil // unknown: the next try tells
		}
		switch {
		case p.Merged:
			return true, nil
		case p.HeadSHA != sha:
			return false, fmt.Errorf("%w: now %s", ErrHeadMoved, short(p.HeadSHA))
		}
		return false, nil
	}
	for races := 0; ; races++ {
		err := g.do(ctx, what, func(ctx context.Context) (*github.Response, error) {
			_, r, err := g.c.PullRequests.Merge(ctx, g.owner, g.repo, n, "", &github.PullRequestOptions{SHA: sha, MergeMethod: method, CommitTitle: g.scrub.Scrub(title)})
			return r, err
		}, check)
		if err == nil || errors.Is(err, ErrHeadMoved) || ctx.Err() != nil {
			return err
		}
		// A refusal may follow a try that went through unseen, and a
		// GitHub that kept failing may have merged all the same.
		if done, cerr := check(ctx); done {
			return nil
		} else if cerr != nil {
			return cerr
		}
		code := statusOf(err)
		switch {
		case code == http.StatusConflict:
			return fmt.Errorf("%w: %w", ErrHeadMoved, err)
		case code == http.StatusMethodNotAllowed && baseModified(err) && races < g.maxRetries:
			d := backoff(races)
			g.logf("github: %s: another merge moved the base; trying again in %s", what, d)
			if err := g.clock.Sleep(ctx, d); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		case code == http.StatusMethodNotAllowed:
			return fmt.Errorf("%w: %w", refusal(err), err)
		default:
			return err
		}
	}
}

// refusal names a 405 merge refusal: a method the repository does not
// allow, a missing approval, the merge queue, or another (ErrNotMergeable:
// conflicts, a draft).
func refusal(err error) error {
	var er *github.ErrorResponse
	msg := ""
	if errors.As(err, &er) {
		msg = strings.ToLower(er.Message)
	}
	switch {
	case strings.Contains(msg, "are not allowed on this repository"):
		return ErrMethodRefused
	case strings.Contains(msg, "approving review"):
		return ErrApprovalRequired
	case strings.Contains(msg, "merge queue"):
		return ErrMergeQueue
	}
	return ErrNotMergeable
}

// MergeMethods returns the merge methods the repository allows
// (allow_merge_commit, allow_squash_merge, allow_rebase_merge); known is
// false when GitHub did not say (it shows them only to who may push).
func (g *GitHub) MergeMethods(ctx context.Context) (allowed map[string]bool, known bool, err error) {
	var r *github.Repository
	err = g.do(ctx, "read the repository "+g.Repo(), func(ctx context.Context) (resp *github.Response, err error) {
		r, resp, err = g.c.Repositories.Get(ctx, g.owner, g.repo)
		return resp, err
	}, nil)
	if err != nil {
		return nil, false, err
	}
	if r.AllowMergeCommit == nil && r.AllowSquashMerge == nil && r.AllowRebaseMerge == nil {
		return nil, false, nil
	}
	return map[string]bool{"merge": r.GetAllowMergeCommit(), "squash": r.GetAllowSquashMerge(), "rebase": r.GetAllowRebaseMerge()}, true, nil
}

// Approvals counts the users whose latest review of pull request n
// approves it (a later "changes requested" or a dismissal takes it back).
func (g *GitHub) Approvals(ctx context.Context, n int) ([]string, error) {
	opt := &github.ListOptions{PerPage: 100}
	last := map[string]string{}
	var order []string
	for {
		var rs []*github.PullRequestReview
		var resp *github.Response
		err := g.do(ctx, fmt.Sprintf("read the reviews of pull request #%d", n), func(ctx context.Context) (r *github.Response, err error) {
			rs, r, err = g.c.PullRequests.ListReviews(ctx, g.owner, g.repo, n, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			switch st := r.GetState(); st {
			case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
				u := r.GetUser().GetLogin()
				if _, seen := last[u]; !seen {
					order = append(order, u)
				}
				last[u] = st
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	var out []string
	for _, u := range order {
		if last[u] == "APPROVED" {
			out = append(out, u)
		}
	}
	return out, nil
}

// QueueState is a pull request's place in its base's merge queue.
type QueueState struct {
	Merged  bool
	Queued  string // the entry's state (QUEUED, AWAITING_CHECKS, …); "" when not in the queue
	Removed string // why the queue last removed it ("failed status checks", …)
	// Removals counts the times the queue removed it (each a
	// RemovedFromMergeQueueEvent of its timeline).
	Removals int
}

// Enqueue adds pull request p to its base's merge queue (GraphQL
// enqueuePullRequest), only while its head is still sha. A try whose
// answer was lost is not repeated: a queued or merged pull request is
// done.
func (g *GitHub) Enqueue(ctx context.Context, p *PR, sha string) error {
	done := func(ctx context.Context) (bool, error) {
		st, err := g.MergeQueue(ctx, p.Number)
		return err == nil && (st.Merged || st.Queued != ""), nil
	}
	return g.graphql(ctx, fmt.Sprintf("add pull request #%d to the merge queue", p.Number),
		`mutation($id: ID!, $oid: GitObjectID) { enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $oid}) { mergeQueueEntry { state } } }`,
		map[string]any{"id": p.NodeID, "oid": sha}, nil, done)
}

// MergeQueue reads pull request n's merge queue state.
func (g *GitHub) MergeQueue(ctx context.Context, n int) (QueueState, error) {
	var out struct {
		Repository struct {
			PullRequest struct {
				Merged          bool `json:"merged"`
				MergeQueueEntry *struct {
					State string `json:"state"`
				} `json:"mergeQueueEntry"`
				TimelineItems struct {
					TotalCount int `json:"totalCount"`
					Nodes      []struct {
						Reason string `json:"reason"`
					} `json:"nodes"`
				} `json:"timelineItems"`
			} `json:"pullRequest"`
		} `json:"repository"`
	}
	err := g.graphql(ctx, fmt.Sprintf("read the merge queue state of pull request #%d", n),
		`query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { pullRequest(number: $number) { merged mergeQueueEntry { state } timelineItems(last: 1, itemTypes: [REMOVED_FROM_MERGE_QUEUE_EVENT]) { totalCount nodes { ... on RemovedFromMergeQueueEvent { reason } } } } } }`,
		map[string]any{"owner": g.owner, "name": g.repo, "number": n}, &out, nil)
	if err != nil {
		return QueueState{}, err
	}
	pr := out.Repository.PullRequest
	st := QueueState{Merged: pr.Merged, Removals: pr.TimelineItems.TotalCount}
	if pr.MergeQueueEntry != nil {
		st.Queued = pr.MergeQueueEntry.State
		if st.Queued == "" {
			st.Queued = "QUEUED"
		}
	}
	if k := len(pr.TimelineItems.Nodes); k > 0 {
		st.Removed = pr.TimelineItems.Nodes[k-1].Reason
	}
	return st, nil
}

// baseModified reports GitHub's 405 "Base branch was modified. Review and
// try the merge again.": another merge into the base won a race.
func baseModified(err error) bool {
	var er *github.ErrorResponse
	return errors.As(err, &er) && strings.Contains(strings.ToLower(er.Message), "base branch was modified")
}

// BranchTip returns branch's tip on GitHub (GET git/ref/heads/<branch>):
// one request on the client's kept-alive connection, where a git
// ls-remote is git, its transport helper and a credential helper, over a
// new connection. A branch GitHub does not have is ErrNotFound.
func (g *GitHub) BranchTip(ctx context.Context, branch string) (string, error) {
	var ref *github.Reference
	err := g.do(ctx, "read the tip of "+branch, func(ctx context.Context) (r *github.Response, err error) {
		ref, r, err = g.c.Git.GetRef(ctx, g.owner, g.repo, "heads/"+branch)
		return r, err
	}, nil)
	if err != nil {
		return "", err
	}
	if sha := ref.GetObject().GetSHA(); ref.GetRef() == "refs/heads/"+branch && len(sha) >= 40 {
		return sha, nil
	}
	return "", fmt.Errorf("read the tip of %s: GitHub answered %q at %q", branch, ref.GetObject().GetSHA(), ref.GetRef())
}

// BehindBase returns how many commits of branch base sha lacks (0: sha
// contains base's tip, so merging sha gives sha's own tree).
func (g *GitHub) BehindBase(ctx context.Context, base, sha string) (int, error) {
	var c *github.CommitsComparison
	err := g.do(ctx, fmt.Sprintf("compare %s with %s", short(sha), base), func(ctx context.Context) (r *github.Response, err error) {
		c, r, err = g.c.Repositories.CompareCommits(ctx, g.owner, g.repo, base, sha, &github.ListOptions{PerPage: 1})
		return r, err
	}, nil)
	if err != nil {
		return 0, err
	}
	return c.GetBehindBy(), nil
}

// UpdateBranch merges the base into pull request n's branch on GitHub
// (update-branch with expected_head_sha = sha) and waits, up to
// updateWait, for the new head, which it returns. The pull request is read
// before every retry, so a lost answer is not sent twice: a head other
// than sha is the update done. ErrHeadMoved: the head was not sha;
// ErrConflict: the base does not merge cleanly.
func (g *GitHub) UpdateBranch(ctx context.Context, n int, sha string) (string, error) {
	what := fmt.Sprintf("update pull request #%d with its base", n)
	var head string
	moved := func(ctx context.Context) (bool, error) {
		p, err := g.PR(ctx, n)
		if err != nil || p.HeadSHA == sha {
			return false, nil
		}
		head = p.HeadSHA
		return true, nil
	}
	err := g.do(ctx, what, func(ctx context.Context) (*github.Response, error) {
		_, r, err := g.c.PullRequests.UpdateBranch(ctx, g.owner, g.repo, n, &github.PullRequestBranchUpdateOptions{ExpectedHeadSHA: github.Ptr(sha)})
		var acc *github.AcceptedError
		if errors.As(err, &acc) {
			err = nil // 202: GitHub updates the branch in the background
		}
		return r, err
	}, moved)
	if err != nil {
		var er *github.ErrorResponse
		if statusOf(err) == http.StatusUnprocessableEntity && errors.As(err, &er) {
			msg := strings.ToLower(er.Message)
			switch {
			case strings.Contains(msg, "expected head sha"):
				return "", fmt.Errorf("%w: %w", ErrHeadMoved, err)
			case strings.Contains(msg, "conflict"):
				return "", fmt.Errorf("%w: %w", ErrConflict, err)
			case strings.Contains(msg, "no new commits"):
				return sha, nil
			}
		}
		return "", err
	}
	var waited time.Duration
	for i := 0; head == ""; i++ {
		if ok, _ := moved(ctx); ok {
			break
		}
		if waited >= updateWait {
			return "", fmt.Errorf("%s: the head is still %s after %s: %w", what, short(sha), updateWait, ErrUnavailable)
		}
		d := min(backoff(i), updateWait-waited)
		if err := g.clock.Sleep(ctx, d); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		waited += d
	}
	return head, nil
}

// updateWait is how long an accepted update-branch is waited for.
const updateWait = 2 * time.Minute

// ClosePR closes pull request n without merging it (idempotent).
func (g *GitHub) ClosePR(ctx context.Context, n int) error {
	return g.do(ctx, fmt.Sprintf("close pull request #%d", n), func(ctx context.Context) (*github.Response, error) {
		_, r, err := g.c.PullRequests.Edit(ctx, g.owner, g.repo, n, &github.PullRequest{State: github.Ptr("closed")})
		return r, err
	}, nil)
}

// CloseIssue closes issue n as completed.
func (g *GitHub) CloseIssue(ctx context.Context, n int) error {
	return g.do(ctx, fmt.Sprintf("close #%d", n), func(ctx context.Context) (*github.Response, error) {
		_, r, err := g.c.Issues.Edit(ctx, g.owner, g.repo, n, &github.IssueRequest{State: github.Ptr("closed"), StateReason: github.Ptr("completed")})
		return r, err
	}, nil)
}

// Check is one check run or commit status of a commit.
type Check struct {
	Name   string
	State  string // "pending", "success" or "failure"
	Detail string // the conclusion or status, and its description or URL
}

// Checks reads every check run and commit status of sha (the newest of
// each name). An error means they could not be read: the caller waits.
func (g *GitHub) Checks(ctx context.Context, sha string) ([]Check, error) {
	runs, err := g.checkRuns(ctx, sha)
	if err != nil {
		return nil, err
	}
	statuses, err := g.statuses(ctx, sha)
	if err != nil {
		return nil, err
	}
	return append(runs, statuses...), nil
}

// checkRuns reads the latest check run of each name on sha, as Checks.
func (g *GitHub) checkRuns(ctx context.Context, sha string) ([]Check, error) {
	var out []Check
	runs := map[string]*github.CheckRun{}
	opt := &github.ListCheckRunsOptions{Filter: github.Ptr("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		var res *github.ListCheckRunsResults
		var resp *github.Response
		err := g.do(ctx, "read the check runs of "+short(sha), func(ctx context.Context) (r *github.Response, err error) {
			res, r, err = g.c.Checks.ListCheckRunsForRef(ctx, g.owner, g.repo, sha, opt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, cr := range res.CheckRuns {
			if old, ok := runs[cr.GetName()]; !ok || cr.GetID() > old.GetID() {
				runs[cr.GetName()] = cr
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	for _, name := range sortedKeys(runs) {
		cr := runs[name]
		c := Check{Name: name, State: "pending", Detail: cr.GetStatus()}
		if cr.GetStatus() == "completed" {
			c.Detail = cr.GetConclusion()
			switch cr.GetConclusion() {
			case "success", "neutral", "skipped":
				c.State = "success"
			default:
				c.State = "failure"
			}
		}
		if t := cr.GetOutput().GetTitle(); t != "" {
			c.Detail += ": " + t
		}
		if u := cr.GetDetailsURL(); u != "" {
			c.Detail += " (" + u + ")"
		}
		out = append(out, c)
	}
	return out, nil
}

// statuses reads the latest commit status of each context on sha, as
// Checks.
func (g *GitHub) statuses(ctx context.Context, sha string) ([]Check, error) {
	var out []Check
	sopt := &github.ListOptions{PerPage: 100}
	statuses := map[string]*github.RepoStatus{}
	for {
		var ss []*github.RepoStatus
		var resp *github.Response
		err := g.do(ctx, "read the statuses of "+short(sha), func(ctx context.Context) (r *github.Response, err error) {
			ss, r, err = g.c.Repositories.ListStatuses(ctx, g.owner, g.repo, sha, sopt)
			resp = r
			return r, err
		}, nil)
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			if old, ok := statuses[s.GetContext()]; !ok || s.GetID() > old.GetID() {
				statuses[s.GetContext()] = s
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		sopt.Page = resp.NextPage
	}
	for _, name := range sortedKeys(statuses) {
		s := statuses[name]
		c := Check{Name: name, State: "pending", Detail: s.GetState()}
		switch s.GetState() {
		case "success":
			c.State = "success"
		case "failure", "error":
			c.State = "failure"
		}
		if d := s.GetDescription(); d != "" {
			c.Detail += ": " + d
		}
		if u := s.GetTargetURL(); u != "" {
			c.Detail += " (" + u + ")"
		}
		out = append(out, c)
	}
	return out, nil
}

// Verdict sums up checks: "green" when every check passed or there are
// none, "red" when all have finished and some failed (failing names
// them), else "pending".
func Verdict(checks []Check) (verdict string, failing []string) {
	pending := false
	for _, c := range checks {
		switch c.State {
		case "failure":
			failing = append(failing, c.Name)
		case "pending":
			pending = true
		}
	}
	switch {
	case pending:
		return "pending", failing
	case len(failing) > 0:
		return "red", failing
	}
	return "green", nil
}

// IssueState is what a dependency needs to know of an issue.
type IssueState struct {
	Exists bool   // false: no such issue (404)
	Done   bool   // closed as completed, or its pull request merged
	Why    string // for logs: "closed as completed", "open", "PR #5 merged", …
}

// IssueStates reports, for each "#N" id, whether issue N exists and is
// done: closed as completed (a closed issue with no reason counts too), or
// — for a pull request, or an issue whose claudopilot pull request (branch
// claudopilot/issue-N) — merged. Ids that are not "#N" are an error.
func (g *GitHub) IssueStates(ctx context.Context, ids []string) (map[string]IssueState, error) {
	out := make(map[string]IssueState, len(ids))
	for _, id := range ids {
		n, ok := ParseIssueID(id)
		if !ok {
			return nil, fmt.Errorf("%q is not an issue reference (want #N)", id)
		}
		if _, dup := out[id]; dup {
			continue
		}
		st, err := g.issueState(ctx, n)
		if err != nil {
			return nil, err
		}
		out[id] = st
	}
	return out, nil
}

// IssuesDone is IssueStates reduced to done or not; an issue that does
// not exist is an error wrapping ErrNotFound.
func (g *GitHub) IssuesDone(ctx context.Context, ids []string) (map[string]bool, error) {
	st, err := g.IssueStates(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(st))
	var missing []string
	for id, s := range st {
		if !s.Exists {
			missing = append(missing, id)
		}
		out[id] = s.Done
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return out, fmt.Errorf("issues %s: %w", strings.Join(missing, ", "), ErrNotFound)
	}
	return out, nil
}

func (g *GitHub) issueState(ctx context.Context, n int) (IssueState, error) {
	is, err := g.Issue(ctx, n)
	if errors.Is(err, ErrNotFound) {
		return IssueState{Why: "no such issue"}, nil
	}
	if err != nil {
		return IssueState{}, err
	}
	st := IssueState{Exists: true, Why: is.State}
	if is.IsPR {
		p, err := g.PR(ctx, n)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return IssueState{}, err
		}
		if p != nil && p.Merged {
			st.Done, st.Why = true, "merged"
		}
		return st, nil
	}
	if is.State == "closed" && (is.StateReason == "completed" || is.StateReason == "") {
		st.Done, st.Why = true, "closed as completed"
		return st, nil
	}
	prs, err := g.PRs(ctx, Branch(n), "all")
	if err != nil {
		return IssueState{}, err
	}
	for _, p := range prs {
		if p.Merged {
			st.Done, st.Why = true, fmt.Sprintf("PR #%d merged", p.Number)
			break
		}
	}
	return st, nil
}

// RefState reports whether issue (or pull request) r of another
// repository exists and is done: an issue closed as completed (or closed
// without a reason), a pull request merged. A repository the token cannot
// read answers 404 as a missing one does: it does not exist.
func (g *GitHub) RefState(ctx context.Context, r Ref) (IssueState, error) {
	var gi *github.Issue
	err := g.do(ctx, "read "+r.String(), func(ctx context.Context) (resp *github.Response, err error) {
		gi, resp, err = g.c.Issues.Get(ctx, r.Owner, r.Repo, r.N)
		return resp, err
	}, nil)
	if errors.Is(err, ErrNotFound) {
		return IssueState{Why: "no such issue"}, nil
	}
	if err != nil {
		return IssueState{}, err
	}
	is := toIssue(gi)
	st := IssueState{Exists: true, Why: is.State}
	switch {
	case is.IsPR && gi.PullRequestLinks.MergedAt != nil:
		st.Done, st.Why = true, "merged"
	case !is.IsPR && is.State == "closed" && (is.StateReason == "completed" || is.StateReason == ""):
		st.Done, st.Why = true, "closed as completed"
	}
	return st, nil
}

// Branch is issue n's branch: claudopilot/issue-<n>.
func Branch(n int) string { return fmt.Sprintf("claudopilot/issue-%d", n) }

func short(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
