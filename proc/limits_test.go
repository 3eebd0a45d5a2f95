package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The usage-limit messages of claude, codex and opencode, as their users
// reported them (each fixture in testdata/limits names its source): each
// is a rate limit, and its reset time is read from it. A clock time with
// no zone is in the driver's (here UTC, the fixtures' "now").
func TestUsageLimitFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "limits", "*.txt"))
	if err != nil || len(files) < 12 {
		t.Fatalf("fixtures: %v (%d)", err, len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			head, lines := readLimitFixture(t, f)
			if !strings.HasPrefix(head["source"], "https://github.com/") {
				t.Fatalf("no public source named: %q", head["source"])
			}
			now, err := time.Parse(time.RFC3339, head["now"])
			if err != nil {
				t.Fatal(err)
			}
			want, err := time.Parse(time.RFC3339, head["reset"])
			if err != nil {
				t.Fatal(err)
			}
			// The message ends an agent's output, after other lines.
			tail := append([]string{"compiling...", "ok  	pkg	0.5s"}, lines...)
			if k := Classify(tail); k != RateLimit {
				t.Errorf("Classify = %v, want rate-limit", k)
			}
			d, ok := ResetHint(tail, now)
			if !ok || !now.Add(d).Equal(want) {
				t.Errorf("ResetHint = %v (%v): resets %v, want %v", d, ok, now.Add(d).UTC(), want)
			}
		})
	}
}

func readLimitFixture(t *testing.T, path string) (map[string]string, []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(b), "---\n")
	if !ok {
		t.Fatalf("%s: no --- line", path)
	}
	h := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(head), "\n") {
		k, v, _ := strings.Cut(l, ":")
		h[k] = strings.TrimSpace(v)
	}
	return h, strings.Split(strings.TrimRight(body, "\n"), "\n")
}

// Noise stays noise: no limit, no hint.
func TestUsageLimitNoise(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	for _, tail := range [][]string{
		{"FAIL: TestRetry (0.01s)", "recursion depth exceeded"},
		{"you hit the ball", "done in 6h16m"},
	} {
		if k := Classify(tail); k == RateLimit {
			t.Errorf("%q classified as a rate limit", tail)
		}
		if d, ok := ResetHint(tail, now); ok {
			t.Errorf("%q: hint %v", tail, d)
		}
	}
}
