package transcript

import (
	"html/template"
	"strings"
	"sync"
)

// The page's stylesheet styles these classes (web/page.html, and the
// report's): tx, tx-<kind>, tx-failed, tx-pending, tx-fig.
// It is parsed at its first use, not at every driver start (issue 23).
var entryHTML = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("entry").Parse(
		`{{define "tool"}}<b>{{.Tool}}</b>{{with .Input}} <code>{{.}}</code>{{end}}` +
			`{{if .Pending}} <span class="tx-state">running</span>{{else if .Failed}} <span class="tx-state">failed</span>{{end}}` +
			`{{with .Lines}} <span class="tx-state">{{.}}</span>{{end}}{{end}}` +
			`{{if eq .Kind "turn"}}<div class="tx tx-turn">turn {{.Number}}{{with .Figs}} <span class="tx-fig">· {{.}}</span>{{end}}</div>` +
			`{{else if eq .Kind "tool"}}{{if .Output}}<details class="tx tx-tool{{.Class}}"><summary>{{template "tool" .}}</summary><pre>{{.Output}}</pre></details>` +
			`{{else}}<div class="tx tx-tool{{.Class}}">{{template "tool" .}}</div>{{end}}` +
			`{{else if eq .Kind "thinking"}}<details class="tx tx-thinking"><summary>thinking: {{.First}}</summary><div>{{.Text}}</div></details>` +
			`{{else if eq .Kind "result"}}<div class="tx tx-result{{.Class}}"><b>{{.Input}}{{if .Failed}} (error){{end}}</b>{{with .Figs}} <span class="tx-fig">· {{.}}</span>{{end}}{{with .Text}}<div>{{.}}</div>{{end}}</div>` +
			`{{else if eq .Kind "error"}}<div class="tx tx-error">error: {{.Text}}</div>` +
			`{{else if eq .Kind "plain"}}<pre class="tx tx-plain">{{.Text}}</pre>` +
			`{{else}}<div class="tx tx-{{.Kind}}">{{.Text}}</div>{{end}}`))
})

// htmlEntry is an entry with its text cleaned for a page.
type htmlEntry struct {
	Entry
	Figs, First, Class, Lines string
}

// HTML renders one entry as an HTML fragment, everything the agent wrote
// escaped (and its control characters dropped). A tool's output is folded
// in a <details> element, closed.
func HTML(e Entry) template.HTML {
	h := htmlEntry{Entry: e, Figs: e.Figures.String()}
	h.Text, h.Output, h.Input, h.Tool = cleanLines(e.Text), cleanLines(e.Output), clean(e.Input), clean(e.Tool)
	h.First = oneLine(clean(firstLine(e.Text)))
	if e.Failed {
		h.Class += " tx-failed"
	}
	if e.Pending {
		h.Class += " tx-pending"
	}
	if n := strings.Count(strings.TrimRight(h.Output, "\n"), "\n") + 1; h.Output != "" {
		h.Lines = plural(n, "line")
	}
	var b strings.Builder
	if err := entryHTML().Execute(&b, h); err != nil {
		return template.HTML(template.HTMLEscapeString(err.Error()))
	}
	return template.HTML(b.String())
}

// cleanLines cleans every line of s (clean), keeping the line breaks.
func cleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
