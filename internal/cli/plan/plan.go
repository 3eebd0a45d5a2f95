// Package plan is `claudopilot plan`: validate a roadmap and its settings,
// print its waves, critical path and eligible phases.
package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
)

// Options are what plan's flags and arguments say.
type Options struct {
	App    *cmdutil.App
	Dir    string // the roadmap folder
	Format string // text, json, mermaid or dot
}

// NewCmd is `claudopilot plan`; runF runs the parsed options (Run when nil).
func NewCmd(runF func(context.Context, *Options) error) cmdutil.Command {
	return cmdutil.NewCommand("plan", "validate a roadmap and print its waves, critical path and what can start", parse, Run, runF)
}

func parse(ctx context.Context, a *cmdutil.App, args []string) (*Options, error) {
	fs := cmdutil.NewFlags(a, "plan", "plan [ROADMAP_DIR] [--format text|json|mermaid|dot]", `
Validate a roadmap and print its plan: the phases left to do in waves
(phases in one wave can run together), the critical path (by phase count, or
by (est: 90m) estimates when phases carry them), the phases eligible now
(pending, every dep merged), and counts per state.

Every problem in the manifest is reported at once as "path:line: message",
and the command exits 3. Nothing on disk or in git changes.

ROADMAP_DIR defaults to ./roadmap, else ./.claudopilot/roadmap, looked up in
the current folder and then at the repository's top level.`,
		"  claudopilot plan roadmap/\n  claudopilot plan --format dot | dot -Tsvg > plan.svg")
	format := fs.String("format", "text", "output `format`: text, json, mermaid or dot")
	if err := cmdutil.ParseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 1 {
		return nil, cmdutil.UsageErrorf("plan takes at most one ROADMAP_DIR, got %d", fs.NArg())
	}
	switch *format {
	case "text", "json", "mermaid", "dot":
	default:
		return nil, cmdutil.UsageErrorf("plan: unknown --format %q (want text, json, mermaid or dot)", *format)
	}
	dir, err := cmdutil.FindRoadmapDir(ctx, a, fs.Arg(0))
	if err != nil {
		return nil, err
	}
	return &Options{App: a, Dir: dir, Format: *format}, nil
}

// Run validates the roadmap and its settings, as run does, and prints the
// plan.
func Run(ctx context.Context, o *Options) error {
	a, dir := o.App, o.Dir
	// The same checks as run's, so a roadmap plan accepts does not fail
	// at run's start: every phase has its doc, every setting reads. Every
	// problem at once, the manifest's and the settings'.
	r, rerr := roadmap.Load(dir, roadmap.Options{RequireDocs: true})
	var serr error
	if top, err := cmdutil.GitTopLevel(ctx, a, dir); err == nil {
		_, serr = settings.Resolve(settings.Input{Scope: settings.Run, Env: a.Env, Top: top, Manifest: cmdutil.LooseManifest(dir)})
	}
	if err := errors.Join(rerr, serr); err != nil {
		return err
	}
	p := makePlan(r)
	for _, w := range p.Warnings {
		fmt.Fprintf(a.S.Err, "%s\n", w)
	}
	switch o.Format {
	case "json":
		enc := json.NewEncoder(a.S.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	case "mermaid":
		return writeMermaid(a.S.Out, r)
	case "dot":
		return writeDOT(a.S.Out, r)
	}
	writePlanText(a.S.Out, r.ManifestPath, p)
	return nil
}

type planJSON struct {
	Manifest     string         `json:"manifest"`
	Phases       []planPhase    `json:"phases"`
	Waves        [][]string     `json:"waves"`
	CriticalPath []string       `json:"critical_path"`
	CriticalLen  string         `json:"critical_length"` // "N phases" or a duration
	Eligible     []string       `json:"eligible"`
	Counts       map[string]int `json:"counts"`
	Warnings     []string       `json:"warnings,omitempty"`
}

type planPhase struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	State string   `json:"state"`
	Deps  []string `json:"deps"`
	Owns  []string `json:"owns,omitempty"`
	Est   string   `json:"est,omitempty"`
	Doc   string   `json:"doc,omitempty"`
	Line  int      `json:"line"`
}

