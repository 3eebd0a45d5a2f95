package transcript

import (
	"io"
	"strings"
)

// TextStream prints a transcript as it grows (`logs --pretty -f`): an
// entry when it appears, and what comes later to one already printed (a
// tool's result, a turn's figures, more plain lines) as lines of their own.
type TextStream struct {
	w    io.Writer
	fold int
	p    *Parser
	// shown is what was printed of each entry: its text's length, and
	// whether its output and figures were.
	shown map[int]shownState
}

type shownState struct {
	text    int
	output  bool
	figures bool
}

// NewTextStream prints to w, tools' output folded to fold lines.
func NewTextStream(w io.Writer, fold int) *TextStream {
	return &TextStream{w: w, fold: fold, p: NewParser(), shown: map[int]shownState{}}
}

// Line reads one line of the log and prints what it adds.
func (s *TextStream) Line(line string) error {
	for _, i := range s.p.Feed(line) {
		if _, err := io.WriteString(s.w, s.delta(i)); err != nil {
			return err
		}
	}
	return nil
}

// delta is what entry i adds to what was printed of it.
func (s *TextStream) delta(i int) string {
	e := s.p.entries[i]
	st, seen := s.shown[i]
	s.shown[i] = shownState{text: len(e.Text), output: e.Output != "", figures: e.Figures != nil}
	if !seen {
		return EntryText(e, s.fold)
	}
	var b strings.Builder
	switch {
	case e.Kind == Plain && len(e.Text) > st.text:
		writeLines(&b, "", strings.TrimPrefix(e.Text[st.text:], "\n"), -1)
	case e.Kind == Tool && e.Output != "" && !st.output:
		b.WriteString("  ⎿ " + toolHead(e) + "\n")
		writeLines(&b, "    │ ", e.Output, s.fold)
	case e.Kind == Tool && e.Failed && !st.output:
		b.WriteString("  ⎿ " + toolHead(e) + "\n")
	case e.Kind == Turn && e.Figures != nil && !st.figures:
		if f := e.Figures.String(); f != "" {
			b.WriteString("── turn " + itoa(int64(e.Number)) + " spent " + f + "\n")
		}
	}
	return b.String()
}
