package manifest

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Parse reads a manifest. It returns every problem it finds as an ErrorList
// in line order, together with a Manifest holding the phases that did parse,
// so a caller can append its own checks (unknown deps, cycles) and report
// everything at once. A file without phases is not an error here: whether
// that is acceptable is the caller's decision.
func Parse(src []byte) (*Manifest, error) {
	// The Manifest keeps the bytes its spans point into; a private copy means a
	// caller reusing its buffer cannot silently corrupt later edits.
	src = bytes.Clone(src)
	if src == nil {
		src = []byte{}
	}
	p := &parser{
		src:   src,
		lines: lineStarts(src),
		m:     &Manifest{Src: src},
		ids:   map[string]int{},
	}
	// goldmark does not skip a UTF-8 byte order mark, and with one in front
	// the first line would not be a heading or list item. It therefore sees
	// the text after the mark, and every segment it returns is shifted back
	// by p.base.
	if bytes.HasPrefix(src, []byte(bom)) {
		p.base = len(bom)
	}
	doc := goldmark.DefaultParser().Parse(text.NewReader(src[p.base:]))
	// The walk callback never returns an error.
	_ = ast.Walk(doc, p.visit)

	if len(p.errs) == 0 {
		return p.m, nil
	}
	sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
	return p.m, p.errs
}

type parser struct {
	src   []byte
	lines []int // byte offset of the start of each line
	m     *Manifest
	errs  ErrorList
	ids   map[string]int // phase id -> line of its first definition
	base  int            // offset in src of the text goldmark parsed
}

const bom = "\uFEFF"

// start returns the source offset of line i of a goldmark node.
func (p *parser) start(lines *text.Segments, i int) int { return lines.At(i).Start + p.base }

// segments returns a node's segments as offsets into p.src.
func (p *parser) segments(s *text.Segments) []text.Segment {
	out := make([]text.Segment, s.Len())
	for i := range out {
		out[i] = s.At(i)
		out[i].Start += p.base
		out[i].Stop += p.base
	}
	return out
}

