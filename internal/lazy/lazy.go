// Package lazy holds what a package would otherwise build at init, for
// every start of the driver, though few commands use it: a regular
// expression compiled at its first use instead. Each driver start (the
// suite's scripts start it hundreds of times) paid ~20 ms of package
// inits, a fifth of them compiling expressions of the secret scan, the
// agents' output classification, the issue queue and the git object
// store (issue 23; BENCHMARKS.md §5, session 8).
package lazy

import (
	"regexp"
	"sync"
)

// Regexp is expr, compiled once at the first call; it panics there on a
// bad expression, as regexp.MustCompile would at init (each package's
// tests call its expressions).
func Regexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
