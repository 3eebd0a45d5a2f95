package prompts

// ReviewData is what the reviewer prompt (reviewer.md) can use.
type ReviewData struct {
	ID, Title    string
	Round        int
	Lens         string // the lenses this reviewer reads through, comma-separated
	Doc          string // the phase doc at head, relative to the checkout root
	Checkout     string // the read-only checkout of the head
	Head, Base   string // full SHAs
	BaseBranch   string
	Diff         string // a file holding git diff base...head
	Gate         string // the gate command, green on head
	GateLog      string // its log, if known
	Fingerprint  string
	ManifestLine string // a file holding the phase's manifest line
	Marker       string // an example marker line with this review's fields
	// PR is the pull request under review in queue mode (0 for a
	// roadmap phase): Doc then holds the issue body and ManifestLine the
	// pull request's body.
	PR int
}
