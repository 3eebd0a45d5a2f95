package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// The agent CLIs' state (issue 21 §4). A worker that could write ~/.claude
// wrote a SessionStart hook into settings.json, which the user's next
// unsandboxed claude would run, and a PASS verdict into CLAUDE.md, which a
// reviewer that follows its memory file obeyed. So each sandboxed process
// gets a private copy of every state folder and file (StateDirs under
// HOME, and whatever a lane adds with WithState), made when it starts and
// dropped when it ends; inside the copy, the files that steer a CLI
// (Protected) are the user's own, read-only. What persists: a refreshed
// login (Credentials) goes back to the user's file, and the sessions of a
// phase's agents (Sessions) go to the phase's own folder, for the next
// attempt of that phase to resume. Nothing else.

// Protected are the names, in a CLI state folder, of the files and folders
// that steer the CLI: settings, memory files, hooks, commands, agents,
// skills, plugins, and the config files of Codex and opencode. In the
// copy they are the user's own, bound read-only.
var Protected = []string{
	"settings.json", "settings.local.json", "CLAUDE.md", "AGENTS.md", "hooks", "commands", "agents", "skills",
	"plugins", "output-styles", "config.toml", "instructions.md", "prompts",
	"opencode.json", "opencode.jsonc", "config.json", "agent", "command", "plugin", "mode",
}

// Credentials are the names, in a CLI state folder, of the login files
// (Claude Code, Codex, opencode): one the process rewrote (a refreshed
// token) goes back to the user's file, when the user has one.
var Credentials = []string{".credentials.json", "auth.json"}

// Sessions are the names, in a CLI state folder, of the session
// transcripts' folders. The user's are not copied in; a phase's agents
// find those of the phase's earlier attempts (AGENT_RESUME_CMD resumes
// one), and no other process does.
var Sessions = []string{"projects", "sessions", "storage"}

// bulky are the names of folders a CLI fills with history and logs,
// which the copy leaves out.
var bulky = []string{"todos", "shell-snapshots", "statsig", "debug", "file-history", "logs", "log", "snapshot"}

// maxCredential bounds a login file taken back.
const maxCredential = 1 << 20

// homeCopy is one state path and its private copy.
type homeCopy struct {
	orig, copy string
	dir        bool
}

// prepareState copies each existing path of state into scratch/home, and
// into each copied folder the sessions keep holds for it (keep "": none).
func prepareState(scratch, keep string, state []string) ([]homeCopy, error) {
	root := filepath.Join(scratch, "home")
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("sandbox: clear %s: %w", root, err)
	}
	var out []homeCopy
	for _, p := range state {
		fi, err := os.Stat(p)
		if err != nil {
			continue // a CLI that is not installed
		}
		h := homeCopy{orig: p, copy: filepath.Join(root, stateKey(p)), dir: fi.IsDir()}
		if err := copyTree(p, h.copy, h.dir); err != nil {
			return nil, fmt.Errorf("sandbox: copy %s: %w", p, err)
		}
		if h.dir && keep != "" {
			for _, s := range Sessions {
				from := filepath.Join(keep, stateKey(p), s)
				if _, err := os.Lstat(from); err == nil {
					if err := copyTree(from, filepath.Join(h.copy, s), true); err != nil {
						return nil, fmt.Errorf("sandbox: the sessions of %s: %w", p, err)
					}
				}
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// stateKey names a state path inside a folder of copies.
func stateKey(p string) string {
	return strings.ReplaceAll(strings.TrimPrefix(filepath.Clean(p), "/"), "/", "%")
}

// stateArgs binds each copy over its original, then the user's protected
// files read-only over the copy's.
func stateArgs(copies []homeCopy) []string {
	var args []string
	for _, h := range copies {
		args = append(args, "--bind", h.copy, h.orig)
	}
	for _, h := range copies {
		if !h.dir {
			continue
		}
		for _, name := range Protected {
			p := filepath.Join(h.orig, name)
			if _, err := os.Lstat(p); err == nil {
				args = append(args, "--ro-bind", p, p)
			}
		}
	}
	return args
}

// leaveState carries back what persists from the copies: refreshed logins
// to the user's files, and (keep != "") the sessions to keep. notes name
// each login written back.
func leaveState(copies []homeCopy, keep string) (notes []string, err error) {
	var errs []error
	for _, h := range copies {
		if !h.dir {
			continue
		}
		for _, name := range Credentials {
			wrote, err := takeLogin(filepath.Join(h.copy, name), filepath.Join(h.orig, name))
			if err != nil {
				errs = append(errs, err)
			} else if wrote {
				notes = append(notes, "wrote back a refreshed login: "+filepath.Join(h.orig, name))
			}
		}
		if keep == "" {
			continue
		}
		for _, s := range Sessions {
			from, to := filepath.Join(h.copy, s), filepath.Join(keep, stateKey(h.orig), s)
			if fi, err := os.Lstat(from); err != nil || !fi.IsDir() {
				continue
			}
			if err := os.RemoveAll(to); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := copyTree(from, to, true); err != nil {
				errs = append(errs, fmt.Errorf("sandbox: keep the sessions of %s: %w", h.orig, err))
			}
		}
	}
	return notes, errors.Join(errs...)
}

// takeLogin writes the copy's login file over the user's when the user has
// one and the copy's differs: a plain file, at most maxCredential bytes,
// valid JSON (the three CLIs' format). Anything else is left behind.
func takeLogin(copy, orig string) (bool, error) {
	fi, err := os.Lstat(copy)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCredential {
		return false, nil
	}
	target, err := filepath.EvalSymlinks(orig)
	if err != nil {
		return false, nil // a login the user does not have is not made
	}
	b, err := os.ReadFile(copy)
	if err != nil || !json.Valid(b) {
		return false, nil
	}
	if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	// Fsynced: a refreshed login may have spent the old refresh token, so
	// losing the new one to a crash logs the user out. 0600 whatever the
	// old file's mode: it is a secret.
	if err := atomicfile.Write(target, b, 0o600, atomicfile.Mode()); err != nil {
		return false, fmt.Errorf("sandbox: write back %s: %w", orig, err)
	}
	return true, nil
}

// copyTree copies src (a folder when dir, else a file) to dst: plain files
// with their mode, folders, and symbolic links as links (a link to the
// user's dotfiles stays one, read-only in the sandbox). Sockets, pipes
// and, at the top of a folder, the bulky and session folders are left out.
func copyTree(src, dst string, dir bool) error {
	if !dir {
		return copyFile(src, dst)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && filepath.Dir(rel) == "." && rel != "." && (slices.Contains(bulky, rel) || slices.Contains(Sessions, rel)) {
			return fs.SkipDir
		}
		to := filepath.Join(dst, rel)
		switch t := d.Type(); {
		case t.IsDir():
			return os.MkdirAll(to, 0o700)
		case t&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case t.IsRegular():
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil
		}
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// HomeState lists StateDirs under home, as absolute paths; nil without a
// home.
func HomeState(home string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for _, d := range StateDirs {
		out = append(out, Real(filepath.Join(home, d)))
	}
	return out
}
