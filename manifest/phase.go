package manifest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// parsePhaseLine matches the phase grammar
//
//	[<state>] **<id>** <dash> <title with (key: value) annotations>
//
// on the raw first line of a list item. off is the source offset of line[0].
// ok is false when the line does not start like a phase, i.e. it is an
// ordinary list item or a GFM task item. Once a line does start like a
// phase, every defect is reported rather than the item skipped, because a
// skipped phase is silently never run.
func parsePhaseLine(line []byte, off int) (ph Phase, errs []string, ok bool) {
	word, ok := phaseStart(line)
	if !ok {
		return Phase{}, nil, false
	}
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	ph.State = State(word)
	ph.StateSpan = Span{Off: off + 1, Len: len(word)}
	if !ph.State.Valid() {
		fail("unknown state %q (want pending, running, merged, failed or blocked)", word)
	}

	rest := line[1+len(word)+1:]
	rest = rest[skipBlank(rest, 0):]
	if !bytes.HasPrefix(rest, []byte("**")) {
		fail("missing bold phase id after [%s]: want [state] **id** — title", word)
		return ph, errs, true
	}
	idEnd := bytes.Index(rest[2:], []byte("**"))
	if idEnd < 0 {
		fail("unclosed bold phase id: want [state] **id** — title")
		return ph, errs, true
	}
	ph.ID = string(rest[2 : 2+idEnd])
	if msg := checkID(ph.ID); msg != "" {
		fail("phase id %q %s", ph.ID, msg)
	}

	ph.Title = strings.TrimSpace(string(stripDash(rest[2+idEnd+2:])))
	var aerrs []string
	ph.Deps, ph.Owns, ph.Gate, ph.Est, ph.Lane, aerrs = parseAnnotations(ph.Title)
	for _, e := range aerrs {
		fail("phase %q: %s", ph.ID, e)
	}
	return ph, errs, true
}

// phaseStart reports whether line starts like a phase and returns the
// bracketed word. A valid state in brackets is enough; any other word counts
// only when "**" follows, so "[ ] x", "[x] x" and "[link] text" stay
// ordinary list items while "[pendng] **p**" becomes an error.
func phaseStart(line []byte) (word []byte, ok bool) {
	if len(line) == 0 || line[0] != '[' {
		return nil, false
	}
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return nil, false
	}
	word = line[1:end]
	if State(word).Valid() {
		return word, true
	}
	if !isWord(word) {
		return nil, false
	}
	rest := line[end+1:]
	n := skipBlank(rest, 0)
	if n == 0 || !bytes.HasPrefix(rest[n:], []byte("**")) {
		return nil, false
	}
	return word, true
}

