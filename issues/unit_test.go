package issues

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
)

func TestScrub(t *testing.T) {
	s := NewScrubber(token)
	in := strings.Join([]string{
		"token " + token + " here",
		"url https://x-access-token:" + token + "@github.com/acme/widgets",
		"classic ghp_abcdefghijklmnopqrstuvwxyz0123456789",
		"oauth gho_abcdefghijklmnopqrstuvwxyz0123456789 app ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
		"fine github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
		"openai sk-proj-abcdefghijklmnop1234 anthropic sk-ant-api03-abcdefghijklmnopqrstu",
		"aws AKIAIOSFODNN7EXAMPLE",
		"Authorization: Bearer abc.def.ghi-jkl_mno",
		"plain words stay: skipped, task-list, AKIA, Bearer",
	}, "\n")
	out := s.Scrub(in)
	for _, secret := range []string{token, "ghp_abc", "gho_abc", "ghs_ABC", "github_pat_11", "sk-proj-", "sk-ant-", "AKIAIOSFODNN7EXAMPLE", "abc.def.ghi"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survived:\n%s", secret, out)
		}
	}
	for _, keep := range []string{"plain words stay: skipped, task-list, AKIA, Bearer", "Authorization: Bearer " + Redacted} {
		if !strings.Contains(out, keep) {
			t.Errorf("%q lost:\n%s", keep, out)
		}
	}
	if NewScrubber("abc").Scrub("abc") != "abc" {
		t.Error("a very short secret redacts ordinary text")
	}
}

func TestAgentEnv(t *testing.T) {
	env := []string{"PATH=/bin", "GITHUB_TOKEN=" + token, "GH_TOKEN=" + token, "OTHER=x" + token + "y", "CLAUDOPILOT_PHASE=x", "HOME=/h"}
	got := AgentEnv(env, token, nil)
	if want := []string{"PATH=/bin", "HOME=/h"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AgentEnv = %v, want %v", got, want)
	}
	got = AgentEnv(env, token, []string{"GH_TOKEN"})
	if want := []string{"PATH=/bin", "GH_TOKEN=" + token, "HOME=/h"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AgentEnv allow = %v, want %v", got, want)
	}
}

func TestFoldClaims(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := func(id int64, author, body string, min int) Comment {
		return Comment{ID: id, Author: author, Body: body, CreatedAt: t0.Add(time.Duration(min) * time.Minute)}
	}
	trusted := func(c Comment, m marker) bool { return c.Author != "mallory" }
	for _, tc := range []struct {
		name   string
		cs     []Comment
		holder string
		round  int64
		last   int
	}{
		{"none", nil, "", 0, 0},
		{"first claim wins", []Comment{c(1, "bot", claimBody("a", 0), 0), c(2, "bot", claimBody("b", 0), 1)}, "a", 0, 0},
		{"heartbeat refreshes", []Comment{c(1, "bot", claimBody("a", 0), 0), c(2, "bot", claimBody("b", 0), 1), c(3, "bot", claimBody("a", 0), 90)}, "a", 0, 90},
		{"untrusted claim ignored", []Comment{c(1, "mallory", claimBody("m", 0), 0), c(2, "bot", claimBody("a", 0), 1)}, "a", 0, 1},
		{"end opens a round", []Comment{c(1, "bot", claimBody("a", 0), 0), c(5, "bot", "done\n"+endMarker("a", 0), 2)}, "", 5, 0},
		{"claim of an old round loses", []Comment{c(1, "bot", claimBody("a", 0), 0), c(5, "bot", "done\n"+endMarker("a", 0), 2), c(6, "bot", claimBody("b", 0), 3)}, "", 5, 0},
		{"claim of the new round wins", []Comment{c(1, "bot", claimBody("a", 0), 0), c(5, "bot", endMarker("a", 0), 2), c(6, "bot", claimBody("b", 5), 3)}, "b", 5, 3},
		{"end by a non-holder ignored", []Comment{c(1, "bot", claimBody("a", 0), 0), c(2, "bot", endMarker("b", 0), 2)}, "a", 0, 0},
		{"release of the holder", []Comment{c(1, "bot", claimBody("a", 0), 0), c(7, "bot", releaseMarker("x", "a", 0), 400), c(8, "bot", claimBody("x", 7), 401)}, "x", 7, 401},
		{"second release ignored", []Comment{c(1, "bot", claimBody("a", 0), 0), c(7, "bot", releaseMarker("x", "a", 0), 400), c(8, "bot", releaseMarker("y", "a", 0), 400), c(9, "bot", claimBody("y", 8), 401), c(10, "bot", claimBody("x", 7), 401)}, "x", 7, 401},
		{"untrusted release ignored", []Comment{c(1, "bot", claimBody("a", 0), 0), c(7, "mallory", releaseMarker("m", "a", 0), 400)}, "a", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := foldClaims(tc.cs, trusted)
			if st.Holder != tc.holder || st.Round != tc.round || (st.Holder != "" && !st.Last.Equal(t0.Add(time.Duration(tc.last)*time.Minute))) {
				t.Errorf("fold = %+v, want holder %q round %d last +%dm", st, tc.holder, tc.round, tc.last)
			}
		})
	}
}

