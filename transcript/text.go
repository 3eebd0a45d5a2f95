package transcript

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultFold is how many lines of a tool's output (or of the run's
// result, or of reasoning) the text form shows.
const DefaultFold = 4

// WriteText renders entries as text for a terminal or a file, each tool's
// output folded to fold lines (the raw log has the rest).
func WriteText(w io.Writer, entries []Entry, fold int) error {
	for _, e := range entries {
		if _, err := io.WriteString(w, EntryText(e, fold)); err != nil {
			return err
		}
	}
	return nil
}

// EntryText renders one entry as text lines, each ending in a newline.
func EntryText(e Entry, fold int) string {
	var b strings.Builder
	switch e.Kind {
	case Turn:
		b.WriteString("── turn " + itoa(int64(e.Number)))
		if s := e.Figures.String(); s != "" {
			b.WriteString(" · " + s)
		}
		b.WriteString("\n")
	case Text, Plain:
		writeLines(&b, "", e.Text, -1)
	case Thinking:
		writeLines(&b, "~ ", e.Text, fold)
	case Note:
		writeLines(&b, "· ", e.Text, -1)
	case Error:
		writeLines(&b, "! error: ", e.Text, -1)
	case Tool:
		b.WriteString(toolHead(e) + "\n")
		writeLines(&b, "    │ ", e.Output, fold)
	case Result:
		head := "■ " + e.Input
		if e.Failed {
			head += " (error)"
		}
		if s := e.Figures.String(); s != "" {
			head += " · " + s
		}
		b.WriteString(clean(head) + "\n")
		writeLines(&b, "    ", e.Text, fold)
	}
	return b.String()
}

// toolHead is a tool call's first line: its mark, name and input.
func toolHead(e Entry) string {
	mark := "▸ "
	if e.Failed {
		mark = "✗ "
	}
	head := mark + e.Tool
	if e.Tool == "" {
		head += "(the result of a call the log no longer holds)"
	}
	if e.Input != "" {
		head += ": " + e.Input
	}
	if e.Pending {
		head += " (running)"
	}
	return clean(head)
}

// writeLines writes s's lines, each after prefix, at most fold of them
// (-1: all), then how many were left out.
func writeLines(b *strings.Builder, prefix, s string, fold int) {
	s = strings.TrimRight(s, "\n")
	if strings.TrimSpace(s) == "" {
		return
	}
	lines := strings.Split(s, "\n")
	shown := lines
	if fold >= 0 && len(lines) > fold {
		shown = lines[:fold]
	}
	for _, l := range shown {
		b.WriteString(prefix + clean(l) + "\n")
	}
	if n := len(lines) - len(shown); n > 0 {
		b.WriteString(strings.Repeat(" ", 4) + "… " + plural(n, "more line") + "\n")
	}
}

// String renders what figures are known: "1,234 in · 56 out · 900
// cached · $0.0123 · 12 turns · 1m30s"; "" when none is.
func (f *Figures) String() string {
	if f == nil {
		return ""
	}
	var parts []string
	add := func(v *int64, unit string) {
		if v != nil && (*v != 0 || unit == "in" || unit == "out") {
			parts = append(parts, group(*v)+" "+unit)
		}
	}
	add(f.InputTokens, "in")
	add(f.OutputTokens, "out")
	add(f.CacheRead, "cached")
	add(f.CacheWrite, "cache write")
	if f.CostUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.4f", *f.CostUSD))
	}
	if f.Turns != nil {
		parts = append(parts, plural(int(*f.Turns), "turn"))
	}
	if f.DurationMS != nil {
		parts = append(parts, (time.Duration(*f.DurationMS) * time.Millisecond).Round(time.Second).String())
	}
	return strings.Join(parts, " · ")
}

// group writes n with thousands separators: 1234567 → "1,234,567".
func group(n int64) string {
	s := itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(int64(n)) + " " + what + "s"
}

// clean drops escape sequences and control characters (a \r, a colour
// code, a cursor move): the agent's output must not steer the terminal
// it is read in. A tab becomes spaces.
func clean(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i = skipEscape(s, i)
			continue
		case r == '\t':
			b.WriteString("    ")
		case unicode.IsControl(r) || r == utf8.RuneError || unicode.In(r, unicode.Bidi_Control):
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return strings.TrimRight(b.String(), " ")
}

// skipEscape returns the index after the escape sequence at s[i]: CSI
// (ESC [ … final byte), OSC (ESC ] … BEL or ESC \), or ESC and one byte.
func skipEscape(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch s[j] {
	case '[':
		j++
		for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
			j++
		}
	case ']':
		for j++; j < len(s) && s[j] != 0x07; j++ {
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				j++
				break
			}
		}
	}
	return min(j+1, len(s))
}

// Headline is an entry in one line, for a live table's "now" column: ""
// for an entry not worth one (a turn's figures, a result whose call the
// log no longer holds).
func Headline(e Entry) string {
	var s string
	switch e.Kind {
	case Text, Note:
		s = firstLine(e.Text)
	case Thinking:
		s = strings.Trim(firstLine(e.Text), "*")
	case Tool:
		if e.Tool == "" {
			return ""
		}
		s = e.Tool
		if e.Input != "" {
			s += ": " + e.Input
		}
	case Result:
		r := firstLine(e.Text)
		if r == "" {
			r = e.Input
		}
		s = "result: " + r
	case Error:
		s = "error: " + firstLine(e.Text)
	case Plain:
		lines := strings.Split(strings.TrimRight(e.Text, "\n"), "\n")
		for i := len(lines) - 1; i >= 0 && s == ""; i-- {
			s = strings.TrimSpace(clean(lines[i]))
		}
	}
	return strings.TrimSpace(clean(s))
}