// isWord accepts what could be a mistyped state. "x" and "X" are excluded:
// they are GFM task checkboxes, even when bold text follows.
func isWord(w []byte) bool {
	if len(w) == 0 || string(w) == "x" || string(w) == "X" {
		return false
	}
	for _, r := range string(w) {
		if r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// stripDash removes the separator between id and title. A missing dash is
// accepted (the rest is the title) so that a sloppy line still yields a
// phase.
func stripDash(b []byte) []byte {
	b = b[skipBlank(b, 0):]
	for _, d := range []string{"—", "–"} {
		if r, ok := bytes.CutPrefix(b, []byte(d)); ok {
			return r
		}
	}
	if len(b) == 1 && b[0] == '-' {
		return nil
	}
	if len(b) > 1 && b[0] == '-' && isBlank(b[1]) {
		return b[1:]
	}
	return b
}

var annotationKeys = [...]string{"deps", "owns", "gate", "est", "lane"}

// parseAnnotations extracts (deps: …), (owns: …), (gate: …), (est: …) and (lane: …)
// from anywhere in title. Values run to the balancing ')' so a gate command
// may hold parentheses; backtick code spans are opaque, so "`(deps: x)`" in
// prose is not an annotation and "`echo )`" does not end one.
func parseAnnotations(title string) (deps, owns []string, gate string, est time.Duration, lane string, errs []string) {
	spans := codeSpans(title)
	var seen [len(annotationKeys)]bool
	for i := 0; i < len(title); {
		switch title[i] {
		case '`':
			i = spans.skip(title, i)
			continue
		case '(':
		default:
			i++
			continue
		}
		k := annotationKey(title[i+1:])
		if k < 0 {
			i++
			continue
		}
		key := annotationKeys[k]
		vs := i + 1 + len(key) + 1
		ve, closed := closeParen(title, vs, spans)
		if !closed {
			errs = append(errs, fmt.Sprintf("unclosed (%s: annotation: missing ')'", key))
			return
		}
		i = ve + 1
		if seen[k] {
			errs = append(errs, fmt.Sprintf("duplicate (%s: …) annotation", key))
			continue
		}
		seen[k] = true
		val := strings.TrimSpace(title[vs:ve])
		switch key {
		case "deps":
			deps = splitList(val)
			if len(deps) == 1 && strings.EqualFold(deps[0], "none") {
				deps = nil
			}
			for _, d := range deps {
				if msg := checkID(d); msg != "" {
					errs = append(errs, fmt.Sprintf("dependency %q %s", d, msg))
				}
			}
		case "owns":
			owns = splitList(val)
		case "gate":
			gate = unTick(val)
			if gate == "" {
				errs = append(errs, "empty (gate: ) annotation")
			}
		case "lane":
			lane = unTick(val)
			if msg := checkLane(lane); msg != "" {
				errs = append(errs, fmt.Sprintf("(lane: %s) %s", val, msg))
			}
		case "est":
			var err error
			if est, err = parseEst(val); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	return
}

// annotationKey returns the index in annotationKeys of the key s starts
// with as "<key>:" (any case), or -1.
func annotationKey(s string) int {
	for i, k := range annotationKeys {
		if len(s) > len(k) && s[len(k)] == ':' && strings.EqualFold(s[:len(k)], k) {
			return i
		}
	}
	return -1
}

// closeParen finds the ')' balancing an already opened '(' scanning from i.
func closeParen(s string, i int, spans tickSpans) (int, bool) {
	depth := 1
	for i < len(s) {
		switch s[i] {
		case '`':
			i = spans.skip(s, i)
			continue
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i, true
			}
		}
		i++
	}
	return 0, false
}

// tickSpans maps the start of each backtick run that opens a code span to
// the end of its closing run. Precomputing it keeps scanning linear even on
// lines full of unmatched backticks.
type tickSpans map[int]int

func codeSpans(s string) tickSpans {
	type run struct{ start, n int }
	var runs []run
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		runs = append(runs, run{i, j - i})
		i = j
	}
	if len(runs) < 2 {
		return nil
	}
	spans := tickSpans{}
	next := map[int]run{} // run length -> nearest later run of that length
	for k := len(runs) - 1; k >= 0; k-- {
		r := runs[k]
		if m, ok := next[r.n]; ok {
			spans[r.start] = m.start + m.n
		}
		next[r.n] = r
	}
	return spans
}

// skip returns the index after the backtick run at i, or after the code
// span it opens.
func (t tickSpans) skip(s string, i int) int {
	if e, ok := t[i]; ok {
		return e
	}
	for i < len(s) && s[i] == '`' {
		i++
	}
	return i
}

// splitList splits a comma list, trimming entries and dropping empty ones.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = unTick(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func unTick(v string) string {
	s, e := stripTicks([]byte(v), 0, len(v))
	return v[s:e]
}

// parseEst accepts Go durations ("90m", "1h30m") and bare minutes ("45").
func parseEst(v string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("bad (est: %s): want a positive duration like 45m, 2h, 1h30m or a number of minutes", v)
	}
	if v == "" {
		return bad()
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n > int64(time.Duration(1<<63-1)/time.Minute) {
			return bad()
		}
		return time.Duration(n) * time.Minute, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return bad()
	}
	return d, nil
}

// checkLane says what is wrong with a lane name, or "". Lane names become
// parts of environment names (LANE_<id>_CMD), so they are plain words.
func checkLane(l string) string {
	if l == "" {
		return "names no lane"
	}
	for i, c := range l {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '_')
		if !ok {
			return "is not a lane name (a letter, then letters, digits, - or _)"
		}
	}
	return ""
}
