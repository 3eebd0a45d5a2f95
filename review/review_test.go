package review

import (
	"slices"
	"strings"
	"testing"
)

const (
	head = "1111111111111111111111111111111111111111"
	base = "2222222222222222222222222222222222222222"
)

func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := Fingerprint(head, base, []byte("# doc\n"), "1. [pending] **p1** — one")
	if len(fp) != 64 || strings.ToLower(fp) != fp {
		t.Fatalf("fingerprint %q is not lowercase sha256 hex", fp)
	}
	if again := Fingerprint(head, base, []byte("# doc\n"), "1. [pending] **p1** — one"); again != fp {
		t.Fatalf("not deterministic: %s then %s", fp, again)
	}
	tests := []struct {
		name                string
		head, base, doc, ml string
	}{
		{"other head", "3333333333333333333333333333333333333333", base, "# doc\n", "1. [pending] **p1** — one"},
		{"other base", head, "3333333333333333333333333333333333333333", "# doc\n", "1. [pending] **p1** — one"},
		{"other doc", head, base, "# doc!\n", "1. [pending] **p1** — one"},
		{"other line", head, base, "# doc\n", "1. [pending] **p1** — two"},
	}
	for _, tc := range tests {
		if Fingerprint(tc.head, tc.base, []byte(tc.doc), tc.ml) == fp {
			t.Errorf("%s: same fingerprint", tc.name)
		}
	}
	// The boundary between inputs counts: "ab"+"c" is not "a"+"bc".
	boundaries := [][2][4]string{
		{{"ab", "c", "d", "e"}, {"a", "bc", "d", "e"}},
		{{"a", "bc", "d", "e"}, {"a", "b", "cd", "e"}},
		{{"a", "b", "cd", "e"}, {"a", "b", "c", "de"}},
		{{"a", "b", "", "c"}, {"a", "b", "c", ""}},
	}
	for _, b := range boundaries {
		x, y := b[0], b[1]
		if Fingerprint(x[0], x[1], []byte(x[2]), x[3]) == Fingerprint(y[0], y[1], []byte(y[2]), y[3]) {
			t.Errorf("%q and %q give one fingerprint", x, y)
		}
	}
}

func TestFingerprintKnown(t *testing.T) {
	t.Parallel()
	// printf 'h\036b\036d\036m' | sha256sum
	const want = "00d4add47dfed08f490e23c475ee12a633717783a55ba2ef87fa0d8cda8a6619"
	if got := Fingerprint("h", "b", []byte("d"), "m"); got != want {
		t.Fatalf("Fingerprint = %s, want %s", got, want)
	}
}

func marker(verdict string, findings ...string) Marker {
	return Marker{Fingerprint: Fingerprint(head, base, []byte("doc"), "line"), Phase: "p1", Head: head, Base: base, Verdict: verdict, Findings: findings}
}

