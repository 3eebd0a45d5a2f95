package proc

import (
	"regexp"
	"strconv"
	"strings"
	"time"
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
	rateLimitRe = regexp.MustCompile(`(?i)rate.?limit|usage limit|\b429\b|too many requests|please (?:retry|wait)|exceeded.*(?:quota|limit)`)
	transientRe = regexp.MustCompile(`(?i)api error|overloaded|5[0-9][0-9] internal server error|bad gateway|service unavailable|socket connection was closed`)
)

// Classify looks at the last TailLines lines of output. A rate limit wins
// over a transient error because retrying a rate limit quickly only burns
// more quota; "API Error: 429" is therefore a rate limit.
func Classify(tail []string) Kind {
	tail = lastN(tail, TailLines)
	kind := None
	for _, l := range tail {
		if rateLimitRe.MatchString(l) {
			return RateLimit
		}
		if kind == None && transientRe.MatchString(l) {
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

// Backoff is the wait before transient retry n (1-based): 10s doubling,
// capped at 5 minutes.
func Backoff(n int) time.Duration {
	const first, max = 10 * time.Second, 5 * time.Minute
	d := first
	for i := 1; i < n; i++ {
		d *= 2
		if d >= max {
			return max
		}
	}
	return d
}

const (
	hintUnit = `(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b`
	hintPair = `\d+(?:\.\d+)?\s*` + hintUnit
	// maxHint rejects numbers that cannot be a cooldown (years, overflow).
	maxHint = 31 * 24 * time.Hour
)

var (
	// "retry in 42 seconds", "wait 5 minutes", "try again in 2 hours 5 minutes".
	relHintRe = regexp.MustCompile(`(?i)\b(?:in|wait|after|for)\s+(?:about\s+|approximately\s+|approx\.?\s+|~\s*)?(` +
		hintPair + `(?:\s*,?\s*(?:and\s+)?` + hintPair + `)*)`)
	hintPairRe = regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*` + hintUnit)
	// A bare "in 5s" is everywhere in build output ("done in 5s"), so a
	// relative hint counts only near words that speak of waiting or limits.
	hintContextRe = regexp.MustCompile(`(?i)retry|try again|wait|available|reset|cool ?down|limit|quota|\b429\b|too many requests`)
	// HTTP header style, seconds.
	retryAfterRe = regexp.MustCompile(`(?i)\bretry-after:?\s*(\d+)\b`)
	// "resets 3pm", "resets at 3:30 PM", "reset at 15:00 (UTC)",
	// "will reset at 3pm (America/New_York)".
	resetAtRe = regexp.MustCompile(`(?i)\bresets?\s+(?:(at)\s+)?(\d{1,2})(?::(\d{2}))?(?:\s*([ap])\.?m\b\.?|\b)(?:\s*\(?\s*(utc|gmt|[a-z]+(?:/[a-z0-9_+-]+)+)\b\)?)?`)
	// Claude Code's "Claude AI usage limit reached|1750000000".
	epochRe = regexp.MustCompile(`(?i)limit reached\|(\d{9,11})\b`)
	// "resets at 2025-01-05T15:00:00Z", "try again at 2025-01-05 15:00 UTC".
	isoRe = regexp.MustCompile(`(?i)\b(?:resets?|until|available|try again|retry)\s+(?:at\s+|on\s+)?(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|\s*UTC|[+-]\d{2}:?\d{2})?)`)
)

// CooldownHint returns how long the output says to wait, from the last hint
// in tail, or def when there is none. Clock times ("resets at 3pm") mean the
// next such time after now in now's location, or UTC/the named zone when the
// text says so.
func CooldownHint(tail []string, now time.Time, def time.Duration) time.Duration {
	for i := len(tail) - 1; i >= 0; i-- {
		ctx := hintContextRe.MatchString(tail[i])
		cont := i > 0 && hintContextRe.MatchString(tail[i-1])
		if d, ok := lineHint(tail[i], now, ctx, cont); ok {
			return d
		}
	}
	return def
}

// lineHint returns the valid hint that starts last in line. Relative hints
// need context: a keyword in the line, or (for a message wrapped onto the
// next line) in the previous line when the hint opens the line.
func lineHint(line string, now time.Time, ctx, cont bool) (time.Duration, bool) {
	best, bestAt := time.Duration(0), -1
	try := func(at int, d time.Duration, ok bool) {
		if ok && d > 0 && d <= maxHint && at > bestAt {
			best, bestAt = d, at
		}
	}
	if ctx || cont {
		for _, m := range relHintRe.FindAllStringSubmatchIndex(line, -1) {
			if !ctx && strings.TrimSpace(line[:m[0]]) != "" {
				continue
			}
			d, ok := parseDurationSeq(line[m[2]:m[3]])
			try(m[0], d, ok)
		}
	}
	for _, m := range retryAfterRe.FindAllStringSubmatchIndex(line, -1) {
		n, err := strconv.Atoi(line[m[2]:m[3]])
		try(m[0], time.Duration(n)*time.Second, err == nil && n < int(maxHint/time.Second))
	}
	for _, m := range resetAtRe.FindAllStringSubmatchIndex(line, -1) {
		d, ok := parseResetAt(line, m, now)
		try(m[0], d, ok)
	}
	for _, m := range epochRe.FindAllStringSubmatchIndex(line, -1) {
		n, err := strconv.ParseInt(line[m[2]:m[3]], 10, 64)
		try(m[0], time.Unix(n, 0).Sub(now), err == nil)
	}
	for _, m := range isoRe.FindAllStringSubmatchIndex(line, -1) {
		t, ok := parseISO(line[m[2]:m[3]], now.Location())
		try(m[0], t.Sub(now), ok)
	}
	return best, bestAt >= 0
}

func parseDurationSeq(s string) (time.Duration, bool) {
	var total float64
	for _, p := range hintPairRe.FindAllStringSubmatch(s, -1) {
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
