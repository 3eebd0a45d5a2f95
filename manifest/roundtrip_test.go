package manifest

import (
	"bytes"
	"fmt"
	"slices"
)

// otherStates lists the valid states other than s, in a fixed order.
func otherStates(s State) []State {
	out := make([]State, 0, len(States)-1)
	for _, o := range States {
		if o != s {
			out = append(out, o)
		}
	}
	return out
}

// checkSplice reports how out differs from src if it is not exactly src
// with [off, off+oldLen) replaced by repl.
func checkSplice(src, out []byte, off, oldLen int, repl string) error {
	if len(out) != len(src)-oldLen+len(repl) {
		return fmt.Errorf("length %d, want %d", len(out), len(src)-oldLen+len(repl))
	}
	if !bytes.Equal(out[:off], src[:off]) {
		return fmt.Errorf("bytes before offset %d changed", off)
	}
	if string(out[off:off+len(repl)]) != repl {
		return fmt.Errorf("span holds %q, want %q", out[off:off+len(repl)], repl)
	}
	if !bytes.Equal(out[off+len(repl):], src[off+oldLen:]) {
		return fmt.Errorf("bytes after the span changed")
	}
	return nil
}

// sameAfterEdit compares a manifest with the reparse of an edit that
// replaced Len bytes at at with delta more bytes: everything must be equal
// except offsets behind the edit and, when changed >= 0, that phase's state.
func sameAfterEdit(before, after *Manifest, at, delta, changed int, to State) error {
	shift := func(sp Span) Span {
		if sp.Off > at {
			sp.Off += delta
		}
		return sp
	}
	if len(before.Phases) != len(after.Phases) {
		return fmt.Errorf("phase count %d -> %d", len(before.Phases), len(after.Phases))
	}
	for i, b := range before.Phases {
		a := after.Phases[i]
		want := b
		want.StateSpan = shift(b.StateSpan)
		if i == changed {
			want.State = to
			want.StateSpan.Len = len(to)
		}
		if a.ID != want.ID || a.Title != want.Title || a.State != want.State || a.Gate != want.Gate ||
			a.Est != want.Est || a.Line != want.Line || a.StateSpan != want.StateSpan ||
			!slices.Equal(a.Deps, want.Deps) || !slices.Equal(a.Owns, want.Owns) {
			return fmt.Errorf("phase %d:\n got %+v\nwant %+v", i, a, want)
		}
	}
	for _, s := range [][2]Setting{{before.Status, after.Status}, {before.Gate, after.Gate}, {before.Prepare, after.Prepare}} {
		b, a := s[0], s[1]
		b.Span = shift(b.Span)
		if a != b {
			return fmt.Errorf("setting changed: %+v -> %+v", s[0], a)
		}
	}
	if !slices.Equal(before.Checkpoints, after.Checkpoints) {
		return fmt.Errorf("checkpoints changed: %+v -> %+v", before.Checkpoints, after.Checkpoints)
	}
	return nil
}

// flipAndBack sets phase i to `to`, checks that only its state word changed
// in bytes, optionally reparses to check nothing else moved, and checks
// that setting it back restores the original bytes exactly.
func flipAndBack(m *Manifest, i int, to State, reparse bool) error {
	ph := m.Phases[i]
	out, err := m.SetState(ph.ID, to)
	if err != nil {
		return err
	}
	if err := checkSplice(m.Src, out, ph.StateSpan.Off, ph.StateSpan.Len, string(to)); err != nil {
		return fmt.Errorf("%s -> %s: %w", ph.ID, to, err)
	}
	var m2 *Manifest
	if reparse {
		if m2, err = Parse(out); err != nil {
			return fmt.Errorf("%s -> %s: reparse: %w", ph.ID, to, err)
		}
		if err := sameAfterEdit(m, m2, ph.StateSpan.Off, len(to)-ph.StateSpan.Len, i, to); err != nil {
			return fmt.Errorf("%s -> %s: %w", ph.ID, to, err)
		}
	} else {
		// Without a reparse, a one-phase manifest pointing at the new word
		// is enough to drive SetState back.
		m2 = &Manifest{Src: out, Phases: []Phase{{ID: ph.ID, State: to, StateSpan: Span{ph.StateSpan.Off, len(to)}}}}
	}
	back, err := m2.SetState(ph.ID, ph.State)
	if err != nil {
		return fmt.Errorf("%s back to %s: %w", ph.ID, ph.State, err)
	}
	if !bytes.Equal(back, m.Src) {
		return fmt.Errorf("%s -> %s -> %s did not restore the original bytes", ph.ID, to, ph.State)
	}
	return nil
}

// statusRoundTrip sets the Status to each valid value and back, checking the
// reparse sees it and that phases are untouched.
func statusRoundTrip(m *Manifest) error {
	for _, v := range []string{"in-progress", "complete"} {
		out, err := m.SetStatus(v)
		if err != nil {
			return err
		}
		m2, err := Parse(out)
		if err != nil {
			return fmt.Errorf("status %s: reparse: %w", v, err)
		}
		if m2.Status.Value != v {
			return fmt.Errorf("status %s: reparsed as %q", v, m2.Status.Value)
		}
		if len(m2.Phases) != len(m.Phases) {
			return fmt.Errorf("status %s: phases %d -> %d", v, len(m.Phases), len(m2.Phases))
		}
		for i := range m.Phases {
			a, b := m.Phases[i], m2.Phases[i]
			if a.ID != b.ID || a.State != b.State || !slices.Equal(a.Deps, b.Deps) || a.Title != b.Title {
				return fmt.Errorf("status %s: phase %d changed: %+v -> %+v", v, i, a, b)
			}
		}
		if m.Status.Line == 0 {
			continue // inserted; nothing to restore by replacement
		}
		back, err := m2.SetStatus(m.Status.Value)
		if err != nil {
			return err
		}
		if !bytes.Equal(back, m.Src) {
			return fmt.Errorf("status %s and back did not restore the original bytes", v)
		}
	}
	return nil
}
