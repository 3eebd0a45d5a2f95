package secret

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Redacted stands for every secret the Redactor removes.
const Redacted = "[REDACTED]"

// ruleKnown is a hit of a value the driver knows to be secret.
const ruleKnown = "known-secret"

// Redactor is the one funnel every text the driver writes goes through:
// logs, the journal, events, notifications, the web API, what is posted
// on GitHub. It removes the values of the secret-named variables of the
// driver's environment (in their raw, URL-escaped and base64 forms) and
// every secret the rules find (shapes, assignments, base64 of either).
// Built once; safe for concurrent use. A nil Redactor removes what the
// rules find.
type Redactor struct {
	vals  []knownValue // the values, raw
	known []knownValue // every form of each
	rep   *strings.Replacer
}

// knownValue is one form of a secret value and the variable it is from.
type knownValue struct{ name, text string }

// minKnown is the shortest value redacted by value: a shorter one would
// redact ordinary words.
const minKnown = 8

// SecretEnv says whether an environment variable holds a secret by its
// name: the GitHub token, and *_TOKEN, *_KEY, *_SECRET, *_PASSWORD (and
// *_PASS, *_PWD, *_CREDENTIALS), but not LANE_<id>_CREDENTIALS, a path.
func SecretEnv(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasPrefix(n, "LANE_") && strings.HasSuffix(n, "_CREDENTIALS") {
		return false // a lane's account: the path of its configuration folder (docs/lanes.md)
	}
	switch n {
	case "GITHUB_TOKEN", "GH_TOKEN", "TOKEN", "PASSWORD", "SECRET":
		return true
	}
	for _, suf := range []string{"_TOKEN", "_KEY", "_SECRET", "_PASSWORD", "_PASS", "_PWD", "_CREDENTIALS"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// NewRedactor collects the values of env's secret-named variables
// (SecretEnv) and extra values (name "" for them), in every form.
func NewRedactor(env []string, extra ...string) *Redactor {
	var vals []knownValue
	for _, kv := range env {
		if name, v, ok := strings.Cut(kv, "="); ok && SecretEnv(name) {
			vals = append(vals, knownValue{name, v})
		}
	}
	for _, v := range extra {
		vals = append(vals, knownValue{"", v})
	}
	return build(vals)
}

// With is r knowing values too (r itself when it knows them all).
func (r *Redactor) With(values ...string) *Redactor {
	var vals []knownValue
	if r != nil {
		vals = slices.Clone(r.vals)
	}
	added := false
	for _, v := range values {
		if worth(v) && !slices.ContainsFunc(vals, func(k knownValue) bool { return k.text == v }) {
			vals, added = append(vals, knownValue{"", v}), true
		}
	}
	if !added && r != nil {
		return r
	}
	return build(vals)
}

// worth: v is long enough to redact by value; a shorter one, a path or a
// number would cost a word of every log.
func worth(v string) bool {
	return len(v) >= minKnown && !strings.HasPrefix(v, "/") && strings.Trim(v, "0123456789") != ""
}

func build(vals []knownValue) *Redactor {
	r := &Redactor{}
	for _, kv := range vals {
		if !worth(kv.text) {
			continue
		}
		r.vals = append(r.vals, kv)
		for _, form := range forms(kv.text) {
			r.known = append(r.known, knownValue{kv.name, form})
		}
	}
	// Longest first, so a form holding another is replaced whole.
	slices.SortStableFunc(r.known, func(a, b knownValue) int { return cmp.Compare(len(b.text), len(a.text)) })
	r.known = slices.CompactFunc(r.known, func(a, b knownValue) bool { return a.text == b.text })
	pairs := make([]string, 0, 2*len(r.known))
	for _, k := range r.known {
		pairs = append(pairs, k.text, Redacted)
	}
	r.rep = strings.NewReplacer(pairs...)
	return r
}

// forms are the ways v shows in text: raw, URL-escaped, and base64 in
// either alphabet at each of the three offsets it may start at inside a
// longer encoded string ("x-access-token:<token>" of a git credential),
// without the characters that also encode its neighbours.
func forms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), base64.StdEncoding.EncodeToString([]byte(v)), base64.URLEncoding.EncodeToString([]byte(v))}
	for k := range 3 {
		b := append(make([]byte, k), v...)
		from, to := (8*k+5)/6, 8*(k+len(v))/6
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			if s := enc.EncodeToString(b); to-from >= minKnown {
				out = append(out, s[from:to])
			}
		}
	}
	return out
}

