// Package gitobj reads and writes git's own files in Go: loose objects
// (zlib of "<kind> <size>\0<body>", named by their SHA-1), trees in git's
// entry order, commit bodies, and refs (a loose file, else packed-refs'
// line; a move under git's <ref>.lock with the old value checked, and
// optionally a reflog line). It is the one home of that format for the
// test infrastructure that writes commits without a git process
// (internal/gittest's Import, issues/ghfake's GitHub-side commits): a git
// process costs ~5-13 ms of CPU here (BENCHMARKS.md §5, session 13).
//
// Only a "plain" repository is handled: SHA-1 objects, refs in files, no
// extension in its config (Open says false otherwise), and objects read
// only from loose files (a packed one is ErrNotLoose): the caller runs git
// for anything else, as it did before. It must not import "testing":
// ghfake is a normal package.
package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// ErrNotLoose is an object with no loose file (packed, or missing): the
// caller asks git.
var ErrNotLoose = errors.New("not a loose object")

// Repo is a repository's git dir (HEAD, a worktree's own files) and its
// common dir (objects, refs, config), as Open found them.
type Repo struct {
	GitDir, Common string
	Bare           bool
	// Core is the config's [core] keys (lower case) and their last values.
	Core map[string]string
}

// Open finds dir's git dir: dir/.git (a folder, or a file naming a
// linked worktree's), or dir itself when bare (it has objects/). ok
// false: no repository there, or one that is not plain (an extension in
// its config: SHA-256, reftable, a worktree config).
func Open(dir string) (*Repo, bool) {
	r := &Repo{}
	dotGit := filepath.Join(dir, ".git")
	st, err := os.Stat(dotGit)
	switch {
	case err == nil && st.IsDir():
		r.GitDir = dotGit
	case err == nil:
		b, err := os.ReadFile(dotGit)
		gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if err != nil || !ok {
			return nil, false
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		r.GitDir = gd
	default:
		if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
			return nil, false
		}
		r.GitDir, r.Bare = dir, true
	}
	r.Common = r.GitDir
	if b, err := os.ReadFile(filepath.Join(r.GitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(r.GitDir, c)
		}
		r.Common = c
	}
	if !r.readConfig() {
		return nil, false
	}
	return r, true
}

// readConfig fills Core and Bare from the common config; false when it
// cannot be read or names an extension.
func (r *Repo) readConfig() bool {
	cfg, err := os.ReadFile(filepath.Join(r.Common, "config"))
	if err != nil {
		return false
	}
	r.Core = map[string]string{}
	section := ""
	for _, l := range strings.Split(string(cfg), "\n") {
		l = strings.ToLower(strings.TrimSpace(l))
		if strings.HasPrefix(l, "[") {
			if strings.HasPrefix(l, "[extensions") {
				return false
			}
			section = strings.Trim(l, "[] \t")
			continue
		}
		if section != "core" {
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		r.Core[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v, ok := r.Core["bare"]; ok {
		r.Bare = v == "true"
	}
	return true
}

// IsID reports whether s is a full SHA-1 in lower-case hex.
func IsID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (r *Repo) objectPath(id string) string {
	return filepath.Join(r.Common, "objects", id[:2], id[2:])
}

// Write writes the object (kind, body) as git does, unless it is there
// loose (a packed copy does not matter: git reads either alike), and
// returns its id. The file goes in whole (atomicfile; no fsync: a test's
// repository).
func (r *Repo) Write(kind string, body []byte) (string, error) {
	obj := append([]byte(kind+" "+strconv.Itoa(len(body))+"\x00"), body...)
	sum := sha1.Sum(obj)
	id := hex.EncodeToString(sum[:])
	p := r.objectPath(id)
	if _, err := os.Stat(p); err == nil {
		return id, nil
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, werr := w.Write(obj)
	if err := errors.Join(werr, w.Close()); err != nil {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	if err := writeFile(p, z.Bytes(), 0o444); err != nil {
		return "", fmt.Errorf("object %s: %w", id, err)
	}
	return id, nil
}

// Read reads object id from its loose file: its kind and body.
// ErrNotLoose when there is none (packed, missing, or id no full SHA-1).
func (r *Repo) Read(id string) (kind string, body []byte, err error) {
	if !IsID(id) {
		return "", nil, ErrNotLoose
	}
	f, err := os.Open(r.objectPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, ErrNotLoose
	}
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	z, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return "", nil, fmt.Errorf("object %s: %w", id, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return "", nil, fmt.Errorf("object %s: %w", id, err)
	}
	head, body, ok := bytes.Cut(b, []byte{0})
	kind, size, _ := strings.Cut(string(head), " ")
	if n, err := strconv.Atoi(size); !ok || err != nil || n != len(body) {
		return "", nil, fmt.Errorf("object %s: malformed header %q", id, head)
	}
	return kind, body, nil
}

// ReadKind is Read of an object that must be a kind.
func (r *Repo) ReadKind(kind, id string) ([]byte, error) {
	k, body, err := r.Read(id)
	if err != nil {
		return nil, err
	}
	if k != kind {
		return nil, fmt.Errorf("object %s: not a %s", id, kind)
	}
	return body, nil
}

// writeFile writes b to p whole (a temp file beside it renamed over it,
// mode exactly perm; no fsync: a test's repository).
func writeFile(p string, b []byte, perm os.FileMode) error {
	return atomicfile.Write(p, b, perm, atomicfile.NoSync(), atomicfile.Mode())
}
