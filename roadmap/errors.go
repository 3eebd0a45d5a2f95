package roadmap

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with a roadmap, at a manifest line (0 = the
// file as a whole).
type Problem struct {
	Line int
	Msg  string
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
