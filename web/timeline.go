package web

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/status"
)

// The timeline's drawing: a label column, then the run's time scaled to
// chartW; the SVG scales to the width it gets (it never makes the page
// wider than the screen).
const (
	labelW = 190
	chartW = 1000
	rowH   = 24
	axisH  = 22
)

var (
	waitFill = map[string]string{
		status.WaitSlot: "#bcccdc", status.WaitLane: "#9fb3c8", status.WaitCooldown: "#f7c948",
		status.WaitDependency: "#e4e7eb", status.WaitNeedsInput: "#ff9b9b",
	}
	roleFill = map[string]string{"worker": "#2680c2", "supervisor": "#8719e0", "reviewer": "#0e7c86"}
)

// TimelineSVG writes tl as an SVG (with a legend before it): one row per
// node, attempts as bars by role (lane in the label), landings green,
// waits shaded by reason, gates (orange ticks), merges (green dots) and
// parkings (red crosses) marked. Every text from the journal is escaped.
func TimelineSVG(w io.Writer, tl status.Timeline) {
	var b strings.Builder
	// Styled inline: the page and the report draw it the same.
	b.WriteString(`<div class="tl-legend" style="display:flex;flex-wrap:wrap;gap:.3rem .9rem;font-size:.78rem;color:#52606d;margin:.2rem 0 .4rem">`)
	key := func(fill, width, text string) {
		fmt.Fprintf(&b, `<span><i style="display:inline-block;width:%s;height:.8rem;margin-right:.25rem;vertical-align:-1px;border-radius:2px;background:%s"></i>%s</span>`, width, fill, text)
	}
	for _, k := range []string{"worker", "supervisor", "reviewer"} {
		key(roleFill[k], ".8rem", k)
	}
	key("#3ebd93", ".8rem", "landing")
	for _, k := range []string{status.WaitSlot, status.WaitLane, status.WaitCooldown, status.WaitDependency, status.WaitNeedsInput} {
		key(waitFill[k], ".8rem", "waits: "+k)
	}
	key("#f0b429", "3px", "gate")
	b.WriteString(`<span style="color:#199473">● merged</span><span style="color:#cf1124">✕ parked</span></div>`)
	if len(tl.Rows) == 0 || !tl.End.After(tl.Start) {
		b.WriteString(`<p class="tl-empty">Nothing in the journal yet.</p>`)
		io.WriteString(w, b.String())
		return
	}
	height := axisH + len(tl.Rows)*rowH + 4
	fmt.Fprintf(&b, `<svg class="timeline" style="display:block;max-width:100%%;height:auto" viewBox="0 0 %d %d" width="100%%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg" font-family="system-ui,sans-serif" font-size="11">`, labelW+chartW+10, height)
	x := func(t time.Time) float64 {
		return labelW + float64(t.Sub(tl.Start))/float64(tl.End.Sub(tl.Start))*chartW
	}
	axis(&b, tl, x, height)
	for i, r := range tl.Rows {
		row(&b, r, axisH+i*rowH, x)
	}
	b.WriteString(`</svg>`)
	io.WriteString(w, b.String())
}

// axis draws the time ticks and a dashed line at each driver's start.
func axis(b *strings.Builder, tl status.Timeline, x func(time.Time) float64, height int) {
	span := tl.End.Sub(tl.Start)
	for i := 0; i <= 5; i++ {
		t := tl.Start.Add(span * time.Duration(i) / 5)
		anchor := "middle"
		if i == 5 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e7eb"/><text x="%.1f" y="14" text-anchor="%s" fill="#52606d">%s</text>`,
			x(t), axisH-4, x(t), height, x(t), anchor, t.Local().Format("15:04:05"))
	}
	for i, t := range tl.Runs {
		what := "start"
		if i > 0 {
			what = "restart"
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#52606d" stroke-dasharray="3 3"><title>driver %s %s</title></line>`,
			x(t), axisH-4, x(t), height, what, t.Local().Format(time.DateTime))
	}
}

// row draws one node's line at y.
func row(b *strings.Builder, r status.TimelineRow, y int, x func(time.Time) float64) {
	label := r.ID
	if r.Title != "" {
		label += " · " + r.Title
	}
	if len([]rune(label)) > 30 {
		label = string([]rune(label)[:29]) + "…"
	}
	fmt.Fprintf(b, `<g class="tl-row" data-id="%s"><text x="4" y="%d" fill="#1f2933"><title>%s</title>%s</text>`,
		esc(r.ID), y+15, esc(r.ID+": "+r.Title), esc(label))
	for _, s := range r.Spans {
		span(b, s, y, x)
	}
	for _, m := range r.Marks {
		mark(b, m, y, x)
	}
	b.WriteString(`</g>`)
}

