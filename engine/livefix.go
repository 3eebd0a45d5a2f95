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
	"time"

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
	if err != nil {
		return false, nil
	}
	if !ok {
		committed = nil
	}
	recs, err := state.ReadJournal(state.Layout{Top: git.Dir}.JournalPath())
	if err != nil {
		return false, nil
	}
	pick := chooseSource(committed, state.Layout{Top: git.Dir}.ManifestBackup(), recs)
	if pick.rebuilt == nil || !(len(bytes.TrimSpace(cur)) == 0 || bytes.IndexByte(cur, 0) >= 0 ||
		bytes.HasPrefix(pick.rebuilt, cur) || bytes.HasPrefix(pick.fromHead, cur)) {
		return false, nil
	}
	rebuilt := pick.rebuilt
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
	fmt.Fprintf(log, "claudopilot: warning: %s was %s (a write lost to a power cut): rebuilt from %s and the journal's states (%s)%s\n",
		path, cutKind(cur), pick.from, strings.Join(pick.put, ", "), pick.note)
	if m, _ := manifest.Parse(rebuilt); m != nil && (m.Gate.Value != "" || m.Prepare.Value != "") {
		// The settings were read from the empty file: this start
		// would miss its gate. It stops; the next one reads them.
		return true, &roadmap.InvalidError{Path: path, Problems: []roadmap.Problem{{Line: max(m.Gate.Line, m.Prepare.Line),
			Msg: "rebuilt after a power cut emptied it, with **Gate:** or **Prepare:** lines this start did not read: nothing ran; start again"}}}
	}
	return true, nil
}

// source is what a live manifest a power cut emptied is rebuilt from.
type source struct {
	rebuilt  []byte   // the rebuild, nil: none
	fromHead []byte   // HEAD's rebuild, also when the backup is used
	put      []string // the journal's states put back
	from     string   // the source, for the warning line
	note     string   // what the person should know, for the warning line
}

// chooseSource picks the newer of HEAD's committed manifest and the
// backup of the person's last save (roadmap.File.Backup), by what can be
// proven: the backup is used when it parses and holds every line of
// HEAD's, state words and the Status line aside. Then using it loses
// nothing git has, and gives back the lines the person added and never
// committed. A backup that lacks one of HEAD's lines is older than a
// commit (a person committed since, or deleted the line in an
// uncommitted save): HEAD's is used, nothing of git's is dropped, and the
// line names the backup for the person to compare. The journal's state
// for a phase is put back over the backup only when the backup was saved
// before that record (its modification time, kept by the rename): a
// later save is the person's word, as for repairLive.
func chooseSource(committed []byte, backup string, recs []state.Record) source {
	states, seen := scheduler.JournaledStates(recs), journaled(recs)
	var s source
	s.fromHead, s.put = rebuildManifest(committed, states, seen, time.Time{})
	s.rebuilt, s.from, s.note = s.fromHead, "HEAD's committed manifest", "; lines never committed are not in it"
	// Only a regular file the driver renamed there: a link is not
	// followed (the folder is the driver's; fails closed).
	st, err := os.Lstat(backup)
	if err != nil || !st.Mode().IsRegular() {
		return s
	}
	saved, err := os.ReadFile(backup)
	if err != nil {
		return s
	}
	if !holdsAll(saved, committed) {
		s.note += fmt.Sprintf("; the backup of your last save, %s, lacks lines HEAD's has (a commit since?): not used, compare it", backup)
		return s
	}
	if out, put := rebuildManifest(saved, states, seen, st.ModTime()); out != nil {
		s.rebuilt, s.put, s.from, s.note = out, put, "the backup of your last save ("+backup+")", ""
	}
	return s
}

// holdsAll reports whether saved parses and holds every line of committed
// (nil: none), each with its phases' state words and its Status value
// left out.
func holdsAll(saved, committed []byte) bool {
	have, ok := statelessLines(saved)
	if !ok {
		return false
	}
	if committed == nil {
		return true
	}
	want, ok := statelessLines(committed)
	if !ok {
		return true // HEAD's does not parse: nothing of it can be used
	}
	for l := range want {
		if !have[l] {
			return false
		}
	}
	return true
}

// statelessLines is the set of src's lines with each phase's state word
// and the Status value cut out, or false when src does not parse.
func statelessLines(src []byte) (map[string]bool, bool) {
	m, err := manifest.Parse(src)
	if err != nil {
		return nil, false
	}
	spans := []manifest.Span{}
	for _, p := range m.Phases {
		spans = append(spans, p.StateSpan)
	}
	if m.Status.Line != 0 {
		spans = append(spans, m.Status.Span)
	}
	slices.SortFunc(spans, func(a, b manifest.Span) int { return b.Off - a.Off })
	out := slices.Clone(src)
	for _, sp := range spans {
		if sp.Off >= 0 && sp.Off+sp.Len <= len(out) {
			out = append(out[:sp.Off], out[sp.Off+sp.Len:]...)
		}
	}
	lines := make(map[string]bool)
	for _, l := range strings.Split(string(out), "\n") {
		lines[strings.TrimRight(l, "\r")] = true
	}
	return lines, true
}

// rebuildManifest is committed with each journaled state applied (put
// names them), or nil when it does not parse or the journal names none of
// its phases (then the driver never wrote this file). A state recorded
// before savedAt (a backup's save) is not applied: the save is newer.
func rebuildManifest(committed []byte, states map[string]scheduler.Journaled, seen map[string]bool, savedAt time.Time) (rebuilt []byte, put []string) {
	m, err := manifest.Parse(committed)
	if err != nil {
		return nil, nil
	}
	ours := false
	out := committed
	for _, p := range m.Phases {
		ours = ours || seen[p.ID]
		j, ok := states[p.ID]
		if !ok || p.State == j.State || savedAt.After(j.At) {
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
