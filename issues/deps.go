package issues

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// Deps are the dependencies an issue body declares.
type Deps struct {
	Issues   []int    // "#12" references, in the order written, without repeats
	Phases   []string // manifest phase ids ("phase-03"), in the order written, without repeats
	External []Ref    // "owner/repo#12" and issue or pull request URLs, in the order written, without repeats
}

// Ref is an issue (or pull request) of a named repository.
type Ref struct {
	Owner, Repo string
	N           int
}

// String is "owner/repo#N".
func (r Ref) String() string { return fmt.Sprintf("%s/%s#%d", r.Owner, r.Repo, r.N) }

// Local moves the external refs that name repository owner/repo itself
// (compared case-insensitively, as GitHub does) into Issues.
func (d Deps) Local(owner, repo string) Deps {
	var ext []Ref
	for _, r := range d.External {
		if strings.EqualFold(r.Owner, owner) && strings.EqualFold(r.Repo, repo) {
			d.addIssue(r.N)
			continue
		}
		ext = append(ext, r)
	}
	d.External = ext
	return d
}

// IDs returns the deps as graph ids: "#12" for issues, the phase id as is.
func (d Deps) IDs() []string {
	out := make([]string, 0, len(d.Issues)+len(d.Phases))
	for _, n := range d.Issues {
		out = append(out, IssueID(n))
	}
	return append(out, d.Phases...)
}

func (d *Deps) addIssue(n int) {
	for _, m := range d.Issues {
		if m == n {
			return
		}
	}
	d.Issues = append(d.Issues, n)
}

func (d *Deps) addExternal(r Ref) {
	for _, m := range d.External {
		if strings.EqualFold(m.String(), r.String()) {
			return
		}
	}
	d.External = append(d.External, r)
}

func (d *Deps) addPhase(id string) {
	for _, p := range d.Phases {
		if p == id {
			return
		}
	}
	d.Phases = append(d.Phases, id)
}

// IssueID is the graph id of issue n: "#n".
func IssueID(n int) string { return "#" + strconv.Itoa(n) }

