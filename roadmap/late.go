package roadmap

import (
	"bytes"
	"errors"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

// lateWindow is how long the inode a swap replaced is watched for a late
// write. The writer it is for had resolved the manifest's path just before
// the swap and got the old inode a moment after: it writes at once.
const lateWindow = 20 * time.Second

// maxLate bounds the inodes watched at once per File: each watch is an
// inotify instance (128 per user by default), and a burst of writes only
// needs its newest few watched.
const maxLate = 4

// mergeLate merges a late save back: late is the human's file, made from
// base; cur is the live file, base plus the driver's changes since. The
// result is late with each of those changes (a phase's state, the Status
// value) applied to it; a phase the human removed stays removed.
//
// When the live file holds more than the driver's state changes since
// base (a human saved again, by rename, after the late write), the late
// bytes are the older edit: errNewerEdit, and the caller keeps them beside
// the manifest rather than write them over the newer one.
func mergeLate(base, late, cur []byte) ([]byte, error) {
	b, err := manifest.Parse(base)
	if err != nil {
		return nil, err
	}
	c, err := manifest.Parse(cur)
	if err != nil {
		return nil, err
	}
	was := make(map[string]manifest.State, len(b.Phases))
	for _, p := range b.Phases {
		was[p.ID] = p.State
	}
	if !onlyStatesChanged(base, cur, c, was, b.Status.Value) {
		return nil, errNewerEdit
	}
	out := late
	for _, p := range c.Phases {
		if s, ok := was[p.ID]; ok && s == p.State {
			continue
		}
		next, err := manifest.Apply(out, p.ID, p.State)
		if err != nil {
			continue // the human removed or broke that phase: theirs wins
		}
		out = next
	}
	if c.Status.Value != b.Status.Value && c.Status.Value != "" {
		m, err := manifest.Parse(out)
		if err != nil {
			return out, nil
		}
		if m.Status.Value != c.Status.Value {
			if next, err := m.SetStatus(c.Status.Value); err == nil {
				out = next
			}
		}
	}
	return out, nil
}

// errNewerEdit: the live file changed beyond the driver's state writes
// since the late write's base.
var errNewerEdit = errors.New("the manifest was edited again since")

// onlyStatesChanged is true when cur is base with some phases' states
// and the Status value changed, and nothing else: putting base's states
// back into cur gives base again.
func onlyStatesChanged(base, cur []byte, c *manifest.Manifest, was map[string]manifest.State, status string) bool {
	out := cur
	for _, p := range c.Phases {
		s, ok := was[p.ID]
		if !ok {
			return false // a phase base does not have: a human added it
		}
		if s == p.State {
			continue
		}
		next, err := manifest.Apply(out, p.ID, s)
		if err != nil {
			return false
		}
		out = next
	}
	if c.Status.Value != status && status != "" {
		m, err := manifest.Parse(out)
		if err != nil {
			return false
		}
		if out, err = m.SetStatus(status); err != nil {
			return false
		}
	}
	return bytes.Equal(out, base)
}