func TestAPIURLs(t *testing.T) {
	for in, want := range map[string][2]string{
		"":                              {"https://api.github.com/", "https://api.github.com/graphql"},
		"https://api.github.com":        {"https://api.github.com/", "https://api.github.com/graphql"},
		"https://ghe.example/api/v3":    {"https://ghe.example/api/v3/", "https://ghe.example/api/graphql"},
		"https://ghe.example/api/v3/":   {"https://ghe.example/api/v3/", "https://ghe.example/api/graphql"},
		"http://127.0.0.1:8080":         {"http://127.0.0.1:8080/", "http://127.0.0.1:8080/graphql"},
		"http://127.0.0.1:8080/prefix/": {"http://127.0.0.1:8080/prefix/", "http://127.0.0.1:8080/prefix/graphql"},
	} {
		u, g, err := apiURLs(in)
		if err != nil || u.String() != want[0] || g != want[1] {
			t.Errorf("apiURLs(%q) = %v %q %v, want %q", in, u, g, err, want)
		}
	}
	if _, _, err := apiURLs("not a url"); err == nil {
		t.Error("a relative URL is accepted")
	}
}

// TestClientTimeoutIsTransient: a request that timed out is retried like
// a 5xx. The fault tests cut the connection instead (ghfake's Drop, no
// wait); this one classifies net/http's own timeout error, from a server
// that never answers, so a timeout of 1 ms is no race: nothing must come
// within it.
func TestClientTimeoutIsTransient(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	_, err := (&http.Client{Timeout: time.Millisecond}).Get(srv.URL)
	if !os.IsTimeout(err) {
		t.Fatalf("want a timeout, got %v", err)
	}
	g, err2 := NewGitHub(GitHubConfig{Owner: owner, Repo: repo, Token: token})
	if err2 != nil {
		t.Fatal(err2)
	}
	if wait, kind := g.classify(nil, err, 0, 0); kind != faultTransient || wait <= 0 {
		t.Errorf("a timeout is %v after %v, want transient after a backoff", kind, wait)
	}
}

func TestGitHubFaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(func(c *GitHubConfig) { c.MaxRetries = 3 })
	ctx := context.Background()
	n := e.fake.NewIssue("alice", "x", "y", nil, "")

	// 5xx: retried with backoff.
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1", Times: 2, Status: 502})
	if _, err := g.Issue(ctx, n); err != nil {
		t.Fatalf("after two 502s: %v", err)
	}
	// Primary rate limit: wait until its reset.
	before := len(e.clock.Slept())
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1", RateLimit: true, Reset: 30 * time.Minute})
	if _, err := g.Issue(ctx, n); err != nil {
		t.Fatalf("after a rate limit: %v", err)
	}
	if s := e.clock.Slept()[before:]; len(s) != 1 || s[0] < 29*time.Minute || s[0] > 32*time.Minute {
		t.Errorf("rate limit waits %v, want ~30m", s)
	}
	// Secondary rate limit: wait for Retry-After.
	before = len(e.clock.Slept())
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/comments", Secondary: true, RetryAfter: 42 * time.Second})
	if _, err := g.PostComment(ctx, n, "hello"); err != nil {
		t.Fatalf("after a secondary limit: %v", err)
	}
	if s := e.clock.Slept()[before:]; len(s) != 1 || s[0] != 42*time.Second {
		t.Errorf("secondary limit waits %v, want 42s", s)
	}
	// No answer to a create (a timeout, a dropped connection): the create
	// went through; the retry finds it instead of posting twice.
	e.fake.AddFault(ghfake.Fault{Method: "POST", Path: "/comments", Drop: true})
	if _, err := g.PostComment(ctx, n, "once only"); err != nil {
		t.Fatalf("after no answer: %v", err)
	}
	if c := commentsWith(e.issue(n), "once only"); c != 1 {
		t.Errorf("the unanswered comment was posted %d times", c)
	}
	// Too many 5xx: an error, not a crash.
	e.fake.AddFault(ghfake.Fault{Method: "GET", Path: "/issues/1", Times: 4, Status: 500})
	if _, err := g.Issue(ctx, n); err == nil || !strings.Contains(err.Error(), "giving up") {
		t.Errorf("endless 500s: %v", err)
	}
	// 404: ErrNotFound.
	if _, err := g.Issue(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing issue: %v", err)
	}
	// Pagination: five comments, two per page.
	for i := 0; i < 3; i++ {
		e.fake.CommentOn(n, "alice", "more")
	}
	cs, err := g.Comments(ctx, n)
	if err != nil || len(cs) != 5 {
		t.Errorf("comments over pages: %d, %v", len(cs), err)
	}
	// A bad token is ErrAuth.
	bad := e.github(func(c *GitHubConfig) { c.Token = "nope" })
	if _, err := bad.Login(ctx); !errors.Is(err, ErrAuth) {
		t.Errorf("bad token: %v", err)
	}
}

func TestRemoveLabelEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	n := e.fake.NewIssue("alice", "x", "y", []string{"area/api", "prio#1", "keep"}, "")
	for _, l := range []string{"area/api", "prio#1", "absent"} {
		if err := g.RemoveLabel(ctx, n, l); err != nil {
			t.Errorf("remove %q: %v", l, err)
		}
	}
	if is := e.issue(n); !reflect.DeepEqual(is.Labels, []string{"keep"}) {
		t.Errorf("labels left %v", is.Labels)
	}
	var paths []string
	for _, r := range e.fake.Requests() {
		if r.Method == "DELETE" {
			paths = append(paths, r.Path)
		}
	}
	want := []string{"/repos/acme/widgets/issues/1/labels/area%2Fapi", "/repos/acme/widgets/issues/1/labels/prio%231", "/repos/acme/widgets/issues/1/labels/absent"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("DELETE paths %v, want %v", paths, want)
	}
}

func TestIssuesDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.github(nil)
	ctx := context.Background()
	open := e.fake.NewIssue("alice", "open", "", nil, "")
	done := e.fake.NewIssue("alice", "done", "", nil, "")
	e.fake.CloseIssue(done, "completed", "alice")
	dropped := e.fake.NewIssue("alice", "dropped", "", nil, "")
	e.fake.CloseIssue(dropped, "not_planned", "alice")
	got, err := g.IssuesDone(ctx, []string{IssueID(open), IssueID(done), IssueID(dropped)})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"#1": false, "#2": true, "#3": false}; !reflect.DeepEqual(got, want) {
		t.Errorf("IssuesDone = %v, want %v", got, want)
	}
	if _, err := g.IssuesDone(ctx, []string{"#1", "#77"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown issue: %v", err)
	}
	if _, err := g.IssuesDone(ctx, []string{"phase-01"}); err == nil {
		t.Error("a phase id is accepted")
	}
}
