package gitobj

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

var (
	// ErrRefMoved is a ref not at the value a move expected.
	ErrRefMoved = errors.New("the ref moved")
	// ErrNotPlain is a ref whose file is not a plain id (a symbolic
	// ref, or something else): the caller asks git.
	ErrNotPlain = errors.New("not a plain ref")
)

// Ref is ref's (refs/…) id: its loose file under the common dir, else its
// line in packed-refs, else "" (absent). ErrNotPlain (wrapped) for a
// loose file that holds no id.
func (r *Repo) Ref(ref string) (string, error) {
	b, err := os.ReadFile(filepath.Join(r.Common, filepath.FromSlash(ref)))
	if err == nil {
		v := strings.TrimSpace(string(b))
		if !IsID(v) {
			return "", fmt.Errorf("%s: %q: %w", ref, v, ErrNotPlain)
		}
		return v, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	packed, err := os.ReadFile(filepath.Join(r.Common, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(packed), "\n") {
		if id, name, ok := strings.Cut(l, " "); ok && name == ref && IsID(id) {
			return id, nil
		}
	}
	return "", nil
}

// Reflog is the line a ref move adds to the ref's log: by Who ("Name
// <email>") now, with Msg after the tab.
type Reflog struct {
	Who, Msg string
}

// MoveRef moves ref (refs/…) to id if it is at old now ("": absent), as
// update-ref <ref> <id> <old> does: under git's lock (<ref>.lock made
// exclusively, waited for up to 100 ms as core.filesRefLockTimeout), the
// old value checked under it (ErrRefMoved, wrapped, otherwise), the new
// one written whole, then the lock removed. With log, the reflog lines a
// repository with core.logAllRefUpdates' default adds: the ref's (a
// branch, remote or note; another ref's only where its log is) and
// HEAD's when HEAD names ref; a bare repository's only where a log is.
func (r *Repo) MoveRef(ref, id, old string, log *Reflog) error {
	p := filepath.Join(r.Common, filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	for end := time.Now().Add(100 * time.Millisecond); ; {
		f, err := os.OpenFile(p+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, os.ErrExist) || time.Now().After(end) {
			return fmt.Errorf("lock %s: %w", ref, err)
		}
		time.Sleep(time.Millisecond) // git's own lock retry; no event to wait on
	}
	// Under the lock no git moves the ref; the new value goes in whole,
	// and the lock goes after it.
	defer os.Remove(p + ".lock")
	cur, err := r.Ref(ref)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("move %s from %q: it is at %q: %w", ref, old, cur, ErrRefMoved)
	}
	if err := writeFile(p, []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("move %s: %w", ref, err)
	}
	if log == nil {
		return nil
	}
	return r.appendReflog(ref, old, id, log)
}

// appendReflog adds the reflog lines of ref's move from old to id.
func (r *Repo) appendReflog(ref, old, id string, log *Reflog) error {
	if old == "" {
		old = strings.Repeat("0", 40)
	}
	line := old + " " + id + " " + Ident(log.Who, time.Now()) + "\t" + log.Msg + "\n"
	logs := []string{filepath.Join(r.Common, "logs", filepath.FromSlash(ref))}
	if b, err := os.ReadFile(filepath.Join(r.GitDir, "HEAD")); err == nil && strings.TrimSpace(string(b)) == "ref: "+ref {
		logs = append(logs, filepath.Join(r.GitDir, "logs", "HEAD"))
	}
	for i, l := range logs {
		_, err := os.Stat(l)
		if r.Bare && err != nil {
			continue // a bare repository logs only where a log is
		}
		if i == 0 && err != nil && !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/remotes/") && !strings.HasPrefix(ref, "refs/notes/") {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(l, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line)
		if err := errors.Join(err, f.Close()); err != nil {
			return fmt.Errorf("reflog of %s: %w", ref, err)
		}
	}
	return nil
}