func span(b *strings.Builder, s status.Span, y int, x func(time.Time) float64) {
	x0, x1 := x(s.From), x(s.To)
	w := max(x1-x0, 1.5)
	when := s.From.Local().Format("15:04:05") + "–" + s.To.Local().Format("15:04:05") + " (" + s.To.Sub(s.From).Round(time.Second).String() + ")"
	switch s.Kind {
	case status.SpanWait:
		fmt.Fprintf(b, `<rect class="tl-wait" data-reason="%s" x="%.1f" y="%d" width="%.1f" height="10" fill="%s"><title>waits: %s %s</title></rect>`,
			esc(s.Reason), x0, y+7, w, waitFill[s.Reason], esc(s.Reason), when)
	case status.SpanLanding:
		fmt.Fprintf(b, `<rect class="tl-landing" x="%.1f" y="%d" width="%.1f" height="16" fill="#3ebd93"%s><title>landing: %s %s</title></rect>`,
			x0, y+4, w, failStroke(s.End, "merged"), esc(orOpen(s.End)), when)
	default:
		name := fmt.Sprintf("%s %d", s.Role, s.Attempt)
		if s.Lane != "" {
			name += " on " + s.Lane
		}
		fill := roleFill[string(s.Role)]
		if fill == "" {
			fill = "#616e7c"
		}
		fmt.Fprintf(b, `<rect class="tl-attempt" data-role="%s" data-lane="%s" x="%.1f" y="%d" width="%.1f" height="16" fill="%s"%s><title>%s: %s %s</title></rect>`,
			esc(string(s.Role)), esc(s.Lane), x0, y+4, w, fill, failStroke(s.End, "done"), esc(name), esc(orOpen(s.End)), when)
		if w > 60 {
			fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#fff" font-size="10" pointer-events="none">%s</text>`, x0+3, y+15, esc(name))
		}
	}
}

// failStroke outlines a bar that did not end as ok.
func failStroke(end, ok string) string {
	if end == "" || end == ok {
		return ""
	}
	return ` stroke="#cf1124" stroke-width="2"`
}

func orOpen(end string) string {
	if end == "" {
		return "still going"
	}
	return end
}

func mark(b *strings.Builder, m status.Mark, y int, x func(time.Time) float64) {
	at := x(m.At)
	when := m.At.Local().Format("15:04:05")
	switch m.Kind {
	case "gate":
		fmt.Fprintf(b, `<rect class="tl-gate" data-role="%s" x="%.1f" y="%d" width="3" height="22" fill="#f0b429"><title>gate (%s) %s</title></rect>`,
			esc(string(m.Role)), at-1.5, y+1, esc(string(m.Role)), when)
	case "merged":
		fmt.Fprintf(b, `<circle class="tl-merged" cx="%.1f" cy="%d" r="5" fill="#199473" stroke="#fff"><title>merged %s</title></circle>`, at, y+12, when)
	default:
		fmt.Fprintf(b, `<text class="tl-parked" x="%.1f" y="%d" text-anchor="middle" fill="#cf1124" font-size="14">✕<title>%s: %s %s</title></text>`,
			at, y+17, esc(m.Kind), esc(m.Detail), when)
	}
}

func esc(s string) string { return html.EscapeString(s) }

// Report writes a self-contained HTML page of the timeline: `claudopilot
// report`'s file. It needs nothing beside it (no script, no link).
func Report(w io.Writer, title string, tl status.Timeline, made time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1rem; color: #1f2933; }
h1 { font-size: 1.2rem; margin: 0 0 .3rem; } p { margin: .2rem 0 .6rem; color: #52606d; font-size: .85rem; }
</style></head><body>
<h1>%s</h1>
<p>%s to %s · %d nodes · %d driver start(s) · made %s from the run journal</p>
`, esc(title), esc(title), tl.Start.Local().Format(time.DateTime), tl.End.Local().Format(time.DateTime),
		len(tl.Rows), len(tl.Runs), made.Local().Format(time.DateTime))
	TimelineSVG(&b, tl)
	b.WriteString("\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
