package review

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Verdicts a reviewer may give.
const (
	Pass     = "PASS"
	Blocking = "BLOCKING"
)

// Tag opens a marker line; the JSON object and " -->" follow.
const Tag = "<!-- claudopilot-review:v1 "

const tail = " -->"

// sep joins the fingerprint's inputs. It cannot occur in a SHA, and a
// boundary moved between two inputs changes the hash ("ab"+"c" is not
// "a"+"bc").
const sep = 0x1e

// Fingerprint binds a review to what the reviewer read: the head it
// reviewed, the base that head would merge with, the phase doc's bytes as
// committed at head, and the phase's manifest line. Lowercase hex sha256.
func Fingerprint(head, base string, doc []byte, manifestLine string) string {
	h := sha256.New()
	h.Write([]byte(head))
	h.Write([]byte{sep})
	h.Write([]byte(base))
	h.Write([]byte{sep})
	h.Write(doc)
	h.Write([]byte{sep})
	h.Write([]byte(manifestLine))
	return hex.EncodeToString(h.Sum(nil))
}

// Marker is one parsed marker line.
type Marker struct {
	Fingerprint string   `json:"fingerprint"`
	Phase       string   `json:"phase"`
	Head        string   `json:"head"`
	Base        string   `json:"base"`
	Verdict     string   `json:"verdict"`
	Findings    []string `json:"findings"`
	// PR is the pull request a queue-mode verdict is about; absent
	// (0) in roadmap mode.
	PR int `json:"pr,omitempty"`
}

// Line renders m as the marker line a reviewer prints.
func (m Marker) Line() string {
	if m.Findings == nil {
		m.Findings = []string{}
	}
	b, _ := json.Marshal(m)
	return Tag + string(b) + tail
}

// Parse returns every well-formed marker line in a reviewer's output, in
// order. A line counts only when, CR and surrounding blanks aside, it is
// exactly the tag, one JSON object and " -->". A malformed line (bad JSON,
// a missing or mistyped field, another tag or version) is no marker at all.
func Parse(out []byte) []Marker {
	var ms []Marker
	for _, line := range bytes.Split(out, []byte("\n")) {
		if m, ok := parseLine(string(line)); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

func parseLine(line string) (Marker, bool) {
	line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
	body, ok := strings.CutPrefix(line, Tag)
	if !ok {
		return Marker{}, false
	}
	body, ok = strings.CutSuffix(body, tail)
	if !ok {
		return Marker{}, false
	}
	// Every field must be present with its type: json.Unmarshal into
	// the struct would take a missing field as empty.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		return Marker{}, false
	}
	var m Marker
	str := map[string]*string{"fingerprint": &m.Fingerprint, "phase": &m.Phase, "head": &m.Head, "base": &m.Base, "verdict": &m.Verdict}
	for k, dst := range str {
		v, has := raw[k]
		if !has || json.Unmarshal(v, dst) != nil || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return Marker{}, false
		}
	}
	if v, has := raw["pr"]; has && (json.Unmarshal(v, &m.PR) != nil || m.PR <= 0) {
		return Marker{}, false
	}
	v, has := raw["findings"]
	if !has || bytes.Equal(bytes.TrimSpace(v), []byte("null")) || json.Unmarshal(v, &m.Findings) != nil {
		return Marker{}, false
	}
	if m.Findings == nil {
		m.Findings = []string{}
	}
	return m, true
}

// Want is what a marker must name to be trusted: the phase under review and
// the live fingerprint, recomputed by the driver at acceptance, with the
// head and base it was computed from.
type Want struct {
	Phase       string
	Fingerprint string
	Head, Base  string
	PR          int // queue mode: the marker must name this pull request
}

// Kind is what one reviewer's output amounts to.
type Kind int

const (
	// None: no trusted marker (none at all, malformed, or failing a
	// check). The round may be run again once.
	None Kind = iota
	PassKind
	BlockingKind
)

func (k Kind) String() string {
	switch k {
	case PassKind:
		return Pass
	case BlockingKind:
		return Blocking
	}
	return "none"
}

// Verdict is one reviewer's accepted verdict.
type Verdict struct {
	Kind     Kind
	Findings []string
	// Why explains a None, or a BLOCKING the driver decided (two verdicts,
	// an unknown verdict).
	Why string
}

