package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// recoverManifest rebuilds a live manifest that a power cut left empty or
// cut short (the driver writes it without an fsync, issue 25 §1) from what
// git and the journal keep: the checkout's committed manifest (HEAD's, the
// base's when the base is checked out there; a merge commits its
// [merged] flip), with the states the journal says the driver wrote last
// ([merged], [failed], [blocked]). Only when the file cannot be the
// person's: empty, holding a NUL byte, or a prefix of that rebuild, and
// only when the journal holds a record of one of its phases. Anything
// else that does not load (a save half-way, a typo) is left to the load,
// which refuses it with its file:line, as always. fixed: the file was
// rebuilt, and one line says so; a rebuild with a **Gate:** or
// **Prepare:** line stops the start (exit 3: the settings were resolved
// from the empty file, so this start would miss the gate). The driver lock
// is held for it, so a live run's file is never touched; never an agent's
// worktree is read.
func recoverManifest(ctx context.Context, git *worktree.Client, dir string, log io.Writer) (fixed bool, err error) {
	path, err := filepath.EvalSymlinks(filepath.Join(dir, roadmap.ManifestName))
	if err != nil {
		return false, nil
	}
	top, _ := filepath.EvalSymlinks(git.Dir)
	rel, err := filepath.Rel(top, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false, nil
	}
	cur, err := os.ReadFile(path)
	if err != nil {
		return false, nil
	}
	committed, ok, err := git.ReadFile(ctx, "HEAD", filepath.ToSlash(rel))
	if err != nil || !ok {
		return false, nil
	}
	recs, err := state.ReadJournal(state.Layout{Top: git.Dir}.JournalPath())
	if err != nil {
		return false, nil
	}
	rebuilt, put := rebuildManifest(committed, scheduler.JournaledStates(recs), journaled(recs))
	if rebuilt == nil || !(len(bytes.TrimSpace(cur)) == 0 || bytes.IndexByte(cur, 0) >= 0 || bytes.HasPrefix(rebuilt, cur)) {
		return false, nil
	}
	lock, err := Lock(ctx, git)
	if err != nil {
		return false, nil // a live run's file, or no driver here: the load says what is wrong
	}
	defer lock.Release()
	live := roadmap.NewFile(path)
	err = live.Update(func(src []byte) ([]byte, error) {
		if !bytes.Equal(src, cur) {
			return src, nil // saved meanwhile: the person's file is loaded as it is
		}
		fixed = true
		return rebuilt, nil
	})
	if err != nil || !fixed {
		return false, err
	}
	fmt.Fprintf(log, "claudopilot: warning: %s was %s (a write lost to a power cut): rebuilt from HEAD's committed manifest and the journal's states (%s); lines never committed are not in it\n",
		path, cutKind(cur), strings.Join(put, ", "))
	if m, _ := manifest.Parse(rebuilt); m != nil && (m.Gate.Value != "" || m.Prepare.Value != "") {
		// The settings were read from the empty file: this start
		// would miss its gate. It stops; the next one reads them.
		return true, &roadmap.InvalidError{Path: path, Problems: []roadmap.Problem{{Line: max(m.Gate.Line, m.Prepare.Line),
			Msg: "rebuilt after a power cut emptied it, with **Gate:** or **Prepare:** lines this start did not read: nothing ran; start again"}}}
	}
	return true, nil
}

// rebuildManifest is committed with each journaled state applied (put
// names them), or nil when it does not parse or the journal names none of
// its phases (then the driver never wrote this file).
func rebuildManifest(committed []byte, states map[string]scheduler.Journaled, seen map[string]bool) (rebuilt []byte, put []string) {
	m, err := manifest.Parse(committed)
	if err != nil {
		return nil, nil
	}
	ours := false
	out := committed
	for _, p := range m.Phases {
		ours = ours || seen[p.ID]
		j, ok := states[p.ID]
		if !ok || p.State == j.State {
			continue
		}
		if out, err = manifest.Apply(out, p.ID, j.State); err != nil {
			return nil, nil
		}
		put = append(put, fmt.Sprintf("%s [%s]", p.ID, j.State))
	}
	if !ours {
		return nil, nil
	}
	if len(put) == 0 {
		put = []string{"no state to put back"}
	}
	slices.Sort(put)
	return out, put
}

// journaled is the set of phases the journal has a record of.
func journaled(recs []state.Record) map[string]bool {
	seen := make(map[string]bool)
	for _, r := range recs {
		if r.Phase != "" {
			seen[r.Phase] = true
		}
	}
	return seen
}

// cutKind says how the file was found.
func cutKind(b []byte) string {
	switch {
	case len(bytes.TrimSpace(b)) == 0:
		return "empty"
	case bytes.IndexByte(b, 0) >= 0:
		return "cut short (NUL bytes)"
	}
	return "cut short"
}
