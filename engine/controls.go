package engine

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claudopilot/claudopilot/control"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/pacer"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// Lanes is the resolved lane configuration of a repository (docs/lanes.md).
type Lanes struct {
	Lanes    []pacer.LaneConfig // empty: no LANES
	Settings pacer.Settings
	Pace     time.Duration
}

// schedulerLanes are the lanes as the scheduler takes them, with the
// concurrency of the last pacer pass.
func (ls Lanes) schedulerLanes(plan pacer.Plan) []scheduler.Lane {
	var out []scheduler.Lane
	for _, l := range ls.Lanes {
		out = append(out, scheduler.Lane{ID: l.ID, Cmd: l.Cmd, SupervisorCmd: l.SupervisorCmd, ResumeCmd: l.ResumeCmd, Fallback: l.Fallback, Slots: plan.Concurrency(l.ID), Account: l.Credentials, Attach: l.Attach})
	}
	return out
}

// planBoard keeps the pacer's last plan for the web page, which shows each
// lane's want and concurrency between passes.
type planBoard struct {
	mu   sync.Mutex // guards plan
	plan pacer.Plan
}

func (b *planBoard) set(p pacer.Plan) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.plan = p
}

func (b *planBoard) get() pacer.Plan {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.plan
}

// Pass runs one pacer pass over the saved state and records its result
// as the previous value, as the driver's timer does.
func (ls Lanes) Pass(ctx context.Context, stateDir string, sw control.Switches, gateRed bool) (pacer.Plan, map[string]pacer.Usage, error) {
	prev, err := control.LoadLanes(stateDir)
	if err != nil {
		return pacer.Plan{}, nil, err
	}
	plan, usage := pacer.Pass(ctx, ls.Settings, prev, sw.LanesOff, sw.Paused, gateRed)
	if sw.Paused {
		return plan, usage, nil
	}
	m := map[string]int{}
	for _, r := range plan.Lanes {
		m[r.ID] = r.Concurrency
	}
	return plan, usage, control.SaveLanes(stateDir, m)
}

// SetPaused switches launches off (or on again) for the driver whose
// state folder is stateDir, running or not: the switch is a file the
// running driver watches, and it holds across restarts.
func SetPaused(stateDir string, paused bool) error {
	_, err := control.Update(stateDir, func(s *control.Switches) {
		s.Paused = paused
		s.PausedAt = time.Time{}
		if paused {
			s.PausedAt = time.Now().UTC()
		}
	})
	return err
}

// SetAnswer records the user's answer to the question node id's agent
// asked at asked, for the running driver (within a second) or the next.
func SetAnswer(stateDir, id string, asked time.Time, text string) error {
	_, err := control.Update(stateDir, func(s *control.Switches) {
		if s.Answers == nil {
			s.Answers = map[string]control.Answer{}
		}
		s.Answers[id] = control.Answer{Asked: asked, Text: text}
	})
	return err
}

// answers are the switches' answers as the loop takes them.
func answers(as map[string]control.Answer) map[string]scheduler.Answer {
	if len(as) == 0 {
		return nil
	}
	m := make(map[string]scheduler.Answer, len(as))
	for id, a := range as {
		m[id] = scheduler.Answer{Asked: a.Asked, Text: a.Text}
	}
	return m
}

// SetDrain asks the running driver to finish what runs and stop.
func SetDrain(stateDir string) error {
	_, err := control.Update(stateDir, func(s *control.Switches) { s.Drain = true })
	return err
}

// SetLane switches lane id on or off, as SetPaused does launches.
func SetLane(stateDir, id string, on bool) error {
	_, err := control.Update(stateDir, func(s *control.Switches) {
		if s.LanesOff == nil {
			s.LanesOff = map[string]bool{}
		}
		if on {
			delete(s.LanesOff, id)
		} else {
			s.LanesOff[id] = true
		}
	})
	return err
}

