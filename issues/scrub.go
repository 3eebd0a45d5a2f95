package issues

import (
	"strings"

	"github.com/claudopilot/claudopilot/secret"
)

// Redacted replaces every secret the Scrubber finds.
const Redacted = "[REDACTED]"

// Scrubber removes secrets from text: the values it was given (the GitHub
// token, in its raw, URL-escaped and base64 forms) and the common secret
// shapes (secret.Shapes). It is safe for concurrent use.
type Scrubber struct {
	values []string
}

// NewScrubber returns a Scrubber for the given secret values; empty and
// very short values (under 6 bytes, which would redact ordinary words) are
// ignored.
func NewScrubber(secrets ...string) *Scrubber {
	return &Scrubber{values: secret.NewKnown(secrets...).Forms()}
}

// Scrub returns text with every secret replaced by Redacted.
func (s *Scrubber) Scrub(text string) string {
	if s != nil {
		for _, v := range s.values {
			text = strings.ReplaceAll(text, v, Redacted)
		}
	}
	for _, shape := range secret.Shapes {
		text = shape.Re.ReplaceAllStringFunc(text, func(m string) string {
			// Keep the scheme word of an Authorization value readable.
			if i := strings.IndexAny(m, " \t"); i > 0 && (strings.EqualFold(m[:i], "bearer") || strings.EqualFold(m[:i], "token") || strings.EqualFold(m[:i], "basic")) {
				return m[:i] + " " + Redacted
			}
			return Redacted
		})
	}
	return text
}

// ScrubLines scrubs each line.
func (s *Scrubber) ScrubLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = s.Scrub(l)
	}
	return out
}