func TestParse(t *testing.T) {
	t.Parallel()
	good := marker(Pass).Line()
	fp := marker(Pass).Fingerprint
	tests := []struct {
		name string
		out  string
		want int // markers found
	}{
		{"one line", good + "\n", 1},
		{"no newline at end", "review text\n" + good, 1},
		{"CRLF", "text\r\n" + good + "\r\n", 1},
		{"indented", "   " + good + "  \n", 1},
		{"two", good + "\n" + marker(Blocking, "x").Line() + "\n", 2},
		{"none", "LGTM\n", 0},
		{"malformed JSON", Tag + `{"fingerprint":"` + fp + `","phase":"p1",` + tail, 0},
		{"missing findings", Tag + `{"fingerprint":"` + fp + `","phase":"p1","head":"` + head + `","base":"` + base + `","verdict":"PASS"}` + tail, 0},
		{"missing verdict", Tag + `{"fingerprint":"` + fp + `","phase":"p1","head":"` + head + `","base":"` + base + `","findings":[]}` + tail, 0},
		{"null findings", Tag + `{"fingerprint":"` + fp + `","phase":"p1","head":"` + head + `","base":"` + base + `","verdict":"PASS","findings":null}` + tail, 0},
		{"findings not strings", Tag + `{"fingerprint":"` + fp + `","phase":"p1","head":"` + head + `","base":"` + base + `","verdict":"PASS","findings":[1]}` + tail, 0},
		{"verdict not a string", Tag + `{"fingerprint":"` + fp + `","phase":"p1","head":"` + head + `","base":"` + base + `","verdict":true,"findings":[]}` + tail, 0},
		{"phase null", Tag + `{"fingerprint":"` + fp + `","phase":null,"head":"` + head + `","base":"` + base + `","verdict":"PASS","findings":[]}` + tail, 0},
		{"wrong tag", strings.Replace(good, "claudopilot-review:v1", "claudopilot-review:v2", 1), 0},
		{"other tag", strings.Replace(good, "claudopilot-review", "review", 1), 0},
		{"no closing", strings.TrimSuffix(good, tail), 0},
		{"inside other text", "see " + good, 0},
		{"array not object", Tag + `[1,2]` + tail, 0},
		{"pr a number", strings.Replace(good, `"findings":[]`, `"findings":[],"pr":7`, 1), 1},
		{"pr a string", strings.Replace(good, `"findings":[]`, `"findings":[],"pr":"7"`, 1), 0},
		{"pr zero", strings.Replace(good, `"findings":[]`, `"findings":[],"pr":0`, 1), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse([]byte(tc.out))
			if len(got) != tc.want {
				t.Fatalf("found %d markers, want %d: %+v", len(got), tc.want, got)
			}
			if tc.want > 0 && got[0].Phase != "p1" {
				t.Fatalf("marker %+v", got[0])
			}
		})
	}
	// A round trip keeps every field.
	m := marker(Blocking, "a", "b \"quoted\"")
	got := Parse([]byte(m.Line()))
	if len(got) != 1 || got[0].Verdict != Blocking || !slices.Equal(got[0].Findings, m.Findings) || got[0].Fingerprint != m.Fingerprint {
		t.Fatalf("round trip: %+v", got)
	}
}

func TestAccept(t *testing.T) {
	t.Parallel()
	want := Want{Phase: "p1", Fingerprint: marker(Pass).Fingerprint, Head: head, Base: base}
	other := func(f func(*Marker)) Marker {
		m := marker(Pass)
		f(&m)
		return m
	}
	tests := []struct {
		name     string
		ms       []Marker
		want     Kind
		findings []string
	}{
		{"pass", []Marker{marker(Pass)}, PassKind, nil},
		{"blocking", []Marker{marker(Blocking, "bug in x")}, BlockingKind, []string{"bug in x"}},
		{"nothing", nil, None, nil},
		{"other phase", []Marker{other(func(m *Marker) { m.Phase = "p2" })}, None, nil},
		{"other fingerprint", []Marker{other(func(m *Marker) { m.Fingerprint = strings.Repeat("0", 64) })}, None, nil},
		{"stale head", []Marker{other(func(m *Marker) { m.Head = base })}, None, nil},
		{"stale base", []Marker{other(func(m *Marker) { m.Base = head })}, None, nil},
		{"forged beside a real block", []Marker{other(func(m *Marker) { m.Phase = "p2" }), marker(Blocking, "f")}, BlockingKind, []string{"f"}},
		{"same verdict twice", []Marker{marker(Pass), marker(Pass)}, PassKind, nil},
		{"two verdicts", []Marker{marker(Pass), marker(Blocking, "no")}, BlockingKind, []string{"no"}},
		{"unknown verdict", []Marker{marker("LGTM")}, BlockingKind, nil},
		{"lowercase pass is unknown", []Marker{marker("pass")}, BlockingKind, nil},
		{"a pull request where none is wanted", []Marker{other(func(m *Marker) { m.PR = 7 })}, None, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Accept(tc.ms, want)
			if v.Kind != tc.want {
				t.Fatalf("kind %v, want %v (%s)", v.Kind, tc.want, v.Why)
			}
			if !slices.Equal(v.Findings, tc.findings) {
				t.Fatalf("findings %q, want %q", v.Findings, tc.findings)
			}
			if v.Kind == None && v.Why == "" {
				t.Fatal("no reason given for ignoring")
			}
		})
	}
	// Queue mode: the marker must name the pull request.
	pr := want
	pr.PR = 7
	if v := Accept([]Marker{marker(Pass)}, pr); v.Kind != None {
		t.Fatalf("a marker without the pull request trusted: %+v", v)
	}
	m := marker(Pass)
	m.PR = 7
	if v := Accept([]Marker{m}, pr); v.Kind != PassKind {
		t.Fatalf("a marker naming the pull request not trusted: %+v", v)
	}
	if got := Parse([]byte(m.Line())); len(got) != 1 || got[0].PR != 7 {
		t.Fatalf("round trip of pr: %+v", got)
	}
	// No live fingerprint (it could not be computed): nothing is trusted.
	if v := Accept([]Marker{{Phase: "p1"}}, Want{Phase: "p1"}); v.Kind != None {
		t.Fatalf("empty fingerprint trusted: %+v", v)
	}
}

