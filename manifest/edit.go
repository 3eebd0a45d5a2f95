package manifest

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrUnknownPhase is returned (wrapped) by SetState and Apply for an id that
// is not in the manifest.
var ErrUnknownPhase = errors.New("unknown phase")

// SetState returns a copy of the source with phase id's state word replaced
// by s. Every other byte is unchanged, so hand edits, formatting and line
// endings survive; the receiver is not modified.
func (m *Manifest) SetState(id string, s State) ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("set state of %q: invalid state %q", id, s)
	}
	ph := m.Phase(id)
	if ph == nil {
		return nil, fmt.Errorf("set state of %q: %w", id, ErrUnknownPhase)
	}
	sp := ph.StateSpan
	// Refuse to write through a span that no longer matches the source: the
	// result would corrupt some unrelated token.
	if sp.Off < 0 || sp.Off+sp.Len > len(m.Src) || string(m.Src[sp.Off:sp.Off+sp.Len]) != string(ph.State) {
		return nil, fmt.Errorf("set state of %q: manifest source does not match its parse", id)
	}
	return splice(m.Src, sp, string(s)), nil
}

// SetStatus returns a copy of the source with the file's Status set to v
// (in-progress or complete). Without a Status line it adds one as its own
// paragraph after the first top-level ATX heading, or at the top.
func (m *Manifest) SetStatus(v string) ([]byte, error) {
	if v != "in-progress" && v != "complete" {
		return nil, fmt.Errorf("set status: invalid value %q (want in-progress or complete)", v)
	}
	if m.Status.Line != 0 {
		sp := m.Status.Span
		if sp.Off < 0 || sp.Off+sp.Len > len(m.Src) || string(m.Src[sp.Off:sp.Off+sp.Len]) != m.Status.Value {
			return nil, errors.New("set status: manifest source does not match its parse")
		}
		if sp.Len == 0 {
			return splice(m.Src, sp, " "+v), nil
		}
		return splice(m.Src, sp, v), nil
	}

	nl := "\n"
	if i := bytes.IndexByte(m.Src, '\n'); i > 0 && m.Src[i-1] == '\r' {
		nl = "\r\n"
	}
	line := "**Status:** " + v + nl
	at := m.statusAt
	var ins string
	switch {
	case at > 0:
		// The heading line may be the last one and lack a terminator.
		if at == len(m.Src) && !bytes.HasSuffix(m.Src, []byte("\n")) {
			ins = nl
		}
		ins += nl + line
		if !blankLineAt(m.Src, at) {
			ins += nl
		}
	default:
		// A UTF-8 byte order mark must stay the first bytes of the file.
		if bytes.HasPrefix(m.Src, []byte(bom)) {
			at = len(bom)
		}
		ins = line
		if at < len(m.Src) && !blankLineAt(m.Src, at) {
			ins += nl
		}
	}
	return splice(m.Src, Span{Off: at, Len: 0}, ins), nil
}

// Apply parses src and sets phase id to s. It exists for writers that must
// re-read a file someone else edited and reapply their one change.
func Apply(src []byte, id string, s State) ([]byte, error) {
	m, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf("apply %s=%s: %w", id, s, err)
	}
	return m.SetState(id, s)
}

// splice builds src with span sp replaced by repl in one allocation.
func splice(src []byte, sp Span, repl string) []byte {
	out := make([]byte, 0, len(src)-sp.Len+len(repl))
	out = append(out, src[:sp.Off]...)
	out = append(out, repl...)
	return append(out, src[sp.Off+sp.Len:]...)
}

// blankLineAt reports whether the line starting at off is blank or absent.
func blankLineAt(src []byte, off int) bool {
	e := lineEnd(src, off)
	for _, c := range src[off:e] {
		if !isBlank(c) {
			return false
		}
	}
	return true
}

// WithState is SetState that also returns the parse of the result, without
// parsing again: only the state word changes, so every span after it moves
// by the difference in length. A writer that keeps the manifest it last
// wrote pays one copy per state change instead of a parse.
func (m *Manifest) WithState(id string, s State) (*Manifest, error) {
	src, err := m.SetState(id, s)
	if err != nil {
		return nil, err
	}
	at := m.Phase(id).StateSpan.Off
	delta := len(s) - m.Phase(id).StateSpan.Len
	shift := func(sp Span) Span {
		if sp.Off > at {
			sp.Off += delta
		}
		return sp
	}
	n := *m
	n.Src = src
	n.Phases = make([]Phase, len(m.Phases))
	copy(n.Phases, m.Phases)
	for i := range n.Phases {
		p := &n.Phases[i]
		if p.ID == id {
			p.State = s
			p.StateSpan.Len = len(s)
			continue
		}
		p.StateSpan = shift(p.StateSpan)
	}
	n.Status.Span = shift(n.Status.Span)
	n.Gate.Span = shift(n.Gate.Span)
	n.Prepare.Span = shift(n.Prepare.Span)
	if n.statusAt > at {
		n.statusAt += delta
	}
	return &n, nil
}
