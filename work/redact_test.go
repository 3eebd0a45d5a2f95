package work_test

import (
	"encoding/base64"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
)

// testSecret has bytes that URL-escaping changes, so each form differs.
const testSecret = "p@ss/w0rd+Zq8 x=1&y"

// secretForms are the forms #22 §2 asks each redaction site be tested
// with: raw, URL-escaped, base64-encoded.
func secretForms(v string) []string {
	return []string{v, url.QueryEscape(v), base64.StdEncoding.EncodeToString([]byte(v))}
}

// printForms is shell that prints each form on a line of its own.
func printForms(v string) string {
	var b strings.Builder
	for _, f := range secretForms(v) {
		b.WriteString("printf 'said %s\\n' '" + f + "'\n")
	}
	return b.String()
}

// The funnel reaches every log of an attempt: the agent's, the gate's,
// and the failure log a supervisor is handed, also for a log written
// without it (#22 §2: the queue's failure log held the token verbatim).
func TestAttemptLogsAreRedacted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.runner.Redact = secret.NewRedactor([]string{"DEPLOY_PASSWORD=" + testSecret})
	f.runner.Agent = f.agent(printForms(testSecret) + doneBody)
	j := job()
	j.Gate = printForms(testSecret) + "exit 1"
	o := f.run(j)
	if o.Reason != state.ReasonGate {
		t.Fatalf("outcome %+v", o)
	}
	gateLog := f.layout.LogPath("p1", "gate", 1)
	// An older log, written before the funnel knew the value.
	old := filepath.Join(f.tmp, "old.log")
	f.write(f.tmp, "old.log", "said "+strings.Join(secretForms(testSecret), "\nsaid ")+"\n")
	seen := filepath.Join(f.tmp, "seen.log")
	f.runner.Super = f.agent(`cp "$CLAUDOPILOT_FAILURE_LOG" '` + seen + `'` + "\nexit 1\n")
	for _, failing := range []string{o.LogPath, old} {
		j := job()
		j.Role, j.Attempt, j.Failure, j.FailureLog = state.Supervisor, 1, state.ReasonGate, failing
		f.run(j)
		for name, p := range map[string]string{"attempt log": o.LogPath, "gate log": gateLog, "failure log of " + failing: seen} {
			text := f.read(p)
			for _, form := range secretForms(testSecret) {
				if strings.Contains(text, form) {
					t.Errorf("%s holds %q:\n%s", name, form, text)
				}
			}
			if !strings.Contains(text, "said "+secret.Redacted) {
				t.Errorf("%s:\n%s", name, text)
			}
		}
	}
}
