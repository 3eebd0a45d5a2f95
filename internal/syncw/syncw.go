// Package syncw is the one writer that several goroutines share: each
// Write reaches the underlying writer whole, never interleaved with
// another (a log line from the queue's goroutines, a pod's streamed log
// beside the driver's own notes).
package syncw

import (
	"io"
	"sync"
)

// Writer serializes writes to W.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a Writer that writes to w.
func New(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p to the underlying writer while holding the lock.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
