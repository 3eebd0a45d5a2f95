package worktree

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"syscall"
)

// packTypes are the pack entry types of the four object kinds.
var packTypes = map[string]byte{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// sha1Store is true when every loose object is named by a SHA-1 (a
// SHA-256 repository's pack trailer is not SHA-1: it goes through git).
func sha1Store(loose []string) bool {
	for _, p := range loose {
		if len(filepath.Base(p)) != 38 {
			return false
		}
	}
	return true
}

// writeLoosePack writes the loose object files as one version 2 pack of
// undeltified entries: per file its type and size, then its content
// compressed again, then the SHA-1 of all of it. Nothing in a file is
// trusted: its name is ignored (git names each object by its content), a
// header git would not write is refused, and the content must be exactly
// the size the header says; git's --strict then checks each object as it
// checks a stranger's pack. A file is opened without following a link or
// blocking on a pipe.
func writeLoosePack(w io.Writer, loose []string) error {
	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 64<<10)
	hdr := []byte("PACK\x00\x00\x00\x02")
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(loose)))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	zw := zlib.NewWriter(bw) // one compressor, reset per entry (see writePack)
	for _, p := range loose {
		if err := writeEntry(bw, zw, p); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// writeEntry writes the loose object file p as one pack entry to w,
// compressed by zw (reset here to write to w).
func writeEntry(w io.Writer, zw *zlib.Writer, p string) error {
	f, err := openPlain(p)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	br := bufio.NewReader(zr)
	head, err := br.ReadSlice(0)
	if err != nil || len(head) > 32 {
		return fmt.Errorf("%s: no loose object header", p)
	}
	kind, size, ok := bytes.Cut(head[:len(head)-1], []byte(" "))
	t, known := packTypes[string(kind)]
	n, perr := strconv.ParseUint(string(size), 10, 63)
	if !ok || !known || perr != nil || strconv.FormatUint(n, 10) != string(size) {
		return fmt.Errorf("%s: a loose object header git would not write (%q)", p, head)
	}
	if _, err := w.Write(entryHeader(t, n)); err != nil {
		return err
	}
	zw.Reset(w)
	if c, err := io.CopyN(zw, br, int64(n)); err != nil {
		return fmt.Errorf("%s: %d of %d bytes: %w", p, c, n, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fmt.Errorf("%s: longer than its header says", p)
	}
	return zw.Close()
}

// entryHeader is a pack entry's type and size: 4 bits of size in the
// first byte beside the type, 7 in each next, the top bit saying more
// follow.
func entryHeader(t byte, n uint64) []byte {
	b := []byte{t<<4 | byte(n&0x0f)}
	for n >>= 4; n > 0; n >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(n&0x7f))
	}
	return b
}

// feed runs git args in c.Dir with its stdin written by fill, and fails
// if either does: fill's error when it is not the broken pipe of a git
// that stopped reading (a refused pack), else git's.
func (c *Client) feed(ctx context.Context, args []string, fill func(io.Writer) error) error {
	defer c.guardFor(args)()
	cmd := c.command(ctx, "", nil, args)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	werr := fill(in)
	if cerr := in.Close(); werr == nil {
		werr = cerr
	}
	err = cmd.Wait()
	if werr != nil && !errors.Is(werr, syscall.EPIPE) {
		return werr
	}
	if err != nil {
		return &GitError{Args: args, Dir: c.Dir, ExitCode: exitOf(err), Stderr: stderr.String(), Err: ctx.Err()}
	}
	return werr
}