// ParseIssueID parses a graph id "#n" (n ≥ 1).
func ParseIssueID(id string) (int, bool) {
	s, ok := strings.CutPrefix(id, "#")
	if !ok || s == "" || s[0] == '0' || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

var (
	// depLine matches a dependency sentence: "Depends on #12",
	// "Blocked by: #12, #14", "depends on phase-03 and #4."
	depLine = lazy.Regexp(`(?i)^\s*(?:depends\s+on|blocked\s+by)\s*:?\s+(.+)$`)
	// depHeading matches the title of a dependency section.
	depHeading = lazy.Regexp(`(?i)^\s*(?:dependencies|depends\s+on|blocked\s+by)\s*:?\s*$`)
	// phaseLike is what an unknown word must look like to be taken for a
	// phase id: letters and a digit ("phase-03", "p1"); plain words never are.
	phaseLike = lazy.Regexp(`^[A-Za-z][A-Za-z0-9._-]*[0-9][A-Za-z0-9._-]*$`)
	idChars   = lazy.Regexp(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
	// repoRef is "owner/repo#12".
	repoRef = lazy.Regexp(`^([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+)#([1-9][0-9]{0,8})$`)
	// issueURL is an issue's or pull request's page on any GitHub host,
	// with or without a fragment (a comment's link).
	issueURL = lazy.Regexp(`^https?://[^/\s]+/([A-Za-z0-9][A-Za-z0-9-]*)/([A-Za-z0-9._-]+)/(?:issues|pull)/([1-9][0-9]{0,8})(?:[/?#][^\s]*)?$`)
)

// parseRef reads "owner/repo#N" or an issue URL.
func parseRef(w string) (Ref, bool) {
	m := repoRef().FindStringSubmatch(w)
	if m == nil {
		m = issueURL().FindStringSubmatch(w)
	}
	if m == nil {
		return Ref{}, false
	}
	n, err := strconv.Atoi(m[3])
	if err != nil {
		return Ref{}, false
	}
	return Ref{Owner: m[1], Repo: m[2], N: n}, true
}

// ParseDeps reads the dependencies from an issue body (GitHub-flavoured
// markdown, parsed with goldmark, so code blocks, code fences, HTML and
// block quotes never count):
//
//   - a line "Depends on #12" or "Blocked by #12, #14" (also "depends on:",
//     "and", several refs; "Depends on phase-03" names a manifest phase;
//     "owner/repo#12" and an issue or pull request URL name an issue of
//     any repository), anywhere in a paragraph or list item;
//   - every list item (task items "- [ ] #12" included) under a heading
//     "Dependencies" (or "Depends on", "Blocked by"), up to the next heading
//     of the same or a higher level, or in the list right after a paragraph
//     that says just "Dependencies:". The item's leading refs count.
//
// isPhase tells known manifest phase ids (nil: none known); other words
// count as phase refs only when they look like one (letters and a digit,
// "phase-03"), so "Depends on the login work" declares nothing.
func ParseDeps(body string, isPhase func(string) bool) Deps {
	src := []byte(strings.ReplaceAll(body, "\r\n", "\n"))
	doc := depsParser().Parse(text.NewReader(src))
	p := depParser{src: src, isPhase: isPhase}
	p.blocks(doc, false, 0)
	return p.deps
}

type depParser struct {
	src     []byte
	isPhase func(string) bool
	deps    Deps
	// section is the level of the open "Dependencies" heading, 0 if none.
	section int
}

// blocks walks block nodes in document order. inList is true inside a
// dependency list (a section's, or the one after a "Dependencies:" line).
func (p *depParser) blocks(n ast.Node, inList bool, depth int) {
	var prevLabel bool // the previous sibling was a "Dependencies:" paragraph
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		label := false
		switch c := c.(type) {
		case *ast.Heading:
			lines := p.lines(c)
			title := strings.Join(lines, " ")
			switch {
			case depHeading().MatchString(title):
				p.section = c.Level
			case p.section > 0 && c.Level <= p.section:
				p.section = 0
			}
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock, *ast.Blockquote, *ast.ThematicBreak:
			// Quoted or literal text declares nothing.
		case *ast.Paragraph, *ast.TextBlock:
			lines := p.lines(c)
			if len(lines) == 1 && depHeading().MatchString(stripEmphasisMarks(lines[0])) {
				label = true
			}
			for i, l := range lines {
				if m := depLine().FindStringSubmatch(l); m != nil {
					p.refs(m[1])
					continue
				}
				// The first line of an item in a dependency list.
				if i == 0 && inList && c.Parent() != nil && c.Parent().Kind() == ast.KindListItem && c.PreviousSibling() == nil {
					p.refs(l)
				}
			}
		case *ast.List:
			p.blocks(c, inList || prevLabel || p.section > 0, depth+1)
		default:
			p.blocks(c, inList, depth+1)
		}
		prevLabel = label
	}
}

// lines returns the text of a block's inline content, split at line
// breaks. Code spans and link texts count as text; raw HTML and task
// checkboxes do not.
func (p *depParser) lines(n ast.Node) []string {
	var b strings.Builder
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				b.Write(c.Value(p.src))
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte('\n')
				}
			case *ast.String:
				b.Write(c.Value)
			case *ast.AutoLink:
				b.Write(c.Label(p.src))
			case *ast.Link:
				// [#5](https://github.com/o/r/issues/5) names its target.
				if _, ok := parseRef(string(c.Destination)); ok {
					b.Write(c.Destination)
				} else {
					walk(c)
				}
			case *ast.RawHTML, *east.TaskCheckBox:
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return strings.Split(b.String(), "\n")
}

func stripEmphasisMarks(s string) string { return strings.Trim(strings.TrimSpace(s), "*_") }

// refs reads the refs at the start of s: "#12, #14 and phase-03 (why)"
// gives #12, #14, phase-03; it stops at the first word that is not a ref.
func (p *depParser) refs(s string) {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '&'
	}) {
		if strings.EqualFold(w, "and") {
			continue
		}
		w = strings.TrimRight(strings.TrimLeft(w, "(`*_"), ".:;!?)`*_")
		if w == "" {
			continue
		}
		if n, ok := ParseIssueID(w); ok {
			p.deps.addIssue(n)
			continue
		}
		if r, ok := parseRef(w); ok {
			p.deps.addExternal(r)
			continue
		}
		if strings.HasPrefix(w, "#") {
			return
		}
		if idChars().MatchString(w) && ((p.isPhase != nil && p.isPhase(w)) || phaseLike().MatchString(w)) {
			p.deps.addPhase(w)
			continue
		}
		return
	}
}
