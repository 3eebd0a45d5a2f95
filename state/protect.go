package state

import "github.com/claudopilot/claudopilot/protect"

// Protected declares the driver's folder for the landing's check
// (package protect): .claudopilot/ holds the driver's state, its prompt
// overrides and Claudopilot's settings files, and is never the work of a
// phase, even when an agent commits it with git add -f.
func (l Layout) Protected() []protect.Rule {
	return protect.Under(l.Top, l.Dir(), "the driver's folder: its state, prompt overrides and Claudopilot's settings")
}
