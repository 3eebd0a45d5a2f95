package secret

import (
	"bytes"
	"encoding/base64"
	"strings"
)

// minBase64 is the shortest run worth decoding: 24 characters decode to
// 18 bytes, and the shortest shape (an AWS key id, 20 bytes) takes 28.
const minBase64 = 24

// b64Char is a byte of base64's standard or URL alphabet.
func b64Char(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '/' || b == '-' || b == '_'
}

// base64Hits decodes each run of base64 in line and finds what it hides:
// a shape or a secret assignment in decoded text, or a private key's
// DER or OpenSSH bytes (a PEM block's body, header or not). The hit
// covers the run; its detail says base64.
func base64Hits(line string, out []hit) []hit {
	for i := 0; i < len(line); {
		if !b64Char(line[i]) {
			i++
			continue
		}
		j := i
		for j < len(line) && b64Char(line[j]) {
			j++
		}
		if j-i >= minBase64 {
			out = decodedHits(line[i:j], i, j, out)
		}
		i = j
	}
	return out
}

// decodedHits finds secrets in the base64 run line[start:end].
func decodedHits(run string, start, end int, out []hit) []hit {
	dec, ok := decode64(run)
	if !ok {
		return out
	}
	if privateKeyBytes(dec) {
		return append(out, hit{rule: rulePrivateKey, detail: "base64", start: start, end: end})
	}
	if !printable(dec) {
		return out
	}
	text := string(dec)
	mask := hintMask(text)
	seen := map[string]bool{}
	for _, h := range assignHits(text, mask, shapeHits(text, mask, nil)) {
		if !seen[h.rule] {
			seen[h.rule] = true
			out = append(out, hit{rule: h.rule, detail: "base64", start: start, end: end})
		}
	}
	return out
}

// decode64 decodes run in whichever alphabet it is written in, as much
// of it as makes whole groups of four.
func decode64(run string) ([]byte, bool) {
	std, url := strings.ContainsAny(run, "+/"), strings.ContainsAny(run, "-_")
	if std && url {
		return nil, false
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	run = run[:len(run)/4*4]
	dec, err := enc.DecodeString(run)
	return dec, err == nil
}

// printable: at least 95% of b is printable ASCII or whitespace.
func printable(b []byte) bool {
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c >= 0x7f {
			bad++
		}
	}
	return bad*20 <= len(b)
}

// privateKeyBytes: b starts like a private key: OpenSSH's format, or DER
// of a SEQUENCE whose first element is the version INTEGER 0 or 1
// (PKCS#1 RSA, PKCS#8, SEC 1 EC keys). A certificate or a public key
// starts with a SEQUENCE inside, not a version.
func privateKeyBytes(b []byte) bool {
	if bytes.HasPrefix(b, []byte("openssh-key-v1\x00")) {
		return true
	}
	if len(b) < 8 || b[0] != 0x30 {
		return false
	}
	i := 2 // past the tag and a short length
	switch b[1] {
	case 0x81:
		i = 3
	case 0x82:
		i = 4
	case 0x83:
		i = 5
	}
	if b[1] < 0x30 {
		return false // too short for a key
	}
	return i+3 <= len(b) && b[i] == 0x02 && b[i+1] == 0x01 && (b[i+2] == 0x00 || b[i+2] == 0x01)
}
