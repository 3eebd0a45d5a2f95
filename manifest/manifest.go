package manifest

import "time"

// State is a phase's lifecycle state as written in the manifest's brackets.
type State string

// The five states Claudopilot roadmaps use. Anything else in the brackets of a
// phase-shaped list item is a parse error, never a silently skipped line.
const (
	Pending State = "pending"
	Running State = "running"
	Merged  State = "merged"
	Failed  State = "failed"
	Blocked State = "blocked"
)

// States lists every valid state in lifecycle order.
var States = []State{Pending, Running, Merged, Failed, Blocked}

// Valid reports whether s is one of the five states.
func (s State) Valid() bool {
	switch s {
	case Pending, Running, Merged, Failed, Blocked:
		return true
	}
	return false
}

// Span is a byte range [Off, Off+Len) in the manifest source.
type Span struct {
	Off int
	Len int
}

// Phase is one phase list item.
type Phase struct {
	ID    string
	Title string // text after the dash, annotations included, trimmed
	State State
	Deps  []string      // from (deps: a, b); nil for none or no annotation
	Owns  []string      // from (owns: a/, b.go); nil when absent
	Gate  string        // from (gate: cmd); empty when absent
	Est   time.Duration // from (est: 90m); 0 when absent
	Lane  string        // from (lane: codex); empty when absent
	Line  int           // 1-based line of the "[state] **id**" text
	// StateSpan covers the state word inside the brackets (not the brackets),
	// so a writer can replace exactly those bytes.
	StateSpan Span
}

// Checkpoint is a <!-- LOOP-CHECKPOINT: … --> marker.
type Checkpoint struct {
	Line int
	Text string // what follows "LOOP-CHECKPOINT:", trimmed
}

// Setting is a file-level `**Key:** value` line.
type Setting struct {
	Value string
	Line  int  // 0 when absent
	Span  Span // the value's bytes, inside any backticks, so a rewrite keeps them
}

// Manifest is a parsed EXECUTION-MANIFEST.md. It keeps the source so edits can
// rewrite single tokens and leave every other byte alone.
type Manifest struct {
	Src         []byte
	Phases      []Phase // in file order
	Status      Setting // **Status:** in-progress|complete
	Gate        Setting // **Gate:** <cmd>
	Prepare     Setting // **Prepare:** <cmd>
	Checkpoints []Checkpoint

	// statusAt is where SetStatus inserts a missing Status line: just past
	// the first top-level ATX heading's line, or 0 for the top of the file.
	// Recording it while parsing saves SetStatus a second markdown parse.
	statusAt int
}

// Phase returns the phase with the given id, or nil.
func (m *Manifest) Phase(id string) *Phase {
	for i := range m.Phases {
		if m.Phases[i].ID == id {
			return &m.Phases[i]
		}
	}
	return nil
}
