package secret

import (
	"strings"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// A run of consecutive added lines is read as a whole, for what spans
// lines: a token split over two, a YAML block scalar's value.

// lineHit is a hit on one line of a run; line is the index in the run.
type lineHit struct {
	hit
	line int
	// also: the hit spans the next line too (split over two lines).
	also bool
}

// runHits finds the secrets in consecutive lines.
func runHits(lines []string) []lineHit {
	var out []lineHit
	for i, l := range lines {
		for _, h := range lineHits(l) {
			out = append(out, lineHit{hit: h, line: i})
		}
		if i+1 < len(lines) {
			out = append(out, splitHits(l, lines[i+1], i)...)
			out = append(out, blockHits(l, lines[i+1], i)...)
		}
	}
	return out
}

// splitHits finds a token split over lines a and b: a's last word
// joined to b's first ("ghp_abc" +\n "def…", a base64 run wrapped). Only
// a hit that crosses the join and was not whole in a counts: the rest
// are lineHits'.
func splitHits(a, b string, i int) []lineHit {
	tail := lastWord(strings.TrimRight(a, " \t\r\"'+\\,"))
	head := firstWord(strings.TrimLeft(b, " \t\"'+"))
	if tail == "" || head == "" {
		return nil
	}
	type at struct {
		rule  string
		start int
	}
	whole := map[at]bool{}
	for _, h := range tokenHits(tail) {
		whole[at{h.rule, h.start}] = true
	}
	var out []lineHit
	seen := map[string]bool{}
	for _, h := range tokenHits(tail + head) {
		if h.start < len(tail) && h.end > len(tail) && !seen[h.rule] && !whole[at{h.rule, h.start}] {
			seen[h.rule] = true
			h.detail = "split over two lines"
			out = append(out, lineHit{hit: h, line: i, also: true})
		}
	}
	return out
}

// tokenHits are the hits of a word: shapes and base64 (an assignment
// is not split over lines).
func tokenHits(w string) []hit {
	return base64Hits(w, shapeHits(w, hintMask(w), nil))
}

// lastWord is the run of token characters that ends s.
func lastWord(s string) string {
	i := len(s)
	for i > 0 && tokenChar(s[i-1]) {
		i--
	}
	return s[i:]
}

// firstWord is the run of token characters that starts s.
func firstWord(s string) string {
	i := 0
	for i < len(s) && tokenChar(s[i]) {
		i++
	}
	return s[:i]
}

// blockKey is a YAML key whose value is a block scalar on the lines
// below ("password: |").
var blockKey = lazy.Regexp(`^(\s*)(?:-\s+)?["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*:\s*[|>][-+0-9]*\s*(?:#.*)?$`)

// blockHits reads a YAML block scalar's first line as the value of the
// key on line a.
func blockHits(a, b string, i int) []lineHit {
	if !strings.ContainsAny(a, "|>") || !strings.Contains(a, ":") || hintMask(a)&nameBit == 0 {
		return nil
	}
	m := blockKey().FindStringSubmatch(a)
	if m == nil {
		return nil
	}
	value := strings.TrimSpace(b)
	indent := len(b) - len(strings.TrimLeft(b, " \t"))
	if value == "" || indent <= len(m[1]) {
		return nil
	}
	rule := valueRule(m[2], value, true)
	if rule == "" {
		return nil
	}
	return []lineHit{{hit: hit{rule: rule, detail: m[2], start: indent, end: len(b)}, line: i + 1}}
}

// allowRe is the comment that accepts a known false positive on its line.
var allowRe = lazy.Regexp(`claudopilot:allow-secret((?:[ \t,]+[a-z0-9-]+)+)`)

// allows lists the rules line's allow comment names.
func allows(line string) []string {
	var out []string
	for _, m := range allowRe().FindAllStringSubmatch(line, -1) {
		out = append(out, strings.FieldsFunc(m[1], func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })...)
	}
	return out
}
