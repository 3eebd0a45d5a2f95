package progress

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/runview"
	"github.com/claudopilot/claudopilot/transcript"
)

// The live table on a terminal. Every line is cut to the terminal's width
// less one column, read at each redraw, so nothing wraps (a wrapped line
// would break the count of lines to move up, and stale tables would
// scroll up the screen); after a resize the old table is cleared by the
// rows it takes at the new width.

// defaultWidth is used when the terminal's width cannot be read.
const defaultWidth = 80

func (p *View) width() int {
	if p.s.Width != nil {
		if w := p.s.Width(); w > 0 {
			return w
		}
	}
	return defaultWidth
}

// waitingOnYou is the state shown for a phase whose agent asked a
// question no one has answered yet.
const waitingOnYou = runview.WaitingOnYou

// rows are the nodes the table lists: an issue only offered (nothing ran
// yet) gets its row when it starts.
func (p *View) rows() []*runview.Node {
	var out []*runview.Node
	for _, n := range p.fold.Nodes() {
		if !n.Offered {
			out = append(out, n)
		}
	}
	return out
}

// logFor is the log the table tails for a node: the running attempt's, or
// the last one named.
func (p *View) logFor(n *runview.Node) string {
	switch {
	case !n.Started.IsZero() || n.Log == "" && n.Attempt > 0:
		return p.logOf(n.ID, n.Role, n.Attempt)
	}
	return n.Log
}

// tableLines renders the table for a terminal width columns wide: each
// line's visible text has at most width-1 runes.
func (p *View) tableLines(width int, now time.Time) []string {
	limit := max(width-1, 10)
	rows := p.rows()
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Shown()]++
	}
	head := fmt.Sprintf("claudopilot  %s  %s", now.Sub(p.start).Round(time.Second), shownCounts(counts))
	lines := []string{cut(head, limit)}
	idW := 0
	for _, r := range rows {
		idW = max(idW, utf8.RuneCountInString(r.ID))
	}
	idW = min(idW, max(8, limit/4))
	roleW := 0
	for _, r := range rows {
		if r.Attempt > 0 {
			roleW = max(roleW, len(fmt.Sprintf("%s #%d", r.Role, r.Attempt)))
		}
	}
	// Narrow terminals drop the attempt and the elapsed time first.
	withRole, withTime := limit >= 64 && roleW > 0, limit >= 48
	for _, r := range rows {
		// A long roadmap shows only what is moving.
		if len(rows) > 15 && (r.State == string(manifest.Merged) || r.State == string(manifest.Pending)) {
			continue
		}
		st := r.Shown()
		var b strings.Builder
		b.WriteString("  " + pad(cut(r.ID, idW), idW) + "  ")
		stateAt := utf8.RuneCountInString(b.String())
		b.WriteString(pad(st, 8))
		if withRole {
			role := ""
			if r.Attempt > 0 {
				role = fmt.Sprintf("%s #%d", r.Role, r.Attempt)
			}
			b.WriteString(" " + pad(cut(role, roleW), roleW))
		}
		if withTime {
			el := ""
			if r.State == string(manifest.Running) && !r.Since.IsZero() && !r.Stopped {
				el = now.Sub(r.Since).Round(time.Second).String()
			}
			b.WriteString(fmt.Sprintf(" %5s", cut(el, 5)))
		}
		line := b.String()
		if room := limit - utf8.RuneCountInString(line) - 2; room > 0 {
			if d := p.detail(r, st, now); d != "" {
				line += "  " + cut(d, room)
			}
		}
		line = cut(strings.TrimRight(line, " "), limit)
		lines = append(lines, colorAt(p.s.Color, line, stateAt, st))
	}
	return lines
}

// detail is what the last column says about a row.
func (p *View) detail(r *runview.Node, st string, now time.Time) string {
	switch {
	case !r.Until.IsZero() && r.Until.After(now):
		return fmt.Sprintf("%s, %s left", r.Note, r.Until.Sub(now).Round(time.Second))
	case st == "gate" && r.Note == "merging":
		return "checking the merge commit"
	case st == "gate":
		return "checking " + string(r.Role) + "'s work"
	case len(r.WaitFiles) > 0 && (st == "waiting" || strings.HasPrefix(r.Note, "wait")):
		return "uncommitted " + strings.Join(r.WaitFiles, ", ") + " in the base checkout: commit or stash it"
	case st == "stopped":
		return "interrupted; `claudopilot run` resumes it"
	case st == "merging":
		return "" // the state says it all
	case st == "running" && p.logFor(r) != "":
		if tail, err := proc.TailFile(p.logFor(r), 40); err == nil {
			if d := lastReadable(tail); d != "" {
				return d
			}
		}
	}
	return clean(r.Note)
}

// lastReadable is the newest line of an agent's log worth showing, as the
// transcript reads it (an agent event's text or the tool it calls; plain
// output as it is, without control characters).
func lastReadable(lines []string) string {
	p := transcript.NewParser()
	for _, l := range lines {
		p.Feed(l)
	}
	es := p.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		if h := transcript.Headline(es[i]); h != "" {
			return h
		}
	}
	return ""
}

// clean drops escape sequences and control characters (a \r, a colour
// code) that would move the cursor inside the table.
func clean(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			// Skip an escape sequence: ESC [ … final byte, or ESC x.
			j := i + 1
			if j < len(s) && s[j] == '[' {
				j++
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
			}
			i = min(j+1, len(s))
			continue
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == utf8.RuneError:
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return strings.TrimSpace(b.String())
}

// cut shortens s to at most n runes, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return string([]rune(s)[:max(n, 0)])
	}
	return string([]rune(s)[:n-1]) + "…"
}

func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// colorAt colours the state word of a rendered line, at rune offset at.
func colorAt(on bool, line string, at int, st string) string {
	rs := []rune(line)
	if !on || at+len(st) > len(rs) {
		return line
	}
	return string(rs[:at]) + ColorOnly(true, string(rs[at:at+len(st)])) + string(rs[at+len(st):])
}

// shownCounts is the header's count per shown state, in a fixed order.
func shownCounts(c map[string]int) string {
	var parts []string
	for _, s := range []string{"merged", "running", "gate", "merging", "waiting", waitingOnYou, "stopped", "pending", "failed", "blocked"} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// rowsTaken is how many terminal rows lines of these widths take at width.
func rowsTaken(widths []int, width int) int {
	n := 0
	for _, w := range widths {
		n += max(1, (w+width-1)/width)
	}
	return n
}
