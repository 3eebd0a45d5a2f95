package secret

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/claudopilot/claudopilot/worktree"
)

// Known is the driver's own secret values (the GitHub token) in every
// form they may take in text: raw, URL-escaped, base64, and the base64 of
// the basic-auth pair git sends ("x-access-token:<token>").
type Known struct {
	forms []string // longest first, so a form holding another is found whole
}

// NewKnown returns the forms of values; empty and very short values
// (under 6 bytes, which would match ordinary words) are left out.
func NewKnown(values ...string) *Known {
	k := &Known{}
	for _, v := range values {
		if len(v) < 6 {
			continue
		}
		k.forms = append(k.forms, v, url.QueryEscape(v),
			base64.StdEncoding.EncodeToString([]byte(v)),
			base64.StdEncoding.EncodeToString([]byte("x-access-token:"+v)))
	}
	sort.SliceStable(k.forms, func(i, j int) bool { return len(k.forms[i]) > len(k.forms[j]) })
	return k
}

// Forms are the forms to look for, longest first.
func (k *Known) Forms() []string {
	if k == nil {
		return nil
	}
	return k.forms
}

// In reports whether s holds one of the forms.
func (k *Known) In(s string) bool {
	for _, f := range k.Forms() {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}

// KindKnown is the kind of a finding that holds one of the driver's own
// secrets.
const KindKnown = "the driver's own secret (the GitHub token)"

// Push scans what pushing to would publish beyond from: Landing's scan
// (the secret shapes in the lines the tree and each commit add) with every
// added line also checked for known's forms, and each commit's message
// checked for both. A finding names the file (or "commit message") and
// line, never the value.
func Push(ctx context.Context, git *worktree.Client, from, to string, known *Known) ([]Finding, error) {
	check := func(line string) string {
		if known.In(line) {
			return KindKnown
		}
		return Line(line)
	}
	found, err := landing(ctx, git, from, to, check)
	if err != nil {
		return nil, err
	}
	out, err := git.GitIn(ctx, "", "log", "--format=%x00%H%n%B", "--end-of-options", from+".."+to)
	if err != nil {
		return nil, fmt.Errorf("scan for secrets: %w", err)
	}
	for _, c := range strings.Split(out, "\x00") {
		sha, msg, ok := strings.Cut(c, "\n")
		if !ok {
			continue
		}
		for i, l := range strings.Split(msg, "\n") {
			if kind := check(l); kind != "" {
				found = append(found, Finding{Path: "commit message", Line: i + 1, Kind: kind, Commit: sha})
			}
		}
	}
	return found, nil
}
