package issues

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues/ghfake"
)

// TestOvernightOnAppTokens (issue 24 §6): installation tokens expire an
// hour after they are made; the token was read once at start, so an
// overnight queue on an app token died at the first 401 an hour in. Here
// the queue mints its tokens (a JWT signed with the app's key, then POST
// /app/installations/{id}/access_tokens) and runs on the fake's clock, one
// new issue an hour: tokens are made again 5 minutes before they expire,
// and on a 401 (a token GitHub expired early). Every issue is merged, each
// claimed once; nothing fails. Three hours by default (each way of making
// a token again, then the first way after the second); twelve under
// CLAUDOPILOT_SOAK=1. The hours run one after another, so twelve were the
// package's longest test (63 s alone, 195 s in the package at load 33-40).
// By default two hours (a token made again before it expires, under a
// running queue); each way of making one again, in both orders, is
// TestAppTokenMadeAgainAtTheClient, without a run.
func TestOvernightOnAppTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := appKey(t)
	e.fake.AddApp(ghfake.App{ID: "4242", Installation: "77", Key: &key.PublicKey, Name: "claudopilot"})
	src := AppToken{AppID: "4242", Installation: "77", Key: key, APIURL: e.fake.URL(), Clock: e.clock}
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) {
		c.GitHub = e.github(func(g *GitHubConfig) { g.Token, g.Tokens = "", src })
		c.Token = ""
		c.Once = false
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := runQueue(ctx, q, harness{})
		done <- err
	}()
	hours := 2
	if soak() {
		hours = 12
	}
	// Each stored comment wakes the check for the driver's own end; the
	// timer only bounds a run that never merges.
	commented := make(chan struct{}, 1)
	e.fake.OnComment(func(int) {
		select {
		case commented <- struct{}{}:
		default:
		}
	})
	var nums []int
	for h := 0; h < hours; h++ {
		n := e.fake.NewIssue("alice", fmt.Sprintf("hour %d", h), "work", []string{"agent-ready"}, "")
		nums = append(nums, n)
		bound := time.NewTimer(2 * time.Minute)
		for commentsWith(e.issue(n), "Merged in pull request") == 0 { // the driver's own end
			select {
			case <-commented:
			case <-bound.C:
				t.Fatalf("hour %d: #%d not merged\n%s\n%s", h, n, log, dump(e, n))
			}
		}
		bound.Stop()
		if h%2 == 0 {
			e.clock.Advance(56 * time.Minute) // inside the 5 minutes before expiry: made again first
		} else {
			e.fake.ExpireTokens() // a 401: made again, and the request sent once more
			e.clock.Advance(30 * time.Minute)
		}
	}
	cancel()
	<-done
	for _, n := range nums {
		is := e.issue(n)
		if c := commentsWith(is, "claudopilot:claim "); c != 1 || is.State != "closed" {
			t.Errorf("#%d: %s, %d claim comments\n%s", n, is.State, c, dump(e, n))
		}
	}
	sum := q.Summary()
	if sum.Count(Merged) != hours || sum.Count(Blocked) != 0 || sum.Count(Errored) != 0 {
		t.Errorf("summary %+v\n%s", sum, log)
	}
	if m := e.fake.Minted(); m < hours {
		t.Errorf("%d tokens minted over %d hours", m, hours)
	}
	if strings.Contains(log.String(), "ghs_fake") {
		t.Errorf("a token shows in the log:\n%s", log)
	}
}

