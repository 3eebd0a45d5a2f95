package issues

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TokenSource gives the GitHub token: a fixed one (GITHUB_TOKEN), or an
// app installation token that expires after an hour, made again before
// it does (GH_APP_TOKEN_CMD, or minted from GH_APP_ID,
// GH_APP_INSTALLATION_ID and GH_APP_PRIVATE_KEY_FILE).
type TokenSource interface {
	// Token returns a token and when it expires (zero: never).
	Token(ctx context.Context) (token string, expires time.Time, err error)
}

// StaticToken is a token that does not expire.
type StaticToken string

// Token implements TokenSource.
func (t StaticToken) Token(context.Context) (string, time.Time, error) {
	return string(t), time.Time{}, nil
}

// CommandToken runs Cmd (sh -c, in Dir, with Env) and takes what it prints
// as the token: a bare token, taken to expire an hour later (as app
// installation tokens do), or GitHub's own answer, JSON with "token" and
// "expires_at".
type CommandToken struct {
	Cmd   string
	Dir   string
	Env   []string
	Clock Clock
}

// Token implements TokenSource.
func (c CommandToken) Token(ctx context.Context) (string, time.Time, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Cmd)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("GH_APP_TOKEN_CMD: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	text := strings.TrimSpace(string(out))
	var js struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if strings.HasPrefix(text, "{") && json.Unmarshal([]byte(text), &js) == nil && js.Token != "" {
		return js.Token, js.ExpiresAt, nil
	}
	if text == "" || strings.ContainsAny(text, " \t\n") {
		return "", time.Time{}, fmt.Errorf("GH_APP_TOKEN_CMD printed no token (want one line, or JSON with token and expires_at)")
	}
	return text, clockOr(c.Clock).Now().Add(time.Hour), nil
}

// AppToken mints installation tokens for a GitHub App: a JWT signed with
// the app's private key (RS256, issued by the app id, valid 9 minutes),
// then POST /app/installations/{id}/access_tokens, whose answer says when
// the token expires (an hour later).
type AppToken struct {
	AppID, Installation string
	Key                 *rsa.PrivateKey
	APIURL              string // as GitHubConfig.APIURL
	HTTPClient          *http.Client
	Clock               Clock
}

// LoadAppKey reads a GitHub App's private key (PEM, as GitHub gives it).
func LoadAppKey(path string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("GH_APP_PRIVATE_KEY_FILE: %w", err)
	}
	k, err := jwt.ParseRSAPrivateKeyFromPEM(b)
	if err != nil {
		return nil, fmt.Errorf("GH_APP_PRIVATE_KEY_FILE %s: %w", path, err)
	}
	return k, nil
}

// Token implements TokenSource.
func (a AppToken) Token(ctx context.Context) (string, time.Time, error) {
	now := clockOr(a.Clock).Now()
	signed, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer:    a.AppID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)), // GitHub's advice: clocks drift
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}).SignedString(a.Key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign the app's JWT: %w", err)
	}
	base, _, err := apiURLs(a.APIURL)
	if err != nil {
		return "", time.Time{}, err
	}
	u := base.JoinPath("app", "installations", a.Installation, "access_tokens")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Accept", "application/vnd.github+json")
	hc := a.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("mint an installation token: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
		Message   string    `json:"message"`
	}
	_ = json.Unmarshal(body, &out)
	if resp.StatusCode != http.StatusCreated || out.Token == "" {
		return "", time.Time{}, fmt.Errorf("mint an installation token (app %s, installation %s): %d %s", a.AppID, a.Installation, resp.StatusCode, out.Message)
	}
	return out.Token, out.ExpiresAt, nil
}

func clockOr(c Clock) Clock {
	if c == nil {
		return RealClock{}
	}
	return c
}

// refreshBefore is how long before its expiry a token is made again.
const refreshBefore = 5 * time.Minute

// tokens holds the current token of a TokenSource: fetched on first use,
// again refreshBefore its expiry, and on a 401 (forced). Every token it
// ever held is given to the scrubber and kept for the push scan.
type tokens struct {
	src   TokenSource
	clock Clock
	scrub *Scrubber
	log   func(string)

	mu   sync.Mutex
	cur  string
	exp  time.Time
	seen []string
}

func (t *tokens) get(ctx context.Context, force bool, stale string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fresh := t.cur != "" && (t.exp.IsZero() || t.clock.Now().Before(t.exp.Add(-refreshBefore)))
	if fresh && (!force || t.cur != stale) {
		return t.cur, nil // a 401 on an older token: this one is already new
	}
	if force && t.exp.IsZero() && t.cur != "" {
		return t.cur, nil // a fixed token cannot be renewed
	}
	tok, exp, err := t.src.Token(ctx)
	if err != nil {
		return "", err
	}
	if t.cur != "" && t.log != nil {
		t.log(fmt.Sprintf("github: a new installation token (expires %s)", exp.UTC().Format(time.RFC3339)))
	}
	t.cur, t.exp = tok, exp
	t.seen = append(t.seen, tok)
	t.scrub.Add(tok)
	return tok, nil
}

// all is every token held so far.
func (t *tokens) all() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.seen...)
}

// authTransport puts the current token on every request, and after a 401
// makes a new one (where the source can) and sends the request once more.
type authTransport struct {
	base http.RoundTripper
	tok  *tokens
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := a.tok.get(req.Context(), false, "")
	if err != nil {
		return nil, err
	}
	resp, err := a.base.RoundTrip(withToken(req, tok))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	if _, fixed := a.tok.src.(StaticToken); fixed || (req.Body != nil && req.GetBody == nil) {
		return resp, nil
	}
	again, err := a.tok.get(req.Context(), true, tok)
	if err != nil || again == tok {
		return resp, nil
	}
	resp.Body.Close()
	r2 := withToken(req, again)
	if req.GetBody != nil {
		if r2.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return a.base.RoundTrip(r2)
}

func withToken(req *http.Request, tok string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}
