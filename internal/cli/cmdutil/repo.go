package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// FindRoadmapDir resolves the roadmap folder: the argument as given, else
// the one ROADMAP_DIR or MANIFEST names (the environment, then the
// settings files; Claudopilot's settings), else roadmap/ or
// .claudopilot/roadmap/ here or at the repository's top level.
func FindRoadmapDir(ctx context.Context, a *App, arg string) (string, error) {
	if arg != "" {
		if !filepath.IsAbs(arg) {
			arg = filepath.Join(a.Cwd, arg)
		}
		// The manifest itself names its folder (tab completion ends there).
		if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() && filepath.Base(arg) == roadmap.ManifestName {
			arg = filepath.Dir(arg)
		}
		return arg, nil
	}
	bases := []string{a.Cwd}
	if top, err := GitTopLevel(ctx, a, a.Cwd); err == nil {
		dir, err := settings.RoadmapDir(a.Env, top)
		if err != nil || dir != "" {
			return dir, err
		}
		if top != a.Cwd {
			bases = append(bases, top)
		}
	}
	for _, b := range bases {
		for _, d := range []string{"roadmap", filepath.Join(".claudopilot", "roadmap")} {
			p := filepath.Join(b, d)
			if _, err := os.Stat(filepath.Join(p, roadmap.ManifestName)); err == nil {
				return p, nil
			}
		}
	}
	// Not found anywhere: report the conventional place.
	return filepath.Join(a.Cwd, "roadmap"), nil
}

// GitTopLevel is the top of the work tree holding dir (App.OpenRepo).
func GitTopLevel(ctx context.Context, a *App, dir string) (string, error) {
	c, err := a.OpenRepo(ctx, dir)
	if err != nil {
		return "", err
	}
	return c.Dir, nil
}

func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func CountsLine(c map[string]int) string {
	var parts []string
	for _, s := range manifest.States {
		if n := c[string(s)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return strings.Join(parts, ", ")
}

// relTo names path from dir when that is shorter to read, else absolutely.
func RelTo(dir, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil || strings.HasPrefix(rel, ".."+string(filepath.Separator)+"..") {
		return path
	}
	return rel
}

// pathWithin reports whether path (which need not exist yet) lies inside the
// folder top, symlinks resolved as far as path exists.
func PathWithin(top, path string) bool {
	top, err := filepath.EvalSymlinks(top)
	if err != nil {
		return false
	}
	rest := ""
	p := filepath.Clean(path)
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = filepath.Join(real, rest)
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
	rel, err := filepath.Rel(top, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openRepoFor opens the repository holding the roadmap folder, or the one
// around the current folder when the roadmap folder does not exist.
func OpenRepoFor(ctx context.Context, a *App, dir string) (*worktree.Client, error) {
	at := dir
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		at = a.Cwd
	}
	git, err := a.OpenRepo(ctx, at)
	if errors.Is(err, worktree.ErrNotRepo) {
		return nil, fmt.Errorf("%s is not inside a git repository", at)
	}
	return git, err
}

func CountNoun(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// confirmed reads one answer from stdin: y or yes, in any case.
func Confirmed(a *App) bool {
	if a.S.In == nil {
		return false
	}
	line, _ := bufio.NewReader(a.S.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// lockHolder describes the live driver holding the lock.
func LockHolder(info state.LockInfo) string {
	if info.PID <= 0 {
		return "a run is starting (its lock is being written)"
	}
	return fmt.Sprintf("a run is going on (pid %d on %s since %s)", info.PID, info.Host, info.Time.Local().Format(time.DateTime))
}

// stateDirOf finds the state folder of the repository holding dir.
func StateDirOf(ctx context.Context, a *App, dir string) (*worktree.Client, string, error) {
	git, err := a.OpenRepo(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	// The driver's state lives in the main checkout, also when the
	// command runs in a phase's worktree (an agent pausing the run).
	wts, err := git.Worktrees(ctx)
	if err != nil {
		return nil, "", err
	}
	if len(wts) == 0 {
		return nil, "", fmt.Errorf("%s: git lists no worktree", git.Dir)
	}
	return git, state.Layout{Top: wts[0].Path}.StateDir(), nil
}

// driverNote says whether a running driver will see a switch.
func DriverNote(ctx context.Context, git *worktree.Client) string {
	common, err := git.CommonDir(ctx)
	if err != nil {
		return ""
	}
	if info, ok := state.LockHeld(state.LockPath(common)); ok {
		return fmt.Sprintf(" (the running driver, pid %d, takes it within a second)", info.PID)
	}
	return " (no driver is running: the next run starts this way)"
}

func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// looseManifest reads the manifest of the roadmap folder dir for its
// **Gate:** and **Prepare:** lines, which take part in the settings; nil
// when there is none. An invalid manifest still has readable lines (its
// problems are the roadmap's to report).
func LooseManifest(dir string) *manifest.Manifest {
	b, err := os.ReadFile(filepath.Join(dir, roadmap.ManifestName))
	if err != nil {
		return nil
	}
	m, _ := manifest.Parse(b)
	return m
}