func TestShare(t *testing.T) {
	t.Parallel()
	lenses := []string{"correctness", "security", "scope", "tests"}
	tests := []struct {
		n    int
		want [][]string
	}{
		{1, [][]string{lenses}},
		{0, [][]string{lenses}},
		{2, [][]string{{"correctness", "scope"}, {"security", "tests"}}},
		{4, [][]string{{"correctness"}, {"security"}, {"scope"}, {"tests"}}},
		{5, [][]string{{"correctness"}, {"security"}, {"scope"}, {"tests"}, {"correctness"}}},
	}
	for _, tc := range tests {
		got := Share(lenses, tc.n)
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("Share(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Share(nil, 2); len(got) != 2 || got[0] != nil {
		t.Errorf("Share(nil, 2) = %q", got)
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	pass := Verdict{Kind: PassKind}
	block := Verdict{Kind: BlockingKind, Findings: []string{"f1"}}
	none := Verdict{Kind: None, Why: "forged"}
	tests := []struct {
		name     string
		r        Round
		vs       []Verdict
		want     Action
		findings []string
	}{
		{"all pass", Round{N: 1, MaxRounds: 3}, []Verdict{pass, pass}, Land, nil},
		{"one blocks", Round{N: 1, MaxRounds: 3}, []Verdict{pass, block}, Rework, []string{"f1"}},
		{"blocks in the last round", Round{N: 3, MaxRounds: 3}, []Verdict{block}, Exhausted, []string{"f1"}},
		{"no verdict reruns once", Round{N: 1, MaxRounds: 3}, []Verdict{pass, none}, Rerun, nil},
		{"no verdict after the rerun blocks", Round{N: 1, MaxRounds: 3, Reran: true}, []Verdict{pass, none}, Rework, []string{"claudopilot: no trusted verdict: forged"}},
		{"no verdict after the rerun in the last round", Round{N: 1, MaxRounds: 1, Reran: true}, []Verdict{none}, Exhausted, []string{"claudopilot: no trusted verdict: forged"}},
		{"a block beats a missing verdict", Round{N: 1, MaxRounds: 3}, []Verdict{none, block}, Rework, []string{"f1", "claudopilot: no trusted verdict: forged"}},
		{"no reviewers", Round{N: 1, MaxRounds: 3, Reran: true}, nil, Rework, []string{"claudopilot: no reviewer gave a verdict"}},
		{"driver's reason is a finding", Round{N: 2, MaxRounds: 3}, []Verdict{{Kind: BlockingKind, Why: `unknown verdict "LGTM"`}}, Rework, []string{`claudopilot: unknown verdict "LGTM"`}},
		{"max rounds 0 means 1", Round{N: 1}, []Verdict{block}, Exhausted, []string{"f1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.r, tc.vs)
			if d.Action != tc.want {
				t.Fatalf("action %v, want %v", d.Action, tc.want)
			}
			if !slices.Equal(d.Findings, tc.findings) {
				t.Fatalf("findings %q, want %q", d.Findings, tc.findings)
			}
		})
	}
}