// startControls wires the switches and the pacer to a running loop: the
// switches' file is watched, and with LANES the pacer runs at start,
// every PACE_SECONDS and after every switch. Nothing here runs in the
// loop: it only receives Controls.
func startControls(ctx context.Context, log io.Writer, stateDir string, ls Lanes, sw control.Switches, board *planBoard, files controlFiles) (<-chan scheduler.Control, func(bool), error) {
	out := make(chan scheduler.Control)
	// The loop reports the base's gate here; a change is a reason to
	// pace again at once.
	var red atomic.Bool
	redChanged := make(chan struct{}, 1)
	report := func(r bool) {
		if red.Swap(r) != r {
			select {
			case redChanged <- struct{}{}:
			default:
			}
		}
	}
	changes := make(chan control.Switches)
	if err := control.Watch(ctx, stateDir, changes); err != nil {
		return nil, nil, err
	}
	go func() {
		tick := time.NewTicker(ls.Pace)
		defer tick.Stop()
		// Claudopilot's control files are read every second, as its
		// driver read them at every pass.
		fileTick := time.NewTicker(time.Second)
		defer fileTick.Stop()
		for {
			var c scheduler.Control
			select {
			case <-ctx.Done():
				return
			case <-fileTick.C:
				if c.Poke = files.read(ctx, log); len(c.Poke) == 0 {
					continue
				}
				select {
				case out <- c:
				case <-ctx.Done():
					return
				}
				continue
			case s := <-changes:
				paused := s.Paused
				c.Pause = &paused
				c.Drain = s.Drain
				c.Answers = answers(s.Answers)
				sw = s
			case <-tick.C:
			case <-redChanged:
			}
			if len(ls.Lanes) > 0 {
				plan, _, err := ls.Pass(ctx, stateDir, sw, red.Load())
				if err == nil {
					board.set(plan)
				}
				if err != nil {
					fmt.Fprintf(log, "claudopilot: warning: pacer: %v\n", err)
				} else if !sw.Paused {
					c.Slots = map[string]int{}
					for _, r := range plan.Lanes {
						c.Slots[r.ID] = r.Concurrency
					}
				}
			}
			if c.Pause == nil && c.Slots == nil {
				continue
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, report, nil
}

// wireControls gives the loop its lanes, the saved pause switch and the
// channel that brings later switches and pacer passes.
func wireControls(ctx context.Context, log io.Writer, l state.Layout, roadmapDir string, ls Lanes, cfg *scheduler.Config, board *planBoard) error {
	sw, err := control.Load(l.StateDir())
	if err != nil {
		return err
	}
	if sw.Drain {
		// A drain was for the driver that took it (or asked of none):
		// this run starts afresh.
		if sw, err = control.Update(l.StateDir(), func(s *control.Switches) { s.Drain = false }); err != nil {
			return err
		}
	}
	cfg.Paused = sw.Paused
	cfg.Answers = answers(sw.Answers)
	if len(ls.Lanes) > 0 {
		plan, _, err := ls.Pass(ctx, l.StateDir(), sw, false)
		if err != nil {
			return err
		}
		cfg.Lanes = ls.schedulerLanes(plan)
		board.set(plan)
	}
	files := controlFiles{dirs: []string{filepath.Join(l.Dir(), ControlDir), filepath.Join(l.Dir(), filepath.FromSlash(ControlDirV1))}, roadmapDir: roadmapDir}
	cfg.Controls, cfg.GateState, err = startControls(ctx, log, l.StateDir(), ls, sw, board, files)
	return err
}

// IssueCmds are the lanes' commands for the issue queue, whose issues pick
// a lane with a "lane:<id>" label.
func (ls Lanes) IssueCmds() map[string]issues.LaneCmds {
	if len(ls.Lanes) == 0 {
		return nil
	}
	m := make(map[string]issues.LaneCmds, len(ls.Lanes))
	for _, l := range ls.Lanes {
		m[l.ID] = issues.LaneCmds{Agent: l.Cmd, Supervisor: l.SupervisorCmd}
	}
	return m
}
