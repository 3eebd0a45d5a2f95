package worktree

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
)

// errIndexForm is an index file this reader does not read (a split or
// sparse index, index.skipHash's unchecked file, a version or layout it
// does not know, a checksum that does not match): the caller asks git.
var errIndexForm = errors.New("index file not in a form read here")

// gitlinksInIndex lists the paths of the gitlink entries (mode 160000) of
// the index file at path, read as git writes it (versions 2 to 4, SHA-1
// or SHA-256, told apart by the trailing checksum, which must match). It
// is the read `git ls-files --stage` would make, without its process
// (issue 25 §1: one git process per attempt). The index is the agent's
// to write, so anything this reader does not know for sure is
// errIndexForm, and the caller runs git instead: the check never falls
// open.
func gitlinksInIndex(path string) ([]string, error) {
	// A plain file only (openPlain): the agent may have put a link or a
	// named pipe there (git is then asked, and the admin check refuses
	// them anyway).
	f, err := openPlain(path)
	if errors.Is(err, errNotPlain) {
		return nil, errIndexForm
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	hashLen, err := indexHash(b)
	if err != nil {
		return nil, err
	}
	body := b[:len(b)-hashLen]
	if len(body) < 12 || string(body[:4]) != "DIRC" {
		return nil, errIndexForm
	}
	version := binary.BigEndian.Uint32(body[4:8])
	if version < 2 || version > 4 {
		return nil, errIndexForm
	}
	n := binary.BigEndian.Uint32(body[8:12])
	rest := body[12:]
	var links []string
	var prev []byte
	for i := uint32(0); i < n; i++ {
		mode, name, used, err := indexEntry(rest, version, hashLen, prev)
		if err != nil {
			return nil, err
		}
		if mode&0o170000 == 0o160000 {
			links = append(links, string(name))
		}
		prev, rest = name, rest[used:]
	}
	if err := indexExtensions(rest); err != nil {
		return nil, err
	}
	return links, nil
}

// indexHash is the length of the hash whose checksum ends b: SHA-1's or
// SHA-256's, whichever matches (neither: errIndexForm).
func indexHash(b []byte) (int, error) {
	if n := sha1.Size; len(b) > n {
		if s := sha1.Sum(b[:len(b)-n]); bytes.Equal(s[:], b[len(b)-n:]) {
			return n, nil
		}
	}
	if n := sha256.Size; len(b) > n {
		if s := sha256.Sum256(b[:len(b)-n]); bytes.Equal(s[:], b[len(b)-n:]) {
			return n, nil
		}
	}
	return 0, errIndexForm
}

// indexEntry reads one entry at the start of b: its mode, its path (prev
// is the entry before's, which version 4 compresses against) and the
// bytes it takes.
func indexEntry(b []byte, version uint32, hashLen int, prev []byte) (mode uint32, name []byte, used int, err error) {
	fixed := 40 + hashLen + 2 // stat fields, mode among them, the id, the flags
	if len(b) < fixed {
		return 0, nil, 0, errIndexForm
	}
	mode = binary.BigEndian.Uint32(b[24:28])
	flags := binary.BigEndian.Uint16(b[40+hashLen:])
	if flags&0x4000 != 0 { // extended flags follow
		if version < 3 {
			return 0, nil, 0, errIndexForm
		}
		fixed += 2
		if len(b) < fixed {
			return 0, nil, 0, errIndexForm
		}
	}
	p := b[fixed:]
	if version == 4 {
		strip, k := indexVarint(p)
		if k == 0 || strip > uint64(len(prev)) {
			return 0, nil, 0, errIndexForm
		}
		p = p[k:]
		nul := bytes.IndexByte(p, 0)
		if nul < 0 {
			return 0, nil, 0, errIndexForm
		}
		name = append(append([]byte{}, prev[:len(prev)-int(strip)]...), p[:nul]...)
		return mode, name, fixed + k + nul + 1, nil
	}
	nul := bytes.IndexByte(p, 0)
	if nul < 0 {
		return 0, nil, 0, errIndexForm
	}
	used = (fixed + nul + 8) &^ 7 // the path's NUL and padding to 8 bytes
	if used > len(b) {
		return 0, nil, 0, errIndexForm
	}
	return mode, p[:nul], used, nil
}

// indexVarint decodes git's offset varint (varint.c) at the start of b:
// its value and length, 0 when it does not end within b or overflows.
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	k := 1
	for c&128 != 0 {
		if k >= len(b) || val > 1<<50 {
			return 0, 0
		}
		val++
		c = b[k]
		val = val<<7 + uint64(c&127)
		k++
	}
	return val, k
}

// indexExtensions checks the extensions after the entries: a split index
// ("link", entries in another file) or a sparse one ("sdir", folders as
// entries) is not read here.
func indexExtensions(b []byte) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return errIndexForm
		}
		sig, size := string(b[:4]), binary.BigEndian.Uint32(b[4:8])
		if sig == "link" || sig == "sdir" || uint64(size) > uint64(len(b)-8) {
			return errIndexForm
		}
		b = b[8+int(size):]
	}
	return nil
}

// indexPath is the index file of the worktree whose admin folder is
// gitDir.
func indexPath(gitDir string) string { return filepath.Join(gitDir, "index") }
