package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/secret"
)

// DefaultLogCap is the log size limit used when Spec.LogCap is 0.
const DefaultLogCap = 50 << 20

// TailLines is how many output lines Result.Tail keeps.
const TailLines = 120

// maxTailLine splits pathological lines (progress bars without newlines,
// minified JSON) so the in-memory tail stays small.
const maxTailLine = 4096

// cappedLog appends agent output to a file and, when the file would exceed
// its cap, rewrites it to a drop marker plus the newest cap/2 bytes: the end
// of a log is what explains a failure, and an endless writer must never fill
// the disk. Rewriting at cap/2 keeps the copying amortised to O(1) per byte.
type cappedLog struct {
	f         *os.File
	size      int64
	cap       int64
	markerLen int64 // bytes of our own drop marker at the start of the file
	dropped   int64
	err       error // first write error; later output is discarded
}

// openLog creates path (and its directories) exclusively so a stale file is
// never silently reused; if it exists, it is appended to after a header line
// so a retried attempt keeps the previous attempt's output.
func openLog(path string, limit int64, now time.Time) (*cappedLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("supervisor: create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		return &cappedLog{f: f, cap: limit}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("supervisor: create log: %w", err)
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("supervisor: open existing log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("supervisor: stat log: %w", err)
	}
	l := &cappedLog{f: f, cap: limit, size: fi.Size()}
	header := "=== attempt restarted " + now.Format(time.RFC3339) + " ===\n"
	if l.size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, l.size-1); err == nil && last[0] != '\n' {
			header = "\n" + header
		}
	}
	l.Write([]byte(header))
	if l.err != nil {
		f.Close()
		return nil, l.err
	}
	return l, nil
}

// Write never fails to the caller: output must keep being drained even when
// the disk is full, so errors are remembered and reported in the Result.
func (l *cappedLog) Write(p []byte) {
	if l.err != nil || len(p) == 0 {
		return
	}
	if l.size+int64(len(p)) > l.cap {
		l.rotate(p)
		return
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if err != nil {
		l.err = fmt.Errorf("supervisor: write log: %w", err)
	}
}

func (l *cappedLog) rotate(p []byte) {
	keep := l.cap / 2
	if keep < 1 {
		keep = 1
	}
	var tail []byte
	if int64(len(p)) >= keep {
		tail = p[int64(len(p))-keep:]
	} else {
		from := l.size - (keep - int64(len(p)))
		if from < l.markerLen {
			from = l.markerLen
		}
		tail = make([]byte, l.size-from, l.size-from+int64(len(p)))
		if _, err := l.f.ReadAt(tail, from); err != nil {
			l.err = fmt.Errorf("supervisor: read log for rotation: %w", err)
			return
		}
		tail = append(tail, p...)
	}
	// Start the kept part on a line boundary so the first kept line is whole.
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	l.dropped += l.size - l.markerLen + int64(len(p)) - int64(len(tail))
	marker := fmt.Sprintf("… %d bytes dropped …\n", l.dropped)
	if err := l.f.Truncate(0); err != nil {
		l.err = fmt.Errorf("supervisor: truncate log: %w", err)
		return
	}
	// One write: O_APPEND puts it at offset 0 after the truncate.
	buf := make([]byte, 0, len(marker)+len(tail))
	buf = append(append(buf, marker...), tail...)
	n, err := l.f.Write(buf)
	l.size = int64(n)
	l.markerLen = int64(len(marker))
	if err != nil {
		l.err = fmt.Errorf("supervisor: write log: %w", err)
	}
}

func (l *cappedLog) Close() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("supervisor: close log: %w", err)
	}
	return nil
}

// tailLines keeps the last TailLines lines of a byte stream in a ring.
type tailLines struct {
	ring    []string
	next    int
	full    bool
	partial []byte
}

func (t *tailLines) Write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			for len(t.partial) >= maxTailLine {
				t.push(t.partial[:maxTailLine])
				t.partial = append(t.partial[:0], t.partial[maxTailLine:]...)
			}
			return
		}
		if len(t.partial) > 0 {
			t.partial = append(t.partial, p[:i]...)
			t.push(t.partial)
			t.partial = t.partial[:0]
		} else {
			t.push(p[:i])
		}
		p = p[i+1:]
	}
}

func (t *tailLines) push(line []byte) {
	for len(line) > maxTailLine {
		t.push(line[:maxTailLine])
		line = line[maxTailLine:]
	}
	s := strings.TrimRight(string(line), "\r")
	if t.ring == nil {
		t.ring = make([]string, TailLines)
	}
	t.ring[t.next] = s
	t.next = (t.next + 1) % TailLines
	if t.next == 0 {
		t.full = true
	}
}

// Lines flushes any unterminated last line, as the process has ended.
func (t *tailLines) Lines() []string {
	if len(t.partial) > 0 {
		t.push(t.partial)
		t.partial = nil
	}
	if !t.full {
		return append([]string(nil), t.ring[:t.next]...)
	}
	out := make([]string, 0, TailLines)
	out = append(out, t.ring[t.next:]...)
	return append(out, t.ring[:t.next]...)
}

// output passes a process's output through the redaction funnel, whole
// lines at a time; without a funnel, as it is.
type output struct{ s *secret.Stream }

func newOutput(r *secret.Redactor) output {
	if r == nil {
		return output{}
	}
	return output{r.Stream()}
}

// write returns what of p (and what came before it) may be written now.
func (o output) write(p []byte) []byte {
	if o.s == nil {
		return p
	}
	return o.s.Write(p)
}

// flush returns what was held back for its line's end: the output ended.
func (o output) flush() []byte {
	if o.s == nil {
		return nil
	}
	return o.s.Flush()
}