// TestAppTokenMadeAgainAtTheClient is TestOvernightOnAppTokens's token
// lifetimes without a run: a client on an app's installation tokens makes
// one again 5 minutes before it expires (no 401 seen), and on a 401 (a
// token GitHub expired early) makes one and sends the request once more;
// then the first way again, after the second. Every read succeeds.
func TestAppTokenMadeAgainAtTheClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := appKey(t)
	e.fake.AddApp(ghfake.App{ID: "4242", Installation: "77", Key: &key.PublicKey, Name: "claudopilot"})
	src := AppToken{AppID: "4242", Installation: "77", Key: key, APIURL: e.fake.URL(), Clock: e.clock}
	g := e.github(func(c *GitHubConfig) { c.Token, c.Tokens = "", src })
	n := e.fake.NewIssue("alice", "read all night", "x", []string{"agent-ready"}, "")
	ctx := context.Background()
	for i, step := range []struct {
		what   string
		before func()
		minted int // in all, after the read
		unauth int // 401 answers to this step's read, each sent once more
	}{
		{"the first read", func() {}, 1, 0},
		{"56 minutes on", func() { e.clock.Advance(56 * time.Minute) }, 2, 0},
		{"expired early", e.fake.ExpireTokens, 3, 1},
		{"56 minutes after the 401", func() { e.clock.Advance(56 * time.Minute) }, 4, 0},
	} {
		step.before()
		before := len(e.fake.Requests())
		if _, err := g.Issue(ctx, n); err != nil {
			t.Fatalf("step %d, %s: %v", i, step.what, err)
		}
		unauth, reads := 0, 0
		for _, r := range e.fake.Requests()[before:] {
			if r.Method == "GET" && strings.HasSuffix(r.Path, fmt.Sprintf("/issues/%d", n)) {
				reads++
				if r.Status == 401 {
					unauth++
				}
			}
		}
		if e.fake.Minted() != step.minted || unauth != step.unauth || reads != 1+step.unauth {
			t.Errorf("step %d, %s: %d tokens minted in all, %d reads answered 401 of %d; want %d minted, %d of %d",
				i, step.what, e.fake.Minted(), unauth, reads, step.minted, step.unauth, 1+step.unauth)
		}
	}
}

// TestTokenCommand: GH_APP_TOKEN_CMD prints a bare token (taken to expire
// an hour later) or GitHub's JSON answer; a failing command says so.
func TestTokenCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &vclock{}
	ctx := context.Background()
	tok, exp, err := CommandToken{Cmd: "echo ghs_bare123", Dir: dir, Clock: c}.Token(ctx)
	if err != nil || tok != "ghs_bare123" || exp.Sub(c.Now()) < 59*time.Minute {
		t.Errorf("bare: %q %v %v", tok, exp, err)
	}
	tok, exp, err = CommandToken{Cmd: `echo '{"token":"ghs_js","expires_at":"2030-01-02T03:04:05Z"}'`, Dir: dir}.Token(ctx)
	if err != nil || tok != "ghs_js" || exp.Year() != 2030 {
		t.Errorf("json: %q %v %v", tok, exp, err)
	}
	if _, _, err := (CommandToken{Cmd: "echo nope >&2; exit 3", Dir: dir}).Token(ctx); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("failing command: %v", err)
	}
	key := appKey(t)
	p := filepath.Join(dir, "key.pem")
	os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	if k, err := LoadAppKey(p); err != nil || !k.Equal(key) {
		t.Errorf("LoadAppKey: %v", err)
	}
	if _, err := LoadAppKey(filepath.Join(dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "GH_APP_PRIVATE_KEY_FILE") {
		t.Errorf("missing key: %v", err)
	}
}

// The fetch and push credential is the client's current token: with a
// GitHub App, the installation token the client made last, made again as
// it nears its expiry (not the clone's own credential helper).
func TestCredentialIsTheCurrentToken(t *testing.T) {
	t.Parallel()
	c := &vclock{}
	n := 0
	src := tokenFunc(func(context.Context) (string, time.Time, error) {
		n++
		return fmt.Sprintf("ghs_app%d", n), c.Now().Add(time.Hour), nil
	})
	g, err := NewGitHub(GitHubConfig{Owner: "o", Repo: "r", Tokens: src, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if u, p, err := g.Credential(ctx); err != nil || u != "x-access-token" || p != "ghs_app1" {
		t.Errorf("Credential = %q %q %v, want x-access-token ghs_app1", u, p, err)
	}
	c.Sleep(ctx, 56*time.Minute)
	if _, p, _ := g.Credential(ctx); p != "ghs_app2" {
		t.Errorf("near expiry the credential is %q, want the new ghs_app2", p)
	}
}

type tokenFunc func(context.Context) (string, time.Time, error)

func (f tokenFunc) Token(ctx context.Context) (string, time.Time, error) { return f(ctx) }

// testAppKey is the app's RSA key of every test here, made once per test
// binary: a 2048-bit key costs a test a tenth of a second or more of CPU.
var testAppKey struct {
	once sync.Once
	key  *rsa.PrivateKey
	err  error
}

// appKey is testAppKey, made on first use.
func appKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	testAppKey.once.Do(func() { testAppKey.key, testAppKey.err = rsa.GenerateKey(rand.Reader, 2048) })
	if testAppKey.err != nil {
		t.Fatal(testAppKey.err)
	}
	return testAppKey.key
}
