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
// it, the attempt logs, the queue's log nor the block comment hold it
// now. In the same run (one queue run for both: issue 23): the agent and
// its supervisor get no GITHUB_TOKEN or GH_TOKEN in their environment,
// and what they print (the token, other secret shapes) reaches GitHub
// only redacted: the one block comment quotes the output with the token
// redacted, and no write to GitHub carries a secret.
func TestFailureLogCarriesNoToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seen, envDump := filepath.Join(e.dir, "seen"), filepath.Join(e.dir, "agent.env")
	var b strings.Builder
	for _, f := range secretForms(token) {
		b.WriteString("echo 'my token is " + f + "'\n")
	}
	agent := e.script("leak.sh", "if [ \"$CLAUDOPILOT_ROLE\" = supervisor ]; then cp \"$CLAUDOPILOT_FAILURE_LOG\" '"+seen+"'; fi\n"+
		"env >> '"+envDump+"'\n"+b.String()+
		`echo "GITHUB_TOKEN=[$GITHUB_TOKEN] GH_TOKEN=[$GH_TOKEN]"
echo "also ghp_abcdefghijklmnopqrstuvwxyz0123456789 and sk-ant-api03-abcdefghijklmnopqrstu"
echo "Authorization: Bearer `+token+`"
exit 1
`)
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
	is := e.issue(n)
	for _, c := range is.Comments {
		texts["comment"] += c.Body
	}
	for name, text := range texts {
		for _, f := range secretForms(token) {
			if strings.Contains(text, f) {
				t.Errorf("%s holds %q:\n%s", name, f, text)
			}
		}
	}
	if !hasLabel(is, "agent-blocked") || hasLabel(is, "agent-running") {
		t.Errorf("labels %v", is.Labels)
	}
	var block string
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "could not finish") {
			block = c.Body
		}
	}
	if commentsWith(is, "could not finish") != 1 || !strings.Contains(block, "my token is "+Redacted) || !strings.Contains(block, "exited 1") {
		t.Errorf("block comment:\n%s", dump(e, n))
	}
	env, err := os.ReadFile(envDump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(env), "CLAUDOPILOT_ROLE=") != 2 {
		t.Errorf("want the worker's and the supervisor's environment:\n%s", env)
	}
	if strings.Contains(string(env), token) || strings.Contains(string(env), "GITHUB_TOKEN=") || strings.Contains(string(env), "GH_TOKEN=") {
		t.Errorf("an agent's environment holds the token:\n%s", env)
	}
	for _, r := range e.fake.Requests() {
		if r.Method != "GET" && (strings.Contains(r.Body, token) || strings.Contains(r.Body, "ghp_abc") || strings.Contains(r.Body, "sk-ant-")) {
			t.Errorf("a secret was posted: %s %s\n%s", r.Method, r.Path, r.Body)
		}
	}
	if !strings.Contains(string(failure), "my token is "+Redacted) || len(logs) < 2 {
		t.Errorf("failure log:\n%s\nlogs %v", failure, logs)
	}
}
