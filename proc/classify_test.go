package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		tail []string
		want Kind
	}{
		{nil, None},
		{[]string{"all tests passed", "exit status 1"}, None},
		{[]string{"processed 4290 files"}, None},
		{[]string{"Error: Rate limit reached for requests"}, RateLimit},
		{[]string{"rate_limit_error"}, RateLimit},
		{[]string{"RATELIMIT"}, RateLimit},
		{[]string{"Claude AI usage limit reached|1750000000"}, RateLimit},
		{[]string{"HTTP 429"}, RateLimit},
		{[]string{"Too Many Requests"}, RateLimit},
		{[]string{"Please wait a moment"}, RateLimit},
		{[]string{"please retry later"}, RateLimit},
		{[]string{"You exceeded your current quota"}, RateLimit},
		{[]string{"exceeded the token limit"}, RateLimit},
		{[]string{"API Error: 529 overloaded_error"}, Transient},
		{[]string{"Overloaded"}, Transient},
		{[]string{"500 Internal Server Error"}, Transient},
		{[]string{"502 Bad Gateway"}, Transient},
		{[]string{"503 Service Unavailable"}, Transient},
		{[]string{"The socket connection was closed unexpectedly"}, Transient},
		// A rate limit wins wherever it appears.
		{[]string{"API Error: 429 rate_limit_error"}, RateLimit},
		{[]string{"rate limited", "API Error: overloaded"}, RateLimit},
		{[]string{"API Error: overloaded", "usage limit reached"}, RateLimit},
		// Only the last 120 lines count.
		{append([]string{"429"}, make([]string, TailLines)...), None},
		{append([]string{"429"}, make([]string, TailLines-1)...), RateLimit},
	} {
		if got := Classify(tc.tail); got != tc.want {
			t.Errorf("Classify(%q) = %v, want %v", lastN(tc.tail, 3), got, tc.want)
		}
	}
}

func TestKindString(t *testing.T) {
	if None.String() != "none" || RateLimit.String() != "rate-limit" || Transient.String() != "transient" || Kind(9).String() != "Kind(9)" {
		t.Error("Kind.String")
	}
}

func TestCooldownHint(t *testing.T) {
	const def = 17 * time.Minute
	// Tuesday 2025-06-10 14:00:00 in a zone 5 hours behind UTC (19:00 UTC).
	est := time.FixedZone("EST", -5*3600)
	now := time.Date(2025, 6, 10, 14, 0, 0, 0, est)
	for _, tc := range []struct {
		tail []string
		want time.Duration
	}{
		{nil, def},
		{[]string{"rate limit reached"}, def},
		{[]string{"Rate limited. Please retry in 42 seconds."}, 42 * time.Second},
		{[]string{"usage limit: wait 5 minutes"}, 5 * time.Minute},
		{[]string{"Model available in 2 hours"}, 2 * time.Hour},
		{[]string{"429: try again in 30s"}, 30 * time.Second},
		{[]string{"Usage limit reached, resets in 1 hour"}, time.Hour},
		{[]string{"Retry-After: 120"}, 120 * time.Second},
		{[]string{"retry after 90 sec"}, 90 * time.Second},
		{[]string{"wait 1.5 hours"}, 90 * time.Minute},
		{[]string{"Try again in 2 hours 5 minutes."}, 2*time.Hour + 5*time.Minute},
		{[]string{"You've hit your usage limit, try again in 4 days 23 hours"}, 4*24*time.Hour + 23*time.Hour},
		{[]string{"try again in 1h 5m"}, time.Hour + 5*time.Minute},
		{[]string{"wait 3 mins and 10 secs"}, 3*time.Minute + 10*time.Second},
		// A wrapped message: the hint line itself has no keyword.
		{[]string{"You have hit the rate limit. Please try again", "in 10 minutes."}, 10 * time.Minute},
		// Timing noise is not a hint.
		{[]string{"rate limit reached", "compiled in 5s"}, def},
		{[]string{"tests finished in 3s", "ok"}, def},
		{[]string{"wait 500ms"}, def},
		{[]string{"wait 99999999 days"}, def},
		// The last hint wins, across and within lines.
		{[]string{"retry in 42 seconds", "wait 5 minutes"}, 5 * time.Minute},
		{[]string{"wait 5 minutes", "retry in 42 seconds"}, 42 * time.Second},
		{[]string{"wait 5 minutes or retry in 42 seconds"}, 42 * time.Second},
		{[]string{"retry in 42 seconds", "unrelated output"}, 42 * time.Second},
		// Clock times, now = 14:00 local.
		{[]string{"Your limit resets at 3pm"}, time.Hour},
		{[]string{"resets at 3:30 PM"}, 90 * time.Minute},
		{[]string{"resets 3:30 p.m."}, 90 * time.Minute},
		{[]string{"resets at 15:00"}, time.Hour},
		{[]string{"5-hour limit reached ∙ resets 3pm"}, time.Hour},
		{[]string{"resets at 1pm"}, 23 * time.Hour},
		{[]string{"resets at 2pm"}, 24 * time.Hour}, // exactly now: the next one
		{[]string{"resets at 12am"}, 10 * time.Hour},
		{[]string{"resets at 12pm"}, 22 * time.Hour},
		{[]string{"resets at 20:00 (UTC)"}, time.Hour},
		{[]string{"resets at 20:00 UTC"}, time.Hour},
		{[]string{"resets at 18:00 UTC"}, 23 * time.Hour},
		{[]string{"resets 5 times a day"}, def},
		{[]string{"resets at 25:00"}, def},
		{[]string{"resets at 13pm"}, def},
		// Absolute times.
		{[]string{fmt.Sprintf("Claude AI usage limit reached|%d", now.Add(3*time.Hour).Unix())}, 3 * time.Hour},
		{[]string{fmt.Sprintf("Claude AI usage limit reached|%d", now.Add(-time.Hour).Unix())}, def},
		{[]string{"limit resets at 2025-06-10T21:00:00Z"}, 2 * time.Hour},
		{[]string{"try again at 2025-06-10 20:30 UTC"}, 90 * time.Minute},
		{[]string{"available on 2025-06-10T16:00:00"}, 2 * time.Hour},
	} {
		if got := CooldownHint(tc.tail, now, def); got != tc.want {
			t.Errorf("CooldownHint(%q) = %v, want %v", tc.tail, got, tc.want)
		}
	}
}

func TestCooldownHintNamedZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC) // 08:00 in New York (EDT)
	tail := []string{"Claude usage limit reached. Your limit will reset at 3pm (America/New_York)."}
	if got, want := CooldownHint(tail, now, time.Minute), 7*time.Hour; got != want {
		t.Errorf("got %v, want %v (zone %v)", got, want, ny)
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{
		-1:  10 * time.Second,
		0:   10 * time.Second,
		1:   10 * time.Second,
		2:   20 * time.Second,
		3:   40 * time.Second,
		4:   80 * time.Second,
		5:   160 * time.Second,
		6:   5 * time.Minute,
		7:   5 * time.Minute,
		1e6: 5 * time.Minute,
	} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestTailFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var big strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	long := strings.Repeat("L", 200000)
	for _, tc := range []struct {
		name, content string
		n             int
		want          []string
	}{
		{"empty", "", 5, nil},
		{"one", "a\n", 5, []string{"a"}},
		{"no-final-newline", "a\nb\nc", 2, []string{"b", "c"}},
		{"crlf", "a\r\nb\r\n", 5, []string{"a", "b"}},
		{"fewer", "a\nb\n", 5, []string{"a", "b"}},
		{"exact", "a\nb\nc\n", 3, []string{"a", "b", "c"}},
		{"blank-lines", "a\n\n\nb\n", 3, []string{"", "", "b"}},
		{"zero", "a\n", 0, nil},
		{"big", big.String(), 3, []string{"line 99997", "line 99998", "line 99999"}},
		{"long-lines", "first\n" + long + "\n" + long + "\nlast\n", 3, []string{long, long, "last"}},
	} {
		got, err := TailFile(write(tc.name, tc.content), tc.n)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %d lines %.40q, err %v; want %.40q", tc.name, len(got), got, err, tc.want)
		}
	}
	if _, err := TailFile(filepath.Join(dir, "missing"), 3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Doubling is the one backoff: a GitHub request's (1 s doubling, capped at
// a minute) as an agent's (Backoff).
func TestDoubling(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: time.Minute, 40: time.Minute} {
		if got := Doubling(n, time.Second, time.Minute); got != want {
			t.Errorf("Doubling(%d, 1s, 1m) = %v, want %v", n, got, want)
		}
	}
	if got := Doubling(1, time.Hour, time.Minute); got != time.Minute {
		t.Errorf("a first wait over the cap: %v, want the cap", got)
	}
}
