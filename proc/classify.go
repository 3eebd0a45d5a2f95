package proc

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// Kind is what an agent's output says about why it stopped.
type Kind int

const (
	None      Kind = iota // nothing recognised: judge by exit code
	RateLimit             // provider quota/usage limit: wait, then rerun
	Transient             // provider hiccup: retry with Backoff
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case RateLimit:
		return "rate-limit"
	case Transient:
		return "transient"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// The patterns match per line so ".*" never joins unrelated lines. 429 must
// stand alone: "processed 4290 files" is not a rate limit.
var (
	// Beside the generic words, the CLIs' own: Claude Code's "You've hit
	// your session limit", Codex's "You've hit your usage limit" and
	// usage_limit_reached, opencode's "Free usage exceeded" (the
	// fixtures in testdata/limits name their sources).
	rateLimitRe = lazy.Regexp(`(?i)rate.?limit|usage.?limit|\b429\b|too many requests|please (?:retry|wait)|exceeded.*(?:quota|limit)|quota exceeded|usage exceeded|hit (?:your|the) (?:\w+ )?limit\b`)
	transientRe = lazy.Regexp(`(?i)api error|overloaded|5[0-9][0-9] internal server error|bad gateway|service unavailable|socket connection was closed`)
)

// Classify looks at the last TailLines lines of output. A rate limit wins
// over a transient error because retrying a rate limit quickly only burns
// more quota; "API Error: 429" is therefore a rate limit.
func Classify(tail []string) Kind {
	tail = lastN(tail, TailLines)
	kind := None
	for _, l := range tail {
		if rateLimitRe().MatchString(l) {
			return RateLimit
		}
		if kind == None && transientRe().MatchString(l) {
			kind = Transient
		}
	}
	return kind
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Backoff is the wait before an agent's transient retry n (1-based): 10s
// doubling, capped at 5 minutes.
func Backoff(n int) time.Duration { return Doubling(n, 10*time.Second, 5*time.Minute) }

// Doubling is the one backoff rule (#23 §6): the wait before retry n
// (1-based) is first, doubled for each retry before it, capped at max.
// Callers differ only in first and max (an agent's retry, a GitHub request).
func Doubling(n int, first, max time.Duration) time.Duration {
	d := first
	for i := 1; i < n; i++ {
		d *= 2
		if d >= max {
			return max
		}
	}
	return min(d, max)
}

const (
	hintUnit = `(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`
	hintPair = `\d+(?:\.\d+)?\s*` + hintUnit
	// maxHint rejects numbers that cannot be a cooldown (years, overflow).
	maxHint = 31 * 24 * time.Hour
)

var (
	// "retry in 42 seconds", "wait 5 minutes", "try again in 2 hours 5 minutes".
	relHintRe = lazy.Regexp(`(?i)\b(?:in|wait|after|for)\s+(?:about\s+|approximately\s+|approx\.?\s+|~\s*)?(` +
		hintPair + `(?:\s*,?\s*(?:and\s+)?` + hintPair + `)*)`)
	hintPairRe = lazy.Regexp(`(?i)(\d+(?:\.\d+)?)\s*` + hintUnit)
	// A bare "in 5s" is everywhere in build output ("done in 5s"), so a
	// relative hint counts only near words that speak of waiting or limits.
	hintContextRe = lazy.Regexp(`(?i)retry|try again|wait|available|reset|cool ?down|limit|quota|\b429\b|too many requests`)
	// HTTP header style, seconds.
	retryAfterRe = lazy.Regexp(`(?i)\bretry-after:?\s*(\d+)\b`)
	// "resets 3pm", "resets at 3:30 PM", "reset at 15:00 (UTC)",
	// "will reset at 3pm (America/New_York)".
	resetAtRe = lazy.Regexp(`(?i)\bresets?\s+(?:(at)\s+)?(\d{1,2})(?::(\d{2}))?(?:\s*([ap])\.?m\b\.?|\b)(?:\s*\(?\s*(utc|gmt|[a-z]+(?:/[a-z0-9_+-]+)+)\b\)?)?`)
	// Claude Code's "Claude AI usage limit reached|1750000000"; Codex's
	// usage_limit_reached error, "resets_at":1777936568 (its quotes
	// escaped when it is quoted in a JSON event's message).
	epochRe = lazy.Regexp(`(?i)(?:limit reached\||\\?"resets_at\\?"\s*:\s*)(\d{9,11})\b`)
	// Codex's usage_limit_reached error, "resets_in_seconds":13872.
	resetsInRe = lazy.Regexp(`(?i)\\?"resets_in_seconds\\?"\s*:\s*(\d+)\b`)
	// Codex's "try again at 6:44 PM." (today) and "try again at Sep 27th,
	// 2026 4:59 AM." (in the driver's zone, as Codex writes it).
	tryAtRe = lazy.Regexp(`(?i)\btry again at\s+(?:([a-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}),?\s+)?(\d{1,2}):(\d{2})\s*([ap])\.?m\b`)
	// "6h16m", "2m22s": opencode's compact countdowns, spaced out for
	// hintPairRe.
	compactRe = lazy.Regexp(`(?i)(\d)([dhms])(\d)`)
	// "resets at 2025-01-05T15:00:00Z", "try again at 2025-01-05 15:00 UTC".
	isoRe = lazy.Regexp(`(?i)\b(?:resets?|until|available|try again|retry)\s+(?:at\s+|on\s+)?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|\s*UTC|[+-]\d{2}:?\d{2})?)`)
)

// CooldownHint returns how long the output says to wait, from the last hint
// in tail, or def when there is none. Clock times ("resets at 3pm") mean the
// next such time after now in now's location, or UTC/the named zone when the
// text says so.
func CooldownHint(tail []string, now time.Time, def time.Duration) time.Duration {
	if d, ok := ResetHint(tail, now); ok {
		return d
	}
	return def
}

// ResetHint is how long the output says to wait, from the last hint in
// tail, and whether it gave one: a reset time ("resets 3pm", Codex's
// "try again at 6:44 PM", an epoch) or a wait ("try again in 2 hours").
func ResetHint(tail []string, now time.Time) (time.Duration, bool) {
	for i := len(tail) - 1; i >= 0; i-- {
		ctx := hintContextRe().MatchString(tail[i])
		cont := i > 0 && hintContextRe().MatchString(tail[i-1])
		if d, ok := lineHint(tail[i], now, ctx, cont); ok {
			return d, true
		}
	}
	return 0, false
}

// lineHint returns the valid hint that starts last in line; a reset time
// beats a relative wait in the same line (opencode's "Your limit will
// reset at 2026-04-11 20:30:24 [retrying in 2m 22s #8]": the countdown is
// its own next retry). Relative hints need context: a keyword in the
// line, or (for a message wrapped onto the next line) in the previous
// line when the hint opens the line.
func lineHint(line string, now time.Time, ctx, cont bool) (time.Duration, bool) {
	if d, ok := absoluteHint(line, now); ok {
		return d, true
	}
	line = compactRe().ReplaceAllString(line, "$1$2 $3")
	best, bestAt := time.Duration(0), -1
	try := func(at int, d time.Duration, ok bool) {
		if ok && d > 0 && d <= maxHint && at > bestAt {
			best, bestAt = d, at
		}
	}
	if ctx || cont {
		for _, m := range relHintRe().FindAllStringSubmatchIndex(line, -1) {
			if !ctx && strings.TrimSpace(line[:m[0]]) != "" {
				continue
			}
			d, ok := parseDurationSeq(line[m[2]:m[3]])
			try(m[0], d, ok)
		}
	}
	for _, re := range []*regexp.Regexp{retryAfterRe(), resetsInRe()} {
		for _, m := range re.FindAllStringSubmatchIndex(line, -1) {
			n, err := strconv.Atoi(line[m[2]:m[3]])
			try(m[0], time.Duration(n)*time.Second, err == nil && n < int(maxHint/time.Second))
		}
	}
	return best, bestAt >= 0
}

// absoluteHint returns the wait until the reset time that starts last in
// line, if it names one.
func absoluteHint(line string, now time.Time) (time.Duration, bool) {
	best, bestAt := time.Duration(0), -1
	try := func(at int, d time.Duration, ok bool) {
		if ok && d > 0 && d <= maxHint && at > bestAt {
			best, bestAt = d, at
		}
	}
	for _, m := range resetAtRe().FindAllStringSubmatchIndex(line, -1) {
		d, ok := parseResetAt(line, m, now)
		try(m[0], d, ok)
	}
	for _, m := range epochRe().FindAllStringSubmatchIndex(line, -1) {
		n, err := strconv.ParseInt(line[m[2]:m[3]], 10, 64)
		try(m[0], time.Unix(n, 0).Sub(now), err == nil)
	}
	for _, m := range isoRe().FindAllStringSubmatchIndex(line, -1) {
		t, ok := parseISO(line[m[2]:m[3]], now.Location())
		try(m[0], t.Sub(now), ok)
	}
	for _, m := range tryAtRe().FindAllStringSubmatchIndex(line, -1) {
		t, ok := parseTryAt(line, m, now)
		try(m[0], t.Sub(now), ok)
	}
	return best, bestAt >= 0
}

// parseTryAt reads a tryAtRe match: a clock time today (tomorrow when it
// has passed), or on the date given, in now's zone.
func parseTryAt(line string, m []int, now time.Time) (time.Time, bool) {
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return line[m[2*i]:m[2*i+1]]
	}
	h, _ := strconv.Atoi(group(4))
	mins, _ := strconv.Atoi(group(5))
	if h < 1 || h > 12 || mins > 59 {
		return time.Time{}, false
	}
	h %= 12
	if strings.EqualFold(group(6), "p") {
		h += 12
	}
	if group(1) == "" {
		t := time.Date(now.Year(), now.Month(), now.Day(), h, mins, 0, 0, now.Location())
		if !t.After(now) {
			t = t.AddDate(0, 0, 1)
		}
		return t, true
	}
	mon, err := time.Parse("Jan", strings.ToUpper(group(1)[:1])+strings.ToLower(group(1)[1:]))
	day, _ := strconv.Atoi(group(2))
	year, _ := strconv.Atoi(group(3))
	if err != nil || day < 1 || day > 31 {
		return time.Time{}, false
	}
	return time.Date(year, mon.Month(), day, h, mins, 0, 0, now.Location()), true
}

func parseDurationSeq(s string) (time.Duration, bool) {
	var total float64
	for _, p := range hintPairRe().FindAllStringSubmatch(s, -1) {
		n, err := strconv.ParseFloat(p[1], 64)
		if err != nil {
			return 0, false
		}
		unit := strings.ToLower(p[2])
		switch unit[0] {
		case 'd':
			total += n * float64(24*time.Hour)
		case 'h':
			total += n * float64(time.Hour)
		case 'm':
			total += n * float64(time.Minute)
		case 's':
			total += n * float64(time.Second)
		}
	}
	if total <= 0 || total > float64(maxHint) {
		return 0, false
	}
	return time.Duration(total), true
}

// parseResetAt turns a resetAtRe match into the wait until that clock time.
func parseResetAt(line string, m []int, now time.Time) (time.Duration, bool) {
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return line[m[2*i]:m[2*i+1]]
	}
	at, hs, ms, ampm, zone := group(1), group(2), group(3), strings.ToLower(group(4)), group(5)
	if at == "" && ms == "" && ampm == "" {
		// "resets 5 times" is not a clock time.
		return 0, false
	}
	h, _ := strconv.Atoi(hs)
	mins := 0
	if ms != "" {
		mins, _ = strconv.Atoi(ms)
	}
	if mins > 59 {
		return 0, false
	}
	switch ampm {
	case "":
		if h > 23 {
			return 0, false
		}
	default:
		if h < 1 || h > 12 {
			return 0, false
		}
		h %= 12
		if ampm == "p" {
			h += 12
		}
	}
	loc := now.Location()
	switch z := strings.ToUpper(zone); {
	case z == "UTC" || z == "GMT":
		loc = time.UTC
	case zone != "":
		if l, err := time.LoadLocation(zone); err == nil {
			loc = l
		}
	}
	n := now.In(loc)
	t := time.Date(n.Year(), n.Month(), n.Day(), h, mins, 0, 0, loc)
	if !t.After(now) {
		t = time.Date(n.Year(), n.Month(), n.Day()+1, h, mins, 0, 0, loc)
	}
	return t.Sub(now), true
}

// parseISO reads a timestamp; one without a zone is in loc, as clock times
// are.
func parseISO(s string, loc *time.Location) (time.Time, bool) {
	s = strings.Replace(s, " ", "T", 1)
	if strings.HasSuffix(strings.ToUpper(s), "UTC") {
		s = strings.TrimSpace(s[:len(s)-3])
		loc = time.UTC
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
