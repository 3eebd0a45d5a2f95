package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/lazy"
	"github.com/claudopilot/claudopilot/secret"
)

// Open is an open issue, as the dedupe reads it.
type Open struct {
	Number      int
	Title, Body string
}

// Tracker is where proposals are filed (the queue's GitHub).
type Tracker interface {
	// OpenIssues lists every open issue (not pull requests).
	OpenIssues(ctx context.Context) ([]Open, error)
	// FileIssue opens an issue with labels and returns its number.
	FileIssue(ctx context.Context, title, body string, labels []string) (int, error)
}

// Filer dedupes candidates and files the rest as proposals.
type Filer struct {
	Tracker Tracker
	Ledger  *Ledger
	// Label is SCANNER_LABEL, put on every proposal; never the ready
	// label: a maintainer's label makes a proposal ready.
	Label string
	// Refused says which labels a candidate may not carry (the queue's
	// state labels: ready, claimed, blocked, …); they are dropped.
	Refused func(label string) bool
	Redact  *secret.Redactor
	Max     int // SCANNER_MAX_ISSUES: filed per run at most
	Now     func() time.Time
}

// Drop is a candidate not filed, and why.
type Drop struct {
	Candidate Candidate
	Why       string
}

// Filed is a proposal filed.
type Filed struct {
	Number int
	Title  string
}

// markerTag starts the hidden marker a proposal's body ends with: the
// scanner and the fingerprint, read back by the dedupe.
const markerTag = "<!-- claudopilot-scanner "

var markerRE = lazy.Regexp(`<!-- claudopilot-scanner (\{[^\n]*\}) -->`)

type marker struct {
	Scanner     string `json:"scanner"`
	Fingerprint string `json:"fingerprint"`
}

// Plan splits candidates into those to file (at most Max) and those
// dropped: a fingerprint in the ledger, or in an open issue's marker, or
// a title an open issue has already.
func (f *Filer) Plan(ctx context.Context, scanner string, cands []Candidate) (file []Candidate, drops []Drop, err error) {
	st, err := f.Ledger.Read()
	if err != nil {
		return nil, nil, err
	}
	open, err := f.Tracker.OpenIssues(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the open issues: %w", err)
	}
	openFP, openTitle := map[string]int{}, map[string]int{}
	for _, o := range open {
		for _, m := range markerRE().FindAllStringSubmatch(o.Body, -1) {
			var mk marker
			if json.Unmarshal([]byte(m[1]), &mk) == nil {
				openFP[key(mk.Scanner, mk.Fingerprint)] = o.Number
			}
		}
		openTitle[strings.ToLower(strings.TrimSpace(o.Title))] = o.Number
	}
	for _, c := range cands {
		k := key(scanner, c.Fingerprint)
		switch n, byTitle := openTitle[strings.ToLower(f.redact(c.Title))]; {
		case st.Filed[k] != 0:
			drops = append(drops, Drop{c, fmt.Sprintf("filed before as #%d (the scanner ledger)", st.Filed[k])})
		case openFP[k] != 0:
			drops = append(drops, Drop{c, fmt.Sprintf("open as #%d", openFP[k])})
		case byTitle:
			drops = append(drops, Drop{c, fmt.Sprintf("an open issue has this title: #%d", n)})
		case len(file) >= max(f.Max, 1):
			drops = append(drops, Drop{c, fmt.Sprintf("over SCANNER_MAX_ISSUES (%d)", max(f.Max, 1))})
		default:
			file = append(file, c)
			openTitle[strings.ToLower(f.redact(c.Title))] = -1 // two candidates of one title: the first
		}
	}
	return file, drops, nil
}

// File files each candidate as a proposal and writes each to the ledger
// as it is filed, so a crash part-way files nothing twice.
func (f *Filer) File(ctx context.Context, scanner, head string, cands []Candidate) ([]Filed, error) {
	var out []Filed
	for _, c := range cands {
		title := f.redact(c.Title)
		n, err := f.Tracker.FileIssue(ctx, title, f.body(scanner, head, c), f.labels(c))
		if err != nil {
			return out, fmt.Errorf("filing %q: %w", title, err)
		}
		out = append(out, Filed{Number: n, Title: title})
		if err := f.Ledger.Append(Record{At: f.now(), Kind: KindFiled, Scanner: scanner, Fingerprint: c.Fingerprint, Issue: n, Title: title}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// body is a proposal's body: the candidate's (redacted), who proposed it,
// and the marker.
func (f *Filer) body(scanner, head string, c Candidate) string {
	mk, _ := json.Marshal(marker{Scanner: scanner, Fingerprint: c.Fingerprint})
	short := head
	if len(short) > 12 {
		short = short[:12]
	}
	return fmt.Sprintf("%s\n\n---\n_Proposed by claudopilot's `%s` scanner at %s. Nothing is worked on until a maintainer adds the ready label._\n\n%s%s -->\n",
		strings.TrimRight(f.redact(c.Body), "\n"), scanner, short, markerTag, mk)
}

// labels are SCANNER_LABEL and the candidate's own, less the refused.
func (f *Filer) labels(c Candidate) []string {
	out := []string{f.Label}
	for _, l := range c.Labels {
		l = strings.TrimSpace(l)
		if strings.EqualFold(l, f.Label) || (f.Refused != nil && f.Refused(l)) {
			continue
		}
		out = append(out, l)
	}
	return out
}

func (f *Filer) redact(s string) string {
	s = strings.TrimSpace(s)
	if f.Redact == nil {
		return s
	}
	return f.Redact.String(s)
}

func (f *Filer) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}
