package work

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"
)

// An agent that needs a decision asks: a line starting with NeedsInputMarker
// in its output, or the question in QuestionFile at its worktree's top.
// Either ends the attempt as needs-input (the scheduler waits on the
// user's answer). The file is the agent's, so it is untrusted: read
// without following a link, capped, and removed before anything is
// committed, so it never lands.
const (
	NeedsInputMarker = "CLAUDOPILOT-NEEDS-INPUT:"
	QuestionFile     = ".claudopilot-question"
	// maxQuestion caps a question, in bytes, whatever the agent wrote.
	maxQuestion = 2000
)

// takeQuestion reads and removes the question file in wt. A link, a
// folder or anything but a regular file is removed unread. "" when there
// is none.
func takeQuestion(wt string) (string, error) {
	path := filepath.Join(wt, QuestionFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("question file: %w", err)
	}
	q := ""
	if fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(f, 4*maxQuestion))
			f.Close()
			q = cleanQuestion(string(b))
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return "", fmt.Errorf("remove the question file: %w", err)
	}
	if q == "" {
		q = "(the agent left an empty " + QuestionFile + ")"
	}
	return q, nil
}

// questionIn finds the last question asked in an agent's output: the
// marker at the start of a line, or at the start of a line of text inside
// a JSON event (stream-json, codex --json), where it follows a quote or an
// escaped newline. A marker quoted in backticks (the prompt's own
// instruction, echoed) is not a question.
func questionIn(tail []string) string {
	for i := len(tail) - 1; i >= 0; i-- {
		line := tail[i]
		for at := strings.LastIndex(line, NeedsInputMarker); at >= 0; at = strings.LastIndex(line[:at], NeedsInputMarker) {
			if q := questionAt(line, at); q != "" {
				return q
			}
		}
	}
	return ""
}

// questionAt reads the question of a marker found at line[at:], or "".
func questionAt(line string, at int) string {
	before := strings.TrimRight(line[:at], " \t")
	rest := line[at+len(NeedsInputMarker):]
	switch {
	case before == "":
		return cleanQuestion(rest)
	case strings.HasSuffix(before, `"`), strings.HasSuffix(before, `\n`):
		// Inside a JSON string: up to its end or an escaped newline.
		end := len(rest)
		for i := 0; i < len(rest); i++ {
			if rest[i] == '\\' && i+1 < len(rest) && rest[i+1] == 'n' || rest[i] == '"' {
				end = i
				break
			}
			if rest[i] == '\\' {
				i++
			}
		}
		var s string
		if json.Unmarshal([]byte(`"`+rest[:end]+`"`), &s) != nil {
			s = rest[:end]
		}
		return cleanQuestion(s)
	}
	return ""
}

// cleanQuestion makes an agent's question safe to show in one line: no
// control characters or escape sequences, spaces collapsed, capped.
func cleanQuestion(s string) string {
	s = escapes.ReplaceAllString(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if s == "<question>" || s == "<your question>" {
		return ""
	}
	if len(s) > maxQuestion {
		s = strings.ToValidUTF8(s[:maxQuestion], "") + "…"
	}
	return s
}

// escapes are terminal escape sequences (CSI and OSC).
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?)`)
