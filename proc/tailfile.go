package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// TailFile returns the last n lines of the file at path, reading backwards
// from the end in blocks so a huge log costs only what the lines occupy. A
// final line without a newline counts as a line; carriage returns before
// newlines are dropped, as in Result.Tail.
func TailFile(path string, n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("supervisor: tail: %w", err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("supervisor: tail: %w", err)
	}
	const block = 64 << 10
	var buf []byte // the file's last len(buf) bytes
	off := size
	for off > 0 {
		// A trailing newline ends the last line rather than starting another,
		// so n lines need n+1 newlines unless the file ends without one.
		if bytes.Count(buf, []byte{'\n'}) > n {
			break
		}
		step := int64(block)
		if off < step {
			step = off
		}
		off -= step
		chunk := make([]byte, step, step+int64(len(buf)))
		if _, err := f.ReadAt(chunk, off); err != nil {
			return nil, fmt.Errorf("supervisor: tail: %w", err)
		}
		buf = append(chunk, buf...)
	}
	text := strings.TrimSuffix(string(buf), "\n")
	if text == "" && len(buf) == 0 {
		return nil, nil
	}
	lines := strings.Split(text, "\n")
	if off > 0 {
		// The first line may be cut by the block boundary; with more than n
		// lines read it is never among the last n anyway.
		lines = lines[1:]
	}
	lines = lastN(lines, n)
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines, nil
}

// NextLog returns 1 + the highest n of the files <prefix>-<n>.log in dir,
// so a new log never overwrites an earlier run's.
func NextLog(dir, prefix string) int {
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix+"-") || !strings.HasSuffix(name, ".log") {
			continue
		}
		k, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, prefix+"-"), ".log"))
		if err == nil && k > n {
			n = k
		}
	}
	return n + 1
}
