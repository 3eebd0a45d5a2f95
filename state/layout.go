package state

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
)

// Layout says where a run keeps things. Everything of the driver's lives
// under <top>/.claudopilot, hidden through .git/info/exclude.
type Layout struct {
	Top        string // the main worktree's top level
	RoadmapRel string // the roadmap folder relative to Top, slash-separated
	Base       string // the base branch
	// Manifest is the manifest's path relative to Top when the roadmap's
	// EXECUTION-MANIFEST.md is a symlink: the file it points to is the
	// one committed and flipped. "": the file in the roadmap folder.
	Manifest string
}

// MakeLayout places the run of the roadmap in dir, in the repository
// whose top level is top: the roadmap must be inside the repository. Here,
// not in the engine, so that status, explain and logs place a run without
// linking the engine (#23: the suite's link cost).
func MakeLayout(top, dir, base string) (Layout, error) {
	etop, _ := filepath.EvalSymlinks(top)
	abs, _ := filepath.EvalSymlinks(dir)
	rel, err := filepath.Rel(etop, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Layout{}, fmt.Errorf("the roadmap %s is outside the repository %s", dir, top)
	}
	l := Layout{Top: top, RoadmapRel: filepath.ToSlash(rel), Base: base}
	// A symlinked manifest: the driver commits its states into the file
	// the link names, never into the link (a merge wrote the manifest's
	// text as the link's target).
	link := filepath.Join(abs, roadmap.ManifestName)
	if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(link)
		if err != nil {
			return Layout{}, &roadmap.InvalidError{Path: link, Problems: []roadmap.Problem{{Msg: fmt.Sprintf("the manifest is a symlink that leads nowhere: %v", err)}}}
		}
		trel, err := filepath.Rel(etop, target)
		if err != nil || trel == ".." || strings.HasPrefix(trel, ".."+string(filepath.Separator)) {
			return Layout{}, &roadmap.InvalidError{Path: link, Problems: []roadmap.Problem{{Msg: fmt.Sprintf("the manifest is a symlink to %s, outside the repository %s: the driver commits the phases' states with each merge, so the file must be in the repository", target, etop)}}}
		}
		l.Manifest = filepath.ToSlash(trel)
	}
	return l, nil
}

// Dir is the driver's folder.
func (l Layout) Dir() string { return filepath.Join(l.Top, ".claudopilot") }

// Worktree is where a phase's worktree lives.
func (l Layout) Worktree(id string) string {
	return filepath.Join(l.Dir(), "worktrees", SafeName(id))
}

// Branch is a phase's branch.
func (l Layout) Branch(id string) string { return manifest.BranchPrefix + id }

// LogDir holds one phase's logs.
func (l Layout) LogDir(id string) string { return filepath.Join(l.Dir(), "logs", SafeName(id)) }

// LogPath is the log of one attempt of one role ("worker", "supervisor",
// "gate", "prepare").
func (l Layout) LogPath(id, role string, attempt int) string {
	return filepath.Join(l.LogDir(id), fmt.Sprintf("%s-%d.log", role, attempt))
}

// SandboxDir is a phase's private branch-ref folder while its agent runs
// in the sandbox.
func (l Layout) SandboxDir(id string) string {
	return filepath.Join(l.Dir(), "sandbox", SafeName(id))
}

// ReviewCheckout is the read-only checkout of review n of phase (or
// issue) id.
func (l Layout) ReviewCheckout(id string, n int) string {
	return filepath.Join(l.Dir(), "review", fmt.Sprintf("%s-%d", SafeName(id), n))
}

// StateDir holds the journal.
func (l Layout) StateDir() string { return filepath.Join(l.Dir(), "state") }

// InstancePath holds the clone's instance name for the issue queue's
// claims: the same across runs, so a restarted driver knows its own.
func (l Layout) InstancePath() string { return filepath.Join(l.StateDir(), "instance") }

// ManifestBackup is where the driver's writes of the live manifest keep
// the person's last save they replaced (roadmap.File.Backup), for the
// rebuild of a file a power cut emptied (docs/landing.md, "A power cut").
func (l Layout) ManifestBackup() string { return filepath.Join(l.StateDir(), "manifest-last-save.md") }

// JournalPath is the run journal.
func (l Layout) JournalPath() string { return JournalIn(l.StateDir()) }

// AttachSocket is where the screen of node id's agent is served while it
// runs on a terminal (ATTACH=1): in the state folder's private attach/.
func (l Layout) AttachSocket(id string) string { return AttachSocketIn(l.StateDir(), id) }

// AttachSocketIn is AttachSocket in the state folder dir.
func AttachSocketIn(dir, id string) string {
	return filepath.Join(dir, "attach", strings.TrimPrefix(id, "#")+".sock")
}

// JournalIn is the journal in the state folder dir.
func JournalIn(dir string) string { return filepath.Join(dir, "journal.jsonl") }

// ManifestRel is the manifest's path in the repository.
func (l Layout) ManifestRel() string {
	if l.Manifest != "" {
		return l.Manifest
	}
	return path.Join(l.RoadmapRel, "EXECUTION-MANIFEST.md")
}

// DocRel is a phase doc's path in the repository.
func (l Layout) DocRel(name string) string { return path.Join(l.RoadmapRel, name) }

// SafeName makes an id usable as one path element; see manifest.SafeName,
// whose length the manifest's id check bounds.
func SafeName(id string) string { return manifest.SafeName(id) }
