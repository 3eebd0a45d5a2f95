package progress

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

var escapes = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// ttyRun feeds events to the live table on a terminal of the given width
// (the Streams TTY override) and returns each frame: the lines drawn after
// each clear, escape codes removed.
func ttyRun(t *testing.T, width func() int, resize chan os.Signal, logOf func(string) string, evs ...scheduler.Event) [][]string {
	t.Helper()
	rm, err := roadmap.Parse("/r/roadmap", []byte(
		"1. [pending] **phase-01-contracts-and-shared-types** — x\n"+
			"2. [pending] **phase-02** — y (deps: phase-01-contracts-and-shared-types)\n"+
			"3. [pending] **phase-03** — z\n"), nil, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	s := &cmdutil.Streams{Out: &bytes.Buffer{}, Err: &errb, ErrIsTTY: true, Color: true, Width: width, Resize: resize}
	p := New(s, false, rm, state.Layout{Top: "/r", RoadmapRel: "roadmap"})
	if logOf != nil {
		p.logOf = func(id string, _ state.Role, _ int) string { return logOf(id) }
	}
	ch := make(chan scheduler.Event)
	done := make(chan struct{})
	go func() { p.Consume(ch); close(done) }()
	for _, e := range evs {
		ch <- e
	}
	close(ch)
	<-done
	var frames [][]string
	for _, f := range strings.Split(errb.String(), "\x1b[J")[1:] {
		f = strings.TrimSuffix(escapes.ReplaceAllString(f, ""), "\n")
		frames = append(frames, strings.Split(f, "\n"))
	}
	return frames
}

// The live table fits the terminal at 60 and 80 columns: no line reaches
// the last column, so none wraps; it shows the gate, merging and waiting
// states, Claude's stream-json as readable lines, and "stopped" after an
// interrupt.
func TestLiveTableFitsAndShowsStages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "worker-1.log")
	stream := `{"type":"system","subtype":"init","model":"claude-sonnet"}
{"type":"assistant","message":{"content":[{"type":"text","text":"I will add the contracts package now, with every shared type the later phases need, documented."}]}}
{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./contracts/... && go vet ./contracts/..."}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","content":"ok"}]}}
`
	if err := os.WriteFile(log, []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	long := "phase-01-contracts-and-shared-types"
	evs := []scheduler.Event{
		{Time: t0, Kind: scheduler.EvStart},
		{Time: t0, Kind: scheduler.EvLaunch, Phase: long, State: "running", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvLaunch, Phase: "phase-03", State: "running", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvGate, Phase: "phase-03", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvExit, Phase: "phase-03", Role: state.Worker, Attempt: 1},
		{Time: t0, Kind: scheduler.EvMerging, Phase: "phase-03"},
		{Time: t0, Kind: scheduler.EvGate, Phase: "phase-03", Detail: "merge"},
		{Time: t0, Kind: scheduler.EvWait, Phase: "phase-03", Files: []string{"cart/cart.go"}, Detail: scheduler.WaitDetail([]string{"cart/cart.go"}, "")},
		{Time: t0, Kind: scheduler.EvExit, Phase: long, Role: state.Worker, Attempt: 1, Detail: "interrupted"},
		{Time: t0, Kind: scheduler.EvEnd, Detail: "interrupted"},
	}
	for _, width := range []int{60, 80} {
		frames := ttyRun(t, func() int { return width }, nil, func(string) string { return log }, evs...)
		if len(frames) < len(evs) {
			t.Fatalf("%d columns: %d frames for %d events", width, len(frames), len(evs))
		}
		for i, f := range frames {
			for _, l := range f {
				if n := utf8.RuneCountInString(l); n >= width {
					t.Errorf("%d columns, frame %d: a line of %d runes would wrap:\n%s", width, i, n, l)
				}
			}
		}
		has := func(frame int, re string) {
			t.Helper()
			if !regexp.MustCompile(re).MatchString(strings.Join(frames[frame], "\n")) {
				t.Errorf("%d columns, frame %d lacks %s:\n%s", width, frame, re, strings.Join(frames[frame], "\n"))
			}
		}
		has(1, `(?m)^  phase-01-con\S*… +running .*Bash: go test \./contract`)
		has(2, `(?m)^  phase-03 +gate +`)
		has(4, `(?m)^  phase-03 +merging +`)
		has(5, `(?m)^  phase-03 +gate .*checking the merge commit`)
		has(6, `(?m)^  phase-03 +waiting .*cart/cart\.go`)
		has(7, `(?m)^  phase-01-con\S*… +stopped `)
		for _, l := range frames[len(frames)-1] {
			if strings.Contains(l, "failed") {
				t.Errorf("%d columns: after the interrupt a row says failed: %s", width, l)
			}
		}
	}
}

// The width is read at each redraw, and a resize redraws at once, clearing
// the old table by the rows it takes at the new width.
func TestLiveTableFollowsResize(t *testing.T) {
	t.Parallel()
	width := 100
	resize := make(chan os.Signal, 1)
	t0 := time.Now()
	var errb bytes.Buffer
	rm, _ := roadmap.Parse("/r/roadmap", []byte("1. [pending] **a** — x\n"), nil, roadmap.Options{})
	s := &cmdutil.Streams{Out: &bytes.Buffer{}, Err: &errb, ErrIsTTY: true, Width: func() int { return width }, Resize: resize}
	p := New(s, false, rm, state.Layout{Top: "/r", RoadmapRel: "roadmap"})
	p.drawn = []int{95, 95} // two lines drawn at 100 columns
	width = 40
	p.draw()
	if !strings.HasPrefix(errb.String(), "\x1b[6A\x1b[J") {
		t.Errorf("after narrowing to 40 columns, two 95-column lines take 6 rows: %q", errb.String()[:12])
	}
	for _, l := range strings.Split(strings.TrimSpace(escapes.ReplaceAllString(errb.String(), "")), "\n") {
		if utf8.RuneCountInString(l) >= 40 {
			t.Errorf("line wider than 39: %q", l)
		}
	}
	_ = t0

	// A terminal of 4 rows: the table keeps to 3 lines.
	errb.Reset()
	rm3, _ := roadmap.Parse("/r/roadmap", []byte("1. [pending] **a** — x\n2. [pending] **b** — x\n3. [pending] **c** — x\n4. [pending] **d** — x\n"), nil, roadmap.Options{})
	s.Height = func() int { return 4 }
	p = New(s, false, rm3, state.Layout{Top: "/r", RoadmapRel: "roadmap"})
	p.draw()
	if got := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n"); len(got) != 3 || !strings.Contains(got[2], "… 3 more") {
		t.Errorf("on 4 rows: %q", got)
	}
}

func TestStreamJSONLines(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"\n  Done: all tests pass.\nMore."}]}}`:         "Done: all tests pass.",
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"file_path":"a/b.go"}}]}}`:  "Edit: a/b.go",
		`{"type":"result","subtype":"success","result":"Renamed the doc to DONE_."}`:                                     "result: Renamed the doc to DONE_.",
		"plain output\r with a \x1b[31mcolour\x1b[0m":                                                                    "plain output with a colour",
		`{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Added the cart."}}`:               "Added the cart.",
		`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'go test ./...'"}}`: "shell: bash -lc 'go test ./...'",
		`{"type":"item.completed","item":{"id":"item_0","item_type":"reasoning","text":"**Planning the change**"}}`:      "Planning the change",
	} {
		if got := lastReadable([]string{in, `{"type":"user","message":{"content":[{"type":"tool_result"}]}}`}); got != want {
			t.Errorf("%s\n  = %q, want %q", in, got, want)
		}
	}
}