// String returns s with every secret replaced by Redacted.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	s = r.values(s)
	if !strings.Contains(s, "\n") {
		return redactHits(s)
	}
	var st stream
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = st.line(l)
	}
	return strings.Join(lines, "\n")
}

// values replaces the known values in s.
func (r *Redactor) values(s string) string {
	if r == nil || len(r.known) == 0 {
		return s
	}
	return r.rep.Replace(s)
}

// Lines redacts each line.
func (r *Redactor) Lines(lines []string) []string {
	out := make([]string, len(lines))
	var st stream
	for i, l := range lines {
		out[i] = st.line(r.values(l))
	}
	return out
}

// Stream redacts a text that comes in pieces (a process's output), one
// line at a time as each ends. Not safe for concurrent use.
type Stream struct {
	r       *Redactor
	st      stream
	pending []byte
}

// Stream starts a Stream.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// maxPending bounds a line held back for its end: past it, the line's
// part before its last word (a token cut in two would escape) goes out.
const maxPending = 64 << 10

// Write takes the next piece and returns, redacted, the lines it ends.
func (s *Stream) Write(p []byte) []byte {
	s.pending = append(s.pending, p...)
	var out []byte
	for {
		i := bytes.IndexByte(s.pending, '\n')
		if i < 0 {
			break
		}
		out = append(append(out, s.st.line(s.r.values(string(s.pending[:i])))...), '\n')
		s.pending = s.pending[i+1:]
	}
	if len(s.pending) > maxPending {
		cut := len(s.pending) - len(lastWord(string(s.pending[len(s.pending)-overlap:])))
		out = append(out, s.st.line(s.r.values(string(s.pending[:cut])))...)
		s.pending = s.pending[cut:]
	}
	if len(s.pending) == 0 {
		s.pending = nil // do not keep a large buffer alive
	}
	return out
}

// Line redacts one whole line of the stream.
func (s *Stream) Line(l string) string { return s.st.line(s.r.values(l)) }

// Flush returns the rest, redacted: the output has ended.
func (s *Stream) Flush() []byte {
	if len(s.pending) == 0 {
		return nil
	}
	out := []byte(s.st.line(s.r.values(string(s.pending))))
	s.pending = nil
	return out
}

// Writer redacts every write to w: for writers whose writes are whole
// lines (the driver's notes and warnings).
func (r *Redactor) Writer(w io.Writer) io.Writer { return redactWriter{r, w} }

type redactWriter struct {
	r *Redactor
	w io.Writer
}

func (rw redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(rw.w, rw.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactHits replaces what the rules find in one line.
func redactHits(line string) string {
	hs := lineHits(line)
	if len(hs) == 0 {
		return line
	}
	slices.SortFunc(hs, func(a, b hit) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
	var b strings.Builder
	at := 0
	for _, h := range hs {
		if h.end <= at {
			continue // inside one already replaced
		}
		b.WriteString(line[at:max(at, h.start)])
		b.WriteString(Redacted)
		at = h.end
	}
	b.WriteString(line[at:])
	return b.String()
}

// stream carries what spans lines in a text read line by line: a private
// key's block, whose body lines hold no shape of their own.
type stream struct{ inKey bool }

var keyEnd = "-----END "

// line redacts one line of a stream.
func (st *stream) line(l string) string {
	if st.inKey {
		i := strings.Index(l, keyEnd)
		if i < 0 {
			return Redacted
		}
		st.inKey = false
		if strings.TrimSpace(l[:i]) == "" {
			return l
		}
		return Redacted + l[i:]
	}
	out := redactHits(l)
	if strings.Contains(l, "PRIVATE KEY") && Shapes()[privateKeyShape()].Re.MatchString(l) {
		m := Shapes()[privateKeyShape()].Re.FindAllString(l, -1)
		st.inKey = !strings.Contains(m[len(m)-1], keyEnd)
	}
	return out
}

// privateKeyShape is the private key's index in Shapes.
var privateKeyShape = sync.OnceValue(func() int { return slices.IndexFunc(Shapes(), func(s Shape) bool { return s.Rule == rulePrivateKey }) })

// knownHits finds the known values in line, for the scan: a landing
// must not carry the driver's own secrets either.
func (r *Redactor) knownHits(line string) []hit {
	if r == nil {
		return nil
	}
	var out []hit
	for _, k := range r.known {
		if i := strings.Index(line, k.text); i >= 0 {
			detail := "the value of " + k.name
			if k.name == "" {
				detail = "a value the driver holds"
			}
			out = append(out, hit{rule: ruleKnown, detail: detail, start: i, end: i + len(k.text)})
		}
	}
	return out
}
