package issues

import (
	"sync"

	"github.com/claudopilot/claudopilot/secret"
)

// Redacted replaces every secret the Scrubber finds.
const Redacted = secret.Redacted

// Scrubber is the driver's one redaction funnel (secret.Redactor) as the
// queue holds it: everything posted on GitHub or logged goes through it,
// and a push must not carry its values. It is safe for concurrent use.
type Scrubber struct {
	mu sync.Mutex
	r  *secret.Redactor
}

// NewScrubber returns a Scrubber that knows the given secret values
// (the token) besides the rules; a queue given the driver's funnel uses
// ScrubberFor instead.
func NewScrubber(secrets ...string) *Scrubber {
	return &Scrubber{r: secret.NewRedactor(nil, secrets...)}
}

// ScrubberFor wraps the driver's funnel.
func ScrubberFor(r *secret.Redactor) *Scrubber { return &Scrubber{r: r} }

// Redactor is the funnel itself.
func (s *Scrubber) Redactor() *secret.Redactor {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r
}

// Add makes the funnel know v too: a token made later (a GitHub App's
// next installation token).
func (s *Scrubber) Add(v string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.r = s.r.With(v)
}

// Scrub returns text with every secret replaced by Redacted.
func (s *Scrubber) Scrub(text string) string { return s.Redactor().String(text) }

// ScrubLines scrubs each line.
func (s *Scrubber) ScrubLines(lines []string) []string { return s.Redactor().Lines(lines) }
