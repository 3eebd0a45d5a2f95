package issues

import (
	"context"
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/secret"
)

// testSecret has bytes that URL-escaping changes, so each form differs.
const testSecret = "p@ss/w0rd+Zq8 x=1&y"

// secretForms: raw, URL-escaped, base64-encoded (#22 §2).
func secretForms(vs ...string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v, url.QueryEscape(v), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	return out
}

// What the GitHub client posts (comments, pull request titles and
// bodies) goes through the driver's funnel: the token and the values of
// the driver's secret-named variables, in every form, never reach GitHub.
func TestGitHubPostsThroughTheFunnel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	funnel := secret.NewRedactor([]string{"DEPLOY_PASSWORD=" + testSecret}, token)
	g := e.github(func(c *GitHubConfig) { c.Scrubber = ScrubberFor(funnel) })
	ctx := context.Background()
	forms := secretForms(testSecret, token)
	text := "said " + strings.Join(forms, " and ")
	n := e.fake.NewIssue("alice", "t", "b", nil, "")
	if _, err := g.PostComment(ctx, n, text); err != nil {
		t.Fatal(err)
	}
	e.originCommit("feature", "f.txt", "f\n", "f")
	if _, err := g.CreatePR(ctx, "feature", "main", "title "+text, "body "+text, true); err != nil {
		t.Fatal(err)
	}
	posted := 0
	for _, r := range e.fake.Requests() {
		if r.Method != "POST" {
			continue
		}
		posted++
		for _, f := range forms {
			if strings.Contains(r.Body, f) || strings.Contains(r.Body, strings.ReplaceAll(f, "&", `\u0026`)) {
				t.Errorf("%s %s posts %q:\n%s", r.Method, r.Path, f, r.Body)
			}
		}
	}
	if posted < 2 {
		t.Errorf("%d posts", posted)
	}
}

// #22 §2's regression: an issue's agent that prints the GitHub token
// (raw, URL-escaped, base64) and fails; the failure log handed to its
// supervisor (CLAUDOPILOT_FAILURE_LOG) held the token verbatim. Neither
// it, the attempt logs nor the block comment hold it now.
func TestFailureLogCarriesNoToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seen := filepath.Join(e.dir, "seen")
	var b strings.Builder
	for _, f := range secretForms(token) {
		b.WriteString("echo 'my token is " + f + "'\n")
	}
	agent := e.script("leak.sh", "if [ \"$CLAUDOPILOT_ROLE\" = supervisor ]; then cp \"$CLAUDOPILOT_FAILURE_LOG\" '"+seen+"'; fi\n"+b.String()+"exit 1\n")
	n := e.fake.NewIssue("alice", "leak", "Print the token.", []string{"agent-ready"}, "")
	log := &syncBuf{}
	q := e.queue("w", log, func(c *Config) { c.Agent, c.Supervisor = agent, agent })
	if sum := runWith(t, q, log, harness{maxSuper: 1}); sum.Count(Blocked) != 1 {
		t.Fatalf("summary %+v\n%s", sum, log)
	}
	failure, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("the supervisor did not run: %v\n%s", err, log)
	}
	texts := map[string]string{"failure log": string(failure), "queue log": log.String()}
	logs, _ := filepath.Glob(filepath.Join(e.dir, "w", ".claudopilot", "logs", "*", "*.log"))
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		texts[p] = string(b)
	}
	for _, c := range e.issue(n).Comments {
		texts["comment"] += c.Body
	}
	for name, text := range texts {
		for _, f := range secretForms(token) {
			if strings.Contains(text, f) {
				t.Errorf("%s holds %q:\n%s", name, f, text)
			}
		}
	}
	if !strings.Contains(string(failure), "my token is "+Redacted) || len(logs) < 2 {
		t.Errorf("failure log:\n%s\nlogs %v", failure, logs)
	}
}
