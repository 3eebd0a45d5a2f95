package engine

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/scheduler"
)

// One funnel, built from the driver's environment and the queue's token,
// reaches the events (every listener: --json, the web page, the
// notifier) and the notes and warnings, each with a secret raw,
// URL-escaped or base64-encoded (#22 §2).
func TestFunnelReachesEventsAndNotes(t *testing.T) {
	pw, tok := "p@ss/w0rd+Zq8 x=1&y", "tok-3f9a8b7c6d5e4f3a"
	var forms []string
	for _, v := range []string{pw, tok} {
		forms = append(forms, v, url.QueryEscape(v), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	e := &Engine{}
	var notes bytes.Buffer
	log := logWriter{e, &notes}
	qs := &QueueSetup{Cfg: issues.Config{Token: tok}, GitHub: issues.GitHubConfig{Token: tok}}
	e.funnel([]string{"HOME=/root", "DEPLOY_PASSWORD=" + pw}, qs)
	if qs.GitHub.Scrubber.Redactor() != e.redact {
		t.Error("the GitHub client does not get the funnel")
	}
	in := make(chan scheduler.Event, len(forms))
	var heard []scheduler.Event
	out := fanOut(in, e.redact, func(ev scheduler.Event) { heard = append(heard, ev) })
	for _, f := range forms {
		in <- scheduler.Event{Kind: scheduler.EvExit, Phase: "p", Detail: "gate said " + f}
		log.Write([]byte("claudopilot: warning: " + f + "\n"))
	}
	close(in)
	var got []scheduler.Event
	for ev := range out {
		got = append(got, ev)
	}
	if len(got) != len(forms) || len(heard) != len(forms) {
		t.Fatalf("%d events out, %d heard", len(got), len(heard))
	}
	for i := range got {
		if got[i].Detail != "gate said [REDACTED]" || heard[i].Detail != got[i].Detail {
			t.Errorf("event %d: %q, heard %q", i, got[i].Detail, heard[i].Detail)
		}
	}
	for _, f := range forms {
		if strings.Contains(notes.String(), f) {
			t.Errorf("the notes hold %q:\n%s", f, notes.String())
		}
	}
	if strings.Count(notes.String(), "[REDACTED]") != len(forms) {
		t.Errorf("notes:\n%s", notes.String())
	}
}
