package secret

import "sync"

// Most lines hold no secret, and the regular expressions are what a scan
// spends its time on. One pass over a line's bytes says which rules may
// hit it (hintMask); only those run.

// A hint mask has a bit per shape (Shapes' index) and these.
const (
	nameBit = 1 << 62 // a word a secret's name holds (assignments)
	urlBit  = 1 << 61 // "://" (a password in a URL)
)

// nameHints are what a secret's name holds (secretName).
var nameHints = append(append([]string(nil), secretWords...), "pass", "pwd", "key", "auth")

// hintTable maps a pair of bytes, in lower case, to the rules one of
// whose hints starts with it.
var hintTable = sync.OnceValue(buildHints)

func buildHints() *[1 << 16]uint64 {
	if len(Shapes()) > 60 {
		panic("secret: more shapes than a hint mask has bits")
	}
	t := new([1 << 16]uint64)
	add := func(h string, bit uint64) {
		t[int(lower(h[0]))<<8|int(lower(h[1]))] |= bit
	}
	for i, s := range Shapes() {
		for _, h := range s.Hints {
			add(h, 1<<i)
		}
	}
	for _, h := range nameHints {
		add(h, nameBit)
	}
	add("://", urlBit)
	return t
}

// lower is b in lower case (ASCII).
func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// hintMask is the rules whose hints' first two bytes line holds: a
// superset of the rules that can hit it.
func hintMask(line string) uint64 {
	var m uint64
	if len(line) < 2 {
		return 0
	}
	t := hintTable()
	prev := lower(line[0])
	for i := 1; i < len(line); i++ {
		c := lower(line[i])
		m |= t[int(prev)<<8|int(c)]
		prev = c
	}
	return m
}
