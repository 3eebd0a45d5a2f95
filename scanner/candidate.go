package scanner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/transcript"
)

// Candidate is one issue a scanner proposes: a JSON line of its output.
type Candidate struct {
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Labels []string `json:"labels,omitempty"`
	// Fingerprint names what was found, the same on a later run that
	// finds the same thing: the dedupe key (with the scanner's name).
	Fingerprint string `json:"fingerprint"`
}

// Bounds on what a candidate may carry: a scanner's output is untrusted.
const (
	maxTitle       = 200
	maxBody        = 32 << 10
	maxLabels      = 5
	maxLabel       = 50
	maxFingerprint = 200
)

// Parse reads a scanner's output: its own lines, and the text of an
// agent's messages when the output is an agent's event stream (Claude
// Code's stream-json, codex's, opencode's), read by package transcript.
// Each line that is exactly one JSON object with a title and a
// fingerprint is a candidate; a line that looks like one but is not valid
// is reported in problems. Tool output the agent read is never a
// candidate.
func Parse(out []byte) (cands []Candidate, problems []string) {
	p := transcript.NewParser()
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), transcript.MaxLine)
	for sc.Scan() {
		p.Feed(sc.Text())
	}
	seen := map[string]bool{}
	for _, e := range p.Entries() {
		if e.Kind != transcript.Text && e.Kind != transcript.Plain {
			continue
		}
		for _, line := range strings.Split(e.Text, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"fingerprint"`) {
				continue
			}
			c, err := parseLine(line)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s", err, clip(line, 120)))
				continue
			}
			if seen[c.Fingerprint] {
				continue
			}
			seen[c.Fingerprint] = true
			cands = append(cands, c)
		}
	}
	return cands, problems
}

// parseLine reads one candidate and checks it.
func parseLine(line string) (Candidate, error) {
	var c Candidate
	d := json.NewDecoder(strings.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return c, fmt.Errorf("not a candidate (%v)", err)
	}
	if d.More() {
		return c, fmt.Errorf("not a candidate (more than one JSON value)")
	}
	c.Title = strings.TrimSpace(c.Title)
	c.Fingerprint = strings.TrimSpace(c.Fingerprint)
	switch {
	case c.Title == "" || strings.ContainsAny(c.Title, "\r\n"):
		return c, fmt.Errorf("a candidate needs a title of one line")
	case utf8.RuneCountInString(c.Title) > maxTitle:
		return c, fmt.Errorf("a candidate's title is at most %d characters", maxTitle)
	case c.Fingerprint == "" || utf8.RuneCountInString(c.Fingerprint) > maxFingerprint || strings.ContainsAny(c.Fingerprint, "\r\n"):
		return c, fmt.Errorf("a candidate needs a fingerprint of one line, at most %d characters", maxFingerprint)
	case len(c.Body) > maxBody:
		return c, fmt.Errorf("a candidate's body is at most %d bytes", maxBody)
	case len(c.Labels) > maxLabels:
		return c, fmt.Errorf("a candidate has at most %d labels", maxLabels)
	}
	for _, l := range c.Labels {
		if strings.TrimSpace(l) == "" || len(l) > maxLabel || strings.ContainsAny(l, "\r\n,") {
			return c, fmt.Errorf("a candidate's label %q is not a label", clip(l, 60))
		}
	}
	return c, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
