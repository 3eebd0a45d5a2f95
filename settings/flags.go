package settings

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/claudopilot/claudopilot/sandbox"
)

// AddFlags declares one flag per knob, its help naming its variable.
// Bool knobs are boolean flags.
func AddFlags(fs *pflag.FlagSet, ks []Knob) {
	for _, k := range ks {
		help := fmt.Sprintf("%s [%s]", k.Help, k.Env)
		switch k.Kind {
		case Bool:
			fs.Bool(k.Flag, k.Def == "1", help)
		case Sandbox:
			// --sandbox alone means bwrap; --sandbox=off turns it off.
			fs.String(k.Flag, k.Def, help)
			fs.Lookup(k.Flag).NoOptDefVal = sandbox.Bwrap
		default:
			fs.String(k.Flag, k.Def, help)
		}
	}
}

// Only picks the knobs named, in the table's order.
func Only(ks []Knob, envs ...string) []Knob {
	var out []Knob
	for _, k := range ks {
		for _, e := range envs {
			if k.Env == e {
				out = append(out, k)
			}
		}
	}
	return out
}
