package secret

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/worktree"
)

// rulesOf lists the rules that hit line, sorted, joined by spaces.
func rulesOf(line string) string {
	var rs []string
	for _, h := range runHits([]string{line}) {
		if !slices.Contains(rs, h.rule) {
			rs = append(rs, h.rule)
		}
	}
	slices.Sort(rs)
	return strings.Join(rs, " ")
}

func TestRules(t *testing.T) {
	for _, tc := range []struct{ line, rules string }{
		{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY1234567890", "secret-assignment"},
		{"export API_TOKEN='a8f3k29dk3l0qpz7'", "secret-assignment"},
		{"  db_password: Hx7$kq", ""}, // short and a $: a reference
		{"password: s3cr3tPassw0rd!x", "secret-assignment"},
		{"aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "aws-access-key-id"},
		{"token := ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github-token secret-assignment"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", "private-key"},
		{"-----BEGIN RSA PRIVATE KEY-----", "private-key"},
		{"key: sk-ant-api03-abcdefghijklmnopqrstu", "api-key secret-assignment"},
		// #22 §1: the forms that walked around the scan.
		{`{"db":{"password":"Hx7kq9Lm2p"}}`, "secret-field"},
		{`{"service": {"api_key": "q8Zt2LmWx0Pv"}, "n": 1}`, "secret-assignment"},
		{"DB_PASS=s3cr3tP4ssw0rd", "secret-assignment"},
		{"ADMIN_PWD=Zq81mLx0Vv2k", "secret-assignment"},
		{"SIGNING_SECRET: 7f3kd9QmZ1xw", "secret-assignment"},
		{"  - password: hunter22", "secret-field"},
		{`CACHE_KEY = "qZxWvUtSrQpOnMlK"`, "high-entropy"},
		{"creds: Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ==", "github-token"},       // base64 of a ghp_ token
		{"data: QVdTX1NFQ1JFVF9BQ0NFU1NfS0VZPXdKYWxyWFV0bkZFTUk3SzdNREVORw", "secret-assignment"}, // base64 of an assignment, URL-safe, no padding
		{"MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Zh8Y0Rkz7yV7cX5i2Fz7Oeg1", "private-key"},       // a PEM body's first line, no header
		{`{"type":"user","content":"env: API_KEY=q8Zt2LmWx0Pv\nDB_PASS=s3cr3tP4ssw0rd"}`, "secret-assignment"},
		{`{"type":"tool_result","content":"{\"db\":{\"password\":\"hunter22\"}}"}`, "secret-field"},
		// Not secrets.
		{"CACHE_KEY=users", ""},
		{"API_TOKEN=${API_TOKEN}", ""},
		{"TOKEN_URL=https://auth.example.com/oauth2/token1", ""},
		{"PASSWORD_MIN_LENGTH=12", ""},
		{"SECRET_KEY=changeme-changeme-1", ""},
		{"apiKey := os.Getenv(\"API_KEY\")", ""},
		{"tokens are counted in task-list order", ""},
		{"-----BEGIN PUBLIC KEY-----", ""},
		{`"token": "GITHUB_TOKEN"`, ""},
		{`"password_file": "/run/secrets/db.txt"`, ""},
		{`"token": "accessToken"`, ""},
		{`sortKey: "createdAt"`, ""},
		{`"tokenizer": "wordpiece"`, ""},
		{`token := tokenFromEnvironmentVariable`, ""},
		{"TestRunBudgetIgnoresNegativeCostWithManyWords", ""},
		{"MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ", ""}, // a certificate's body
	} {
		if got := rulesOf(tc.line); got != tc.rules {
			t.Errorf("rules of %q = %q, want %q", tc.line, got, tc.rules)
		}
	}
}

// A token split over two lines is found on the first; its halves alone
// are not tokens. A YAML block scalar's value is read under its key.
func TestRunHits(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  string // rule@line
	}{
		{[]string{"t = ghp_abcdefgh", "ijklmnopqrstuvwxyz0123"}, "github-token@0"},
		{[]string{`key = "ghp_abcdefgh" +`, `  "ijklmnopqrstuvwxyz0123"`}, "github-token@0"},
		{[]string{"Z2hwX2FiY2RlZmdoaWpr", "bG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ=="}, "github-token@0"},
		{[]string{"db:", "  password: |", "    Hx7kq9Lm2pQ"}, "secret-field@2"},
		{[]string{"a = 1", "b = 2"}, ""},
	} {
		var got []string
		for _, h := range runHits(tc.lines) {
			got = append(got, fmt.Sprintf("%s@%d", h.rule, h.line))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q: %q, want %q", tc.lines, got, tc.want)
		}
	}
}

func newRepo(t *testing.T) (*worktree.Client, func(msg string, files map[string]string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	env := append(append(os.Environ(), gittest.NoAutoMaintenance()...), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=c", "GIT_COMMITTER_EMAIL=c@example.com")
	cmd := exec.Command("git", "init", "-q", "-b", "main", dir)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	g, err := worktree.Open(context.Background(), dir, env)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(msg string, files map[string]string) string {
		t.Helper()
		for p, c := range files {
			full := filepath.Join(dir, p)
			if c == "" {
				os.Remove(full)
				continue
			}
			os.MkdirAll(filepath.Dir(full), 0o755)
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", msg}} {
			if _, err := g.Git(context.Background(), args...); err != nil {
				t.Fatal(err)
			}
		}
		h, _ := g.Git(context.Background(), "rev-parse", "HEAD")
		return h
	}
	return g, commit
}

// Landing names each added secret by file and line, never its value; a
// secret that a later commit removed is still found in the history; a
// secret already on the base is not the landing's.
func TestLanding(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	base := commit("base", map[string]string{"README.md": "hi\n", "old.env": "API_TOKEN=a8f3k29dk3l0qpz7\n"})
	commit("add", map[string]string{".env": "A=1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY1234567890\n", "sp ace/k.pem": "x\n-----BEGIN RSA PRIVATE KEY-----\n"})
	commit("rm", map[string]string{"gone.txt": "token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"})
	tip := commit("rm2", map[string]string{"gone.txt": ""})
	found, err := Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.String())
	}
	s := strings.Join(got, "\n")
	for _, want := range []string{".env:2: secret-assignment (AWS_SECRET_ACCESS_KEY)", "sp ace/k.pem:2: private-key", "gone.txt:1 (added by commit "} {
		if !strings.Contains(s, want) {
			t.Errorf("findings lack %q:\n%s", want, s)
		}
	}
	if len(found) != 3 || strings.Contains(s, "wJalr") || strings.Contains(s, "ghp_") || strings.Contains(s, "old.env") {
		t.Errorf("findings:\n%s", s)
	}
	if found, err := Landing(ctx, g, tip, tip); err != nil || len(found) != 0 {
		t.Errorf("nothing added: %v, %v", found, err)
	}
}