func makePlan(r *roadmap.Roadmap) planJSON {
	p := planJSON{Manifest: r.ManifestPath, Counts: map[string]int{}, Waves: [][]string{}, Eligible: []string{}}
	for _, n := range r.Nodes {
		pp := planPhase{ID: n.ID, Title: roadmap.CleanTitle(n.Title), State: string(n.State), Deps: n.Deps, Owns: n.Owns, Doc: n.DocPath(), Line: n.Line}
		if pp.Deps == nil {
			pp.Deps = []string{}
		}
		if n.Est > 0 {
			pp.Est = n.Est.String()
		}
		p.Phases = append(p.Phases, pp)
	}
	// The scheduler's own rule over the manifest as written: deps merged,
	// no scope clash with a [running] phase, no LOOP-CHECKPOINT above
	// (plan reads no settings, so KEEP_GOING does not lift it here).
	for _, n := range scheduler.Eligible(scheduler.FileView(r, state.Rules{}, nil, nil, time.Time{})) {
		p.Eligible = append(p.Eligible, n.ID)
	}
	for _, s := range manifest.States {
		p.Counts[string(s)] = 0
	}
	for s, c := range r.Counts() {
		p.Counts[string(s)] = c
	}
	for _, w := range r.Levels(roadmap.FileState) {
		p.Waves = append(p.Waves, ids(w))
	}
	path, total, weighted := r.CriticalPath(roadmap.FileState)
	p.CriticalPath = ids(path)
	if weighted {
		p.CriticalLen = total.String()
	} else {
		p.CriticalLen = fmt.Sprintf("%d phases", len(path))
	}
	for _, w := range r.Warnings {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s:%d: warning: %s", r.ManifestPath, w.Line, w.Msg))
	}
	for _, c := range r.ScopeClashes() {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s:%d: warning: %s and %s (line %d) declare overlapping scopes (owns: %s) and (owns: %s) and could run together; they will run one after the other",
			r.ManifestPath, c[0].Line, c[0].ID, c[1].ID, c[1].Line, strings.Join(c[0].Owns, ", "), strings.Join(c[1].Owns, ", ")))
	}
	return p
}

func ids(ns []*roadmap.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

func writePlanText(w io.Writer, path string, p planJSON) {
	fmt.Fprintf(w, "%s: %s (%s)\n", path, cmdutil.Plural(len(p.Phases), "phase"), cmdutil.CountsLine(p.Counts))
	if len(p.Waves) == 0 {
		fmt.Fprintln(w, "\nNothing left to do: every phase is merged.")
	} else {
		fmt.Fprintf(w, "\nWaves (%d):\n", len(p.Waves))
		for i, wave := range p.Waves {
			fmt.Fprintf(w, "  %d. %s\n", i+1, strings.Join(wave, ", "))
		}
	}
	fmt.Fprintf(w, "\nCritical path (%s): %s\n", p.CriticalLen, strings.Join(p.CriticalPath, " -> "))
	if len(p.Eligible) == 0 {
		fmt.Fprintln(w, "Eligible now: none")
	} else {
		fmt.Fprintf(w, "Eligible now: %s\n", strings.Join(p.Eligible, ", "))
	}
}

// writeMermaid draws the graph as a mermaid flowchart, deps pointing at
// the phases that wait on them.
func writeMermaid(w io.Writer, r *roadmap.Roadmap) error {
	fmt.Fprintln(w, "flowchart LR")
	key := func(n *roadmap.Node) string { return fmt.Sprintf("p%d", n.Index) }
	for _, n := range r.Nodes {
		label := strings.NewReplacer(`"`, "#quot;").Replace(fmt.Sprintf("%s [%s]", n.ID, n.State))
		fmt.Fprintf(w, "  %s[\"%s\"]\n", key(n), label)
	}
	for _, n := range r.Nodes {
		for _, d := range r.Deps(n) {
			fmt.Fprintf(w, "  %s --> %s\n", key(d), key(n))
		}
	}
	return nil
}

// writeDOT draws the graph for Graphviz, in manifest order so the same
// manifest always gives the same bytes, each phase labelled and coloured
// by its state.
func writeDOT(w io.Writer, r *roadmap.Roadmap) error {
	fill := map[manifest.State]string{manifest.Merged: "palegreen", manifest.Running: "lightblue", manifest.Failed: "salmon", manifest.Blocked: "khaki", manifest.Pending: "white"}
	var b strings.Builder
	b.WriteString("digraph roadmap {\n  rankdir=LR;\n  node [shape=box, style=filled];\n")
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "  %s [label=%s, fillcolor=%s];\n", dotQuote(n.ID), dotQuote(fmt.Sprintf("%s\n[%s]", n.ID, n.State)), fill[n.State])
	}
	for _, n := range r.Nodes {
		for _, d := range r.Deps(n) {
			fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(d.ID), dotQuote(n.ID))
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
