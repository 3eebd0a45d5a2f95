package work_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/sandbox"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
)

// An agent that asks ends its attempt as needs-input with its question,
// whether it asks by the marker (in a stream-json event, or on a line of
// its own with escape sequences) or by the question file. Its work is
// committed; the question file is removed before that and is on no commit
// of the branch's tip, even when the agent committed it itself. A link
// planted as the question file is removed unread: the question never
// carries what it points at. Without and with the sandbox.
func TestRunNeedsInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ask, want   string
		soakInBwrap string // the cheaper tests that prove it
		soak        string // the same in both modes
	}{
		{ask: "marker", want: `Postgres or SQLite for "the store"?`},
		{ask: "plain", want: "which port?", soak: "TestQuestionIn (the marker on a line of its own, its escape sequences dropped) and off/marker and bwrap/marker of this test (an attempt's output read for the marker, with and without the sandbox)"},
		{ask: "file", want: "Which licence: MIT or Apache-2.0?", soakInBwrap: "off/file (the question file read and removed from the branch, on the host, after the agent) and bwrap/marker (a sandboxed agent asks and its attempt ends needs-input)"},
		{ask: "link", want: "(the agent left an empty .claudopilot-question)", soakInBwrap: "off/link (the driver's read of the question file, on the host, after the agent, whatever the agent's sandbox) and TestTakeQuestion"},
	}
	for _, mode := range modes(t) {
		for _, c := range cases {
			t.Run(mode+"/"+c.ask, func(t *testing.T) {
				if why := map[bool]string{true: c.soakInBwrap, false: ""}[mode == sandbox.Bwrap] + c.soak; why != "" && os.Getenv("CLAUDOPILOT_SOAK") != "1" {
					t.Skip("CLAUDOPILOT_SOAK=1 only; proved by " + why)
				}
				t.Parallel()
				f := newFixture(t)
				if mode == sandbox.Bwrap {
					f.sandboxed()
				}
				secret := filepath.Join(f.tmp, "secret")
				f.write(f.tmp, "secret", "hunter2\n")
				f.runner.Agent = hostileAgent(t, "i27-ask.sh")
				f.runner.Env = append(f.runner.Env, "ASK="+c.ask, "RECORD="+filepath.Join(f.tmp, "rec"), "SECRET="+secret)
				o := f.run(job())
				if o.OK || o.Reason != state.ReasonNeedsInput || o.Question != c.want {
					t.Fatalf("outcome %+v, want needs-input asking %q", o, c.want)
				}
				tip := f.rev("auto/p1")
				if !f.hasFile(tip, "work.txt") {
					t.Errorf("the agent's work is not on the branch")
				}
				if f.hasFile(tip, ".claudopilot-question") || exists(filepath.Join(f.wt(), ".claudopilot-question")) {
					t.Errorf("the question file is still on the branch or in the worktree")
				}
				if f.read(secret) != "hunter2\n" {
					t.Errorf("the link's target changed")
				}
			})
		}
	}
}

// The answer: with a resume command and the agent's session, the session
// goes on and its next message is the answer; without, a fresh attempt's
// prompt carries the question and the answer.
func TestRunAnswered(t *testing.T) {
	t.Parallel()
	for _, resume := range []bool{true, false} {
		f := newFixture(t)
		rec := filepath.Join(f.tmp, "rec")
		f.runner.Agent = hostileAgent(t, "i27-ask.sh")
		f.runner.Env = append(f.runner.Env, "ASK=none", "RECORD="+rec)
		if resume {
			f.runner.ResumeCmd = hostileAgent(t, "i27-ask.sh") + " resumed {session}"
		}
		j := job()
		j.Session, j.Question, j.Answer = "sess-1", "which port?", "8080"
		if o := f.run(j); !o.OK {
			t.Fatalf("resume=%v: outcome %+v, want done", resume, o)
		}
		b, err := os.ReadFile(filepath.Join(rec, "p1.prompt"))
		if err != nil {
			t.Fatal(err)
		}
		prompt := string(b)
		if resume {
			if !strings.HasPrefix(prompt, "You asked: which port?\n\nThe answer: 8080\n") || strings.Contains(prompt, "The contract") {
				t.Errorf("the resumed session's message is %q, want the answer alone", prompt)
			}
			if !strings.Contains(f.read(filepath.Join(f.wt(), "work.txt")), "resumed sess-1") {
				t.Errorf("the resume command did not run in the session")
			}
			continue
		}
		if !strings.Contains(prompt, "The contract") || !strings.Contains(prompt, "## Your question, answered") || !strings.Contains(prompt, "    which port?\n") || !strings.Contains(prompt, "    8080\n") {
			t.Errorf("the fresh attempt's prompt lacks the question and answer:\n%s", prompt)
		}
	}
}

// The question in an agent's output: the marker on a line of its own
// (escape sequences and control characters dropped), inside a JSON
// event's text (after a quote or an escaped newline, up to the string's
// end or the next escaped newline), the last one asked; a marker quoted
// in backticks (the prompt's instruction echoed) or a placeholder is
// none. TestRunNeedsInput asks through whole attempts.
func TestQuestionIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, tail, want string }{
		{"plain", "thinking\nCLAUDOPILOT-NEEDS-INPUT: \033[31mwhich port?\033[0m", "which port?"},
		{"stream-json", `{"type":"assistant","message":{"content":[{"type":"text","text":"I read the doc.\nCLAUDOPILOT-NEEDS-INPUT: Postgres or SQLite for \"the store\"?\nI stop here."}]}}`, `Postgres or SQLite for "the store"?`},
		{"after a quote", `{"text":"CLAUDOPILOT-NEEDS-INPUT: tabs or spaces?"}`, "tabs or spaces?"},
		{"the last one", "CLAUDOPILOT-NEEDS-INPUT: first?\nmore\nCLAUDOPILOT-NEEDS-INPUT: second?", "second?"},
		{"echoed instruction", "write `CLAUDOPILOT-NEEDS-INPUT: <question>` on a line", ""},
		{"placeholder", "CLAUDOPILOT-NEEDS-INPUT: <question>", ""},
		{"none", "all done", ""},
	} {
		if got := work.QuestionIn(strings.Split(tc.tail, "\n")); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The question file: a regular file is read (one line) and removed; a
// link is removed unread, its target untouched; none is "".
func TestTakeQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	q := filepath.Join(dir, work.QuestionFile)
	if got, err := work.TakeQuestion(dir); got != "" || err != nil {
		t.Fatalf("no file: %q, %v", got, err)
	}
	os.WriteFile(q, []byte("Which licence:\nMIT or Apache-2.0?\n"), 0o644)
	if got, err := work.TakeQuestion(dir); got != "Which licence: MIT or Apache-2.0?" || err != nil || exists(q) {
		t.Fatalf("a file: %q, %v; still there: %v", got, err, exists(q))
	}
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("hunter2\n"), 0o644)
	os.Symlink(secret, q)
	if got, err := work.TakeQuestion(dir); got != "(the agent left an empty .claudopilot-question)" || err != nil || exists(q) {
		t.Fatalf("a link: %q, %v; still there: %v", got, err, exists(q))
	}
	if b, _ := os.ReadFile(secret); string(b) != "hunter2\n" {
		t.Errorf("the link's target is now %q", b)
	}
}
