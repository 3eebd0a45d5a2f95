package manifest

import (
	"fmt"
	"strings"
)

// Error is one problem found at one line of the manifest.
type Error struct {
	Line int // 1-based
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Line, e.Msg) }

// ErrorList holds every problem found in one parse, in line order, so a user
// fixes the file in one pass instead of one error per run.
type ErrorList []*Error

func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}
