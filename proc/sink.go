package proc

import (
	"errors"
	"time"

	"github.com/claudopilot/claudopilot/secret"
)

// Sink is what Run does with a process's output, for output that comes
// from elsewhere (a pod's log stream): through the redaction funnel into
// the capped log, with the same in-memory tail for Classify and
// CooldownHint. One goroutine writes; Close flushes.
type Sink struct {
	log  *cappedLog
	tail tailLines
	out  output
}

// OpenSink opens the log at path as Run does (an existing one is appended
// to after a restart line); limit 0 is DefaultLogCap.
func OpenSink(path string, limit int64, red *secret.Redactor) (*Sink, error) {
	if limit <= 0 {
		limit = DefaultLogCap
	}
	l, err := openLog(path, limit, time.Now())
	if err != nil {
		return nil, err
	}
	return &Sink{log: l, out: newOutput(red)}, nil
}

// Write takes output; it never fails (as Run's log, errors are kept for
// Close).
func (s *Sink) Write(p []byte) (int, error) {
	q := s.out.write(p)
	s.log.Write(q)
	s.tail.Write(q)
	return len(p), nil
}

// Close writes what the funnel held back and closes the log.
func (s *Sink) Close() error {
	q := s.out.flush()
	s.log.Write(q)
	s.tail.Write(q)
	return errors.Join(s.log.err, s.log.Close())
}

// Tail is the last TailLines lines written.
func (s *Sink) Tail() []string { return s.tail.Lines() }
