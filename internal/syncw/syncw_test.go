package syncw_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/claudopilot/claudopilot/internal/syncw"
)

// Lines written at once by many goroutines arrive whole: each Write is
// one line of the result, none cut into another (run with -race too).
func TestWritesArriveWhole(t *testing.T) {
	var b bytes.Buffer
	w := syncw.New(&b)
	line := strings.Repeat("x", 500) + "\n"
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := w.Write([]byte(line)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.SplitAfter(b.String(), "\n")
	if got := len(lines) - 1; got != 800 {
		t.Fatalf("%d lines, want 800", got)
	}
	for i, l := range lines[:800] {
		if l != line {
			t.Fatalf("line %d torn: %q", i, l[:min(len(l), 40)])
		}
	}
}
