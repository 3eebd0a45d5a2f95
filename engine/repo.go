package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/worktree"
)

// NotRepo is the error for a folder outside any git repository.
func NotRepo(dir string) error {
	return fmt.Errorf("%w: %s is not inside one; run claudopilot in your repository (git init makes one)", worktree.ErrNotRepo, dir)
}

// MakeLayout places the run: the roadmap must be inside the repository
// (state.MakeLayout, the rule's home, at the repository's top level).
func MakeLayout(git *worktree.Client, dir, base string) (state.Layout, error) {
	return state.MakeLayout(git.Dir, dir, base)
}

// CheckCommitted makes sure the base holds the manifest and the doc of every
// phase left to do: worktrees are cut from the base, so an agent could not
// see (or rename) a doc that exists only in this checkout.
func CheckCommitted(ctx context.Context, git *worktree.Client, rm *roadmap.Roadmap, l state.Layout) error {
	bad := &roadmap.InvalidError{Path: rm.ManifestPath}
	ref := "refs/heads/" + l.Base
	if _, has, err := git.ReadFile(ctx, ref, l.ManifestRel()); err != nil {
		return err
	} else if !has {
		bad.Problems = append(bad.Problems, roadmap.Problem{Msg: fmt.Sprintf("the manifest is not committed on %s: commit the roadmap first (git add %s && git commit)", l.Base, l.RoadmapRel)})
		return bad
	}
	// One listing of the roadmap folder, not one git call per phase:
	// thousands of phases took minutes to reach the first launch.
	committed, err := git.FilesIn(ctx, ref, l.RoadmapRel)
	if err != nil {
		return err
	}
	for _, n := range rm.Nodes {
		if n.State == manifest.Merged || n.Doc == "" {
			continue
		}
		if !committed[n.DocPath()] && !n.Done {
			bad.Problems = append(bad.Problems, roadmap.Problem{Line: n.Line, Msg: fmt.Sprintf("phase %s: its doc %s is not committed on %s; commit the roadmap first", n.ID, l.DocRel(n.Doc), l.Base)})
		}
	}
	if len(bad.Problems) > 0 {
		return bad
	}
	return nil
}

// Lock makes sure git can commit here and takes the repository's driver
// lock, before anything is changed.
func Lock(ctx context.Context, git *worktree.Client) (*state.Lock, error) {
	if ok, err := git.HasIdentity(ctx); err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New("git has no user identity in this repository, and the driver commits; run:\n" +
			"  git config user.name \"Your Name\"\n  git config user.email you@example.com")
	}
	common, err := git.CommonDir(ctx)
	if err != nil {
		return nil, err
	}
	return state.AcquireLock(state.LockPath(common))
}

// recoverCheckout finishes a base-checkout move a killed driver left half
// done, before the roadmap is read (a phase doc may be missing until then).
// It takes the driver lock for it, so a live run is never disturbed.
func recoverCheckout(ctx context.Context, git *worktree.Client) error {
	l := state.Layout{Top: git.Dir}
	if _, err := os.Stat(filepath.Join(l.StateDir(), "advance.json")); err != nil {
		return nil
	}
	lock, err := Lock(ctx, git)
	if err != nil {
		return err
	}
	defer lock.Release()
	return land.Recover(ctx, git, l, 30*time.Second)
}

// bootstrap runs BOOTSTRAP_CMD, then BUILD_CMD, once in the repository
// before any phase starts, as Claudopilot did. A failure is a warning, as
// it was there: the gate of each phase still decides what merges.
func bootstrap(ctx context.Context, log io.Writer, rel func(string) string, l state.Layout, cfg Settings, env []string, red *secret.Redactor) error {
	for _, step := range []struct{ name, cmd string }{{"bootstrap", cfg.Bootstrap}, {"build", cfg.Build}} {
		if step.cmd == "" {
			continue
		}
		dir := filepath.Join(l.Dir(), "logs")
		logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", step.name, proc.NextLog(dir, step.name)))
		fmt.Fprintf(log, "claudopilot: %s: %s\n", step.name, step.cmd)
		res := proc.Run(ctx, proc.Spec{Command: step.cmd, Dir: l.Top, Env: env, LogPath: logPath, LogCap: int64(cfg.LogCapMB) << 20, Redact: red})
		if ctx.Err() != nil {
			return scheduler.ErrInterrupted
		}
		if res.ExitCode != 0 {
			fmt.Fprintf(log, "claudopilot: warning: %s failed (exit %d, see %s); the phases' gates will tell\n", step.name, res.ExitCode, rel(logPath))
		}
	}
	return nil
}
