package roadmap

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// CycleError is one dependency cycle. Path names the phases along its
// "depends on" edges, starting at the first of them in file order; the
// message closes the loop ("dependency cycle: a -> b -> a").
type CycleError struct {
	Path []string
}

func (e *CycleError) Error() string {
	if len(e.Path) == 0 {
		return "dependency cycle"
	}
	return "dependency cycle: " + strings.Join(append(e.Path[:len(e.Path):len(e.Path)], e.Path[0]), " -> ")
}

// Problem is one thing wrong with a roadmap, at a manifest line (0 = the
// file as a whole).
type Problem struct {
	Line int
	Msg  string
	// Err is the problem as a typed error, where it has one (a
	// *CycleError); errors.As finds it through the InvalidError.
	Err error
}

// InvalidError reports every problem in one manifest, each as
// "path:line: message", so a user fixes them all in one pass.
type InvalidError struct {
	Path     string
	Problems []Problem
}

func (e *InvalidError) add(line int, msg string) {
	e.Problems = append(e.Problems, Problem{Line: line, Msg: msg})
}

// As lets errors.As find a typed problem (a *CycleError) in the list.
// (No Unwrap: callers print an InvalidError as its own lines, never as
// a joined error.)
func (e *InvalidError) As(target any) bool {
	for _, p := range e.Problems {
		if p.Err != nil && errors.As(p.Err, target) {
			return true
		}
	}
	return false
}

func (e *InvalidError) sort() {
	sort.SliceStable(e.Problems, func(i, j int) bool { return e.Problems[i].Line < e.Problems[j].Line })
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", e.Path, p.Line, p.Msg)
		} else {
			fmt.Fprintf(&b, "%s: %s", e.Path, p.Msg)
		}
	}
	return b.String()
}

// IsInvalid reports whether err is (or wraps) an invalid or missing manifest.
func IsInvalid(err error) bool {
	var e *InvalidError
	return errors.As(err, &e)
}