func (p *parser) errorf(off int, format string, args ...any) {
	p.errs = append(p.errs, &Error{Line: p.lineOf(off), Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) visit(n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	switch n := n.(type) {
	case *ast.ListItem:
		p.listItem(n)
	case *ast.Paragraph:
		// Settings are file-level: a "**Status:**" inside a list or quote is
		// prose about some other thing.
		if n.Parent() != nil && n.Parent().Kind() == ast.KindDocument {
			p.settings(n)
		}
	case *ast.Heading:
		p.heading(n)
	case *ast.HTMLBlock:
		p.htmlBlock(n)
		return ast.WalkSkipChildren, nil
	case *ast.RawHTML:
		p.checkpoints(p.segments(n.Segments))
	case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.CodeSpan:
		return ast.WalkSkipChildren, nil
	}
	return ast.WalkContinue, nil
}

// listItem matches the phase grammar on the raw first line of the item's
// first block. Raw bytes, not inline nodes: "[pending]" turns into a link
// when the file happens to define a "[pending]: url" reference.
func (p *parser) listItem(li *ast.ListItem) {
	first := li.FirstChild()
	if first == nil {
		return
	}
	switch first.Kind() {
	case ast.KindParagraph, ast.KindTextBlock:
	case ast.KindHeading:
		// An indented "---" under the item turns its text into a setext
		// heading; that must not make a phase vanish. ATX headings ("- # x")
		// never start with "[" so they are left out.
		if first.Lines().Len() == 0 || isATX(p.src, p.start(first.Lines(), 0)) {
			return
		}
	default:
		return
	}
	if first.Lines().Len() == 0 {
		return
	}
	start := skipBlank(p.src, p.start(first.Lines(), 0))
	line := p.src[start:lineEnd(p.src, start)]
	ph, errs, ok := parsePhaseLine(line, start)
	if !ok {
		return
	}
	for _, e := range errs {
		p.errorf(start, "%s", e)
	}
	if len(errs) > 0 {
		return
	}
	ph.Line = p.lineOf(start)
	if prev, dup := p.ids[ph.ID]; dup {
		p.errorf(start, "duplicate phase id %q (first at line %d)", ph.ID, prev)
		return
	}
	p.ids[ph.ID] = ph.Line
	p.m.Phases = append(p.m.Phases, ph)
}

// settings reads "**Key:** value" lines. A paragraph may hold several of
// them on consecutive lines, so every line is checked.
func (p *parser) settings(para *ast.Paragraph) {
	lines := para.Lines()
	for i := range lines.Len() {
		start := skipBlank(p.src, p.start(lines, i))
		line := p.src[start:lineEnd(p.src, start)]
		key, vs, ve, ok := matchSetting(line)
		if !ok {
			continue
		}
		set := Setting{
			Value: string(line[vs:ve]),
			Line:  p.lineOf(start),
			Span:  Span{Off: start + vs, Len: ve - vs},
		}
		var dst *Setting
		switch key {
		case "Status":
			dst = &p.m.Status
		case "Gate":
			dst = &p.m.Gate
		case "Prepare":
			dst = &p.m.Prepare
		}
		if dst.Line != 0 {
			p.errorf(start, "duplicate **%s:** line (first at line %d)", key, dst.Line)
			continue
		}
		// Keep an invalid Status too, so SetStatus repairs that line instead
		// of adding a second one.
		*dst = set
		if key == "Status" && set.Value != "in-progress" && set.Value != "complete" {
			p.errorf(start, "unknown **Status:** %q (want in-progress or complete)", set.Value)
		}
	}
}

// heading remembers where the first top-level ATX heading's line ends. A
// bare "#" has no text segment to locate it by and is passed over.
func (p *parser) heading(h *ast.Heading) {
	if p.m.statusAt != 0 || h.Parent() == nil || h.Parent().Kind() != ast.KindDocument || h.Lines().Len() == 0 {
		return
	}
	off := p.start(h.Lines(), 0)
	if !isATX(p.src, off) {
		return
	}
	if end := bytes.IndexByte(p.src[off:], '\n'); end >= 0 {
		p.m.statusAt = off + end + 1
	} else {
		p.m.statusAt = len(p.src)
	}
}

func (p *parser) htmlBlock(b *ast.HTMLBlock) {
	segs := p.segments(b.Lines())
	if b.HasClosure() {
		c := b.ClosureLine
		c.Start += p.base
		c.Stop += p.base
		segs = append(segs, c)
	}
	p.checkpoints(segs)
	// An unclosed comment swallows the rest of its container, phases
	// included; say so instead of silently running fewer phases.
	if b.HTMLBlockType != ast.HTMLBlockType2 || b.HasClosure() || len(segs) == 0 {
		return
	}
	if !bytes.Contains(segs[0].Value(p.src), []byte("-->")) {
		p.errorf(segs[0].Start, "unclosed HTML comment <!-- hides everything after it")
	}
}

// checkpoints finds LOOP-CHECKPOINT comments in HTML that may span several
// source segments (a multi-line HTML block, possibly inside a list or quote).
func (p *parser) checkpoints(segs []text.Segment) {
	var buf []byte
	offs := make([]int, 0, len(segs)) // offset in buf where each segment starts
	for _, s := range segs {
		offs = append(offs, len(buf))
		buf = append(buf, s.Value(p.src)...)
	}
	const open, marker, closer = "<!--", "LOOP-CHECKPOINT", "-->"
	for i := 0; ; {
		j := bytes.Index(buf[i:], []byte(open))
		if j < 0 {
			return
		}
		at := i + j
		k := at + len(open)
		k += len(buf[k:]) - len(bytes.TrimLeft(buf[k:], " \t\r\n"))
		end := bytes.Index(buf[k:], []byte(closer))
		if end < 0 {
			return
		}
		end += k
		body := buf[k:end]
		if rest, ok := bytes.CutPrefix(body, []byte(marker)); ok {
			rest = bytes.TrimLeft(rest, " \t")
			if rest, ok = bytes.CutPrefix(rest, []byte(":")); ok {
				seg := sort.Search(len(offs), func(x int) bool { return offs[x] > at }) - 1
				off := segs[seg].Start + at - offs[seg]
				p.m.Checkpoints = append(p.m.Checkpoints, Checkpoint{
					Line: p.lineOf(off),
					Text: string(bytes.TrimSpace(rest)),
				})
			}
		}
		i = end + len(closer)
	}
}

// matchSetting recognises "**Key:** value" and "**Key**: value" (key case
// ignored). vs and ve bound the value inside line, surrounding backticks
// excluded so a rewrite keeps the author's formatting.
func matchSetting(line []byte) (key string, vs, ve int, ok bool) {
	if !bytes.HasPrefix(line, []byte("**")) {
		return "", 0, 0, false
	}
	for _, k := range []string{"Status", "Gate", "Prepare"} {
		rest := line[2:]
		if len(rest) < len(k)+3 || !bytes.EqualFold(rest[:len(k)], []byte(k)) {
			continue
		}
		tail := string(rest[len(k) : len(k)+3])
		if tail != ":**" && tail != "**:" {
			continue
		}
		vs = 2 + len(k) + 3
		ve = len(line)
		vs, ve = trimRange(line, vs, ve)
		vs, ve = stripTicks(line, vs, ve)
		return k, vs, ve, true
	}
	return "", 0, 0, false
}

// trimRange narrows [s,e) of b past ASCII blanks on both sides.
func trimRange(b []byte, s, e int) (int, int) {
	for s < e && isBlank(b[s]) {
		s++
	}
	for e > s && isBlank(b[e-1]) {
		e--
	}
	return s, e
}

// stripTicks removes one pair of equal backtick runs around [s,e), the way
// a markdown code span is delimited, then trims the inside.
func stripTicks(b []byte, s, e int) (int, int) {
	n := 0
	for s+n < e && b[s+n] == '`' {
		n++
	}
	if n == 0 || e-s < 2*n+1 {
		return s, e
	}
	for i := 1; i <= n; i++ {
		if b[e-i] != '`' {
			return s, e
		}
	}
	if b[e-n-1] == '`' {
		return s, e
	}
	return trimRange(b, s+n, e-n)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlank(src []byte, i int) int {
	for i < len(src) && isBlank(src[i]) {
		i++
	}
	return i
}

// lineEnd returns the end of the line starting at or before i, excluding the
// line terminator (LF or CRLF) so spans and titles never hold a '\r'.
func lineEnd(src []byte, i int) int {
	j := bytes.IndexByte(src[i:], '\n')
	if j < 0 {
		j = len(src)
	} else {
		j += i
	}
	if j > i && src[j-1] == '\r' {
		j--
	}
	return j
}

// isATX reports whether the heading text at off follows a '#' marker on its
// line, as opposed to being a setext heading's text.
func isATX(src []byte, off int) bool {
	for off > 0 && isBlank(src[off-1]) {
		off--
	}
	return off > 0 && src[off-1] == '#'
}

func lineStarts(src []byte) []int {
	starts := make([]int, 1, bytes.Count(src, []byte{'\n'})+1)
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func (p *parser) lineOf(off int) int {
	return sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off })
}
