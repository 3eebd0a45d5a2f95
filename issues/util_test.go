package issues

import "github.com/claudopilot/claudopilot/issues/ghfake"

func ghfakeLabel(name, color, desc string) ghfake.Label {
	return ghfake.Label{Name: name, Color: color, Description: desc}
}
