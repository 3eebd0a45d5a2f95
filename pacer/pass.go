package pacer

import (
	"context"
	"slices"
)

// Settings are the pacer's global knobs.
type Settings struct {
	Lanes     []LaneConfig
	ProbeCmd  string // RESOURCE_PROBE_CMD
	Resources Resources
	Env       []string // the environment usage commands run with
}

// Pass reads every lane's usage and the machine, then paces. It is what
// `claudopilot lanes` and a running driver's timer both call, so the two
// agree.
func Pass(ctx context.Context, s Settings, previous map[string]int, off map[string]bool, paused, gateRed bool) (Plan, map[string]Usage) {
	in := Input{
		Usage: map[string]Usage{}, Resources: s.Resources, Previous: previous,
		SwitchedOff: off, Paused: paused, GateRed: gateRed,
	}
	for _, l := range s.Lanes {
		in.Lanes = append(in.Lanes, l.Lane)
		if l.UsageCmd != "" {
			env := s.Env
			if l.Credentials != "" {
				// The lane's account, for a usage command that reads it.
				env = append(slices.Clip(env), "CLAUDE_CONFIG_DIR="+l.Credentials)
			}
			in.Usage[l.ID] = ReadUsage(ctx, l.UsageCmd, env)
		}
	}
	if c, l, m, ok := Probe(ctx, s.ProbeCmd, s.Env); ok {
		in.Resources.Cores, in.Resources.Load5, in.Resources.MemAvailableMB = c, l, m
	} else {
		in.Resources.Unknown = true
	}
	return Pace(in), in.Usage
}