// Accept picks the verdict out of the markers of one reviewer's output.
// Markers that name another phase, another fingerprint, head or base are
// ignored (forged or stale). Among the rest: two different verdicts block,
// an unknown verdict blocks, and otherwise the verdict stands.
func Accept(ms []Marker, w Want) Verdict {
	var trusted []Marker
	ignored := 0
	for _, m := range ms {
		if m.Phase != w.Phase || m.Fingerprint != w.Fingerprint || m.Head != w.Head || m.Base != w.Base || m.PR != w.PR || w.Fingerprint == "" {
			ignored++
			continue
		}
		trusted = append(trusted, m)
	}
	if len(trusted) == 0 {
		why := "no review marker in the reviewer's output"
		if ignored > 0 {
			why = fmt.Sprintf("%d review marker(s) ignored: they name another phase, fingerprint, head, base or pull request (forged or stale)", ignored)
		}
		return Verdict{Kind: None, Why: why}
	}
	var findings []string
	verdicts := map[string]bool{}
	for _, m := range trusted {
		verdicts[m.Verdict] = true
		for _, f := range m.Findings {
			if !slices.Contains(findings, f) {
				findings = append(findings, f)
			}
		}
	}
	if len(verdicts) > 1 {
		return Verdict{Kind: BlockingKind, Findings: findings, Why: "two different verdicts for one fingerprint"}
	}
	switch trusted[0].Verdict {
	case Pass:
		return Verdict{Kind: PassKind, Findings: findings}
	case Blocking:
		return Verdict{Kind: BlockingKind, Findings: findings}
	}
	return Verdict{Kind: BlockingKind, Findings: findings, Why: fmt.Sprintf("unknown verdict %q", trusted[0].Verdict)}
}

// Share gives each of n reviewers its lenses. One reviewer takes them
// all; with fewer reviewers than lenses they share them out in turn; with
// more, each takes one lens, the lenses going round again.
func Share(lenses []string, n int) [][]string {
	n = max(n, 1)
	out := make([][]string, n)
	if len(lenses) == 0 {
		return out
	}
	if n <= len(lenses) {
		for i, l := range lenses {
			out[i%n] = append(out[i%n], l)
		}
		return out
	}
	for i := range out {
		out[i] = []string{lenses[i%len(lenses)]}
	}
	return out
}

// Action is what a round's verdicts decide.
type Action int

const (
	// Land: every reviewer passed.
	Land Action = iota
	// Rework: a reviewer blocked; the findings go to a worker attempt and
	// the next round follows.
	Rework
	// Rerun: a reviewer gave no trusted verdict; the round runs again
	// (once).
	Rerun
	// Exhausted: blocked in the last round; halt or park with reason
	// review.
	Exhausted
)

func (a Action) String() string {
	return [...]string{"land", "rework", "rerun", "exhausted"}[a]
}

// Round is one round's state as the decision needs it.
type Round struct {
	N         int  // 1-based
	MaxRounds int  // REVIEW_MAX_ROUNDS
	Reran     bool // this round was already run again once
}

// Decision is the outcome of a round.
type Decision struct {
	Action   Action
	Findings []string
}

// Decide turns one round's verdicts into what happens next. A reviewer
// without a trusted verdict reruns the round once; after that it counts as
// blocking (fail closed). Any BLOCKING sends the findings to a worker, or
// ends the review after the last round; only a round where every reviewer
// passed lands.
func Decide(r Round, vs []Verdict) Decision {
	var d Decision
	blocked, none := false, false
	for _, v := range vs {
		switch v.Kind {
		case PassKind:
		case BlockingKind:
			blocked = true
			d.Findings = append(d.Findings, v.Findings...)
			if v.Why != "" {
				d.Findings = append(d.Findings, "claudopilot: "+v.Why)
			}
		default:
			none = true
		}
	}
	if len(vs) == 0 {
		none = true
	}
	if none && !blocked && !r.Reran {
		d.Action = Rerun
		d.Findings = nil
		return d
	}
	if none {
		blocked = true
		for _, v := range vs {
			if v.Kind == None {
				d.Findings = append(d.Findings, "claudopilot: no trusted verdict: "+v.Why)
			}
		}
		if len(vs) == 0 {
			d.Findings = append(d.Findings, "claudopilot: no reviewer gave a verdict")
		}
	}
	if !blocked {
		d.Action = Land
		return d
	}
	if r.N >= max(r.MaxRounds, 1) {
		d.Action = Exhausted
	} else {
		d.Action = Rework
	}
	return d
}
