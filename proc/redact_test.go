package proc

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/secret"
)

// testSecret has bytes that URL-escaping changes, so each form differs.
const testSecret = "p@ss/w0rd+Zq8 x=1&y"

// forms are the ways #22 §2 asks each redaction site to be tested with.
func forms(v string) []string {
	return []string{v, url.QueryEscape(v), base64.StdEncoding.EncodeToString([]byte(v))}
}

// The log and the tail never hold a secret the funnel knows, in any form,
// even written in pieces that split it (#22 §2: attempt logs, gate logs).
func TestOutputIsRedacted(t *testing.T) {
	fs := forms(testSecret)
	var script strings.Builder
	for _, f := range fs {
		// printf in two pieces: the value is cut between writes.
		h := len(f) / 2
		script.WriteString("printf '%s' '" + f[:h] + "'; printf '%s\\n' '" + f[h:] + "'; ")
	}
	script.WriteString("printf 'no newline at the end %s' '" + fs[0] + "'")
	s, _ := spec(t, script.String())
	s.Redact = secret.NewRedactor([]string{"DEPLOY_PASSWORD=" + testSecret})
	r := run(t, s)
	if r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("got %+v", r)
	}
	log := readFile(t, s.LogPath)
	tail := strings.Join(r.Tail, "\n")
	for _, f := range fs {
		if strings.Contains(log, f) || strings.Contains(tail, f) {
			t.Errorf("%q survived:\nlog:\n%s\ntail:\n%s", f, log, tail)
		}
	}
	if strings.Count(log, secret.Redacted) != 4 || !strings.Contains(log, "no newline at the end "+secret.Redacted) {
		t.Errorf("log:\n%s", log)
	}
}
