package worktree

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// The pack object types a pack made here holds (git's object types).
const (
	packCommit = 1
	packTree   = 2
	packBlob   = 3
)

// packObject is one whole (undeltified) object of a pack.
type packObject struct {
	kind int
	data []byte
}

// writePack is a version 2 pack of objs, whole, for `git unpack-objects`:
// the header, each object's type and size then its zlib-deflated bytes,
// and the hash (SHA-1 or SHA-256, hashLen) of all that. git computes each
// object's id from its bytes as it writes it.
func writePack(objs []packObject, hashLen int) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("PACK")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(objs)))
	// One compressor for the pack, reset per object: a zlib.NewWriter
	// allocates ~800 KB of fresh pages, which cost 23% of the land test
	// binary's own CPU when it was one per object (land's profile).
	z := zlib.NewWriter(&b)
	for _, o := range objs {
		size := uint64(len(o.data))
		c := byte(o.kind<<4) | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			b.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(c)
		z.Reset(&b)
		if _, err := z.Write(o.data); err != nil {
			return nil, err
		}
		if err := z.Close(); err != nil {
			return nil, err
		}
	}
	var h hash.Hash = sha1.New()
	if hashLen == sha256.Size {
		h = sha256.New()
	}
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	return b.Bytes(), nil
}
