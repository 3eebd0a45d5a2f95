package manifest

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BranchPrefix is the folder of the branches phases run on: phase <id>
// works on branch auto/<id>.
const BranchPrefix = "auto/"

// MaxNameBytes bounds SafeName(id), the name of a phase's worktree and log
// folders. File names stop at 255 bytes (NAME_MAX); the driver and git add
// to this one ("gating-<name>", "<name>.merge", "<ref>.lock", a number when
// git's worktree folder is taken), so 200 leaves room for all of them.
const MaxNameBytes = 200

// checkID returns why id cannot be a phase id, or "". This is the one home
// of the rule, so `plan` refuses what `run` could not use: every phase
// becomes branch auto/<id> (git's ref-name rules, as `git check-ref-format`
// applies them) and folders named SafeName(id) (at most MaxNameBytes).
// Commas and parentheses are refused because a (deps: …) list could never
// name such a phase.
func checkID(id string) string {
	if id == "" {
		return "is empty"
	}
	if !utf8.ValidString(id) {
		return "is not valid UTF-8"
	}
	for i := 0; i < len(id); {
		c := id[i]
		if c < utf8.RuneSelf {
			switch {
			case c <= ' ' || c == 0x7f:
				return "contains whitespace"
			case strings.IndexByte("*,()`", c) >= 0:
				return fmt.Sprintf("contains %q", c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(id[i:])
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return "contains whitespace"
		}
		i += n
	}
	if why := refProblem(id); why != "" {
		return fmt.Sprintf("cannot be a git branch name (%s%s): %s", BranchPrefix, id, why)
	}
	if n := len(SafeName(id)); n > MaxNameBytes {
		return fmt.Sprintf("is too long: it makes a %d-byte folder name, at most %d (a byte other than A-Z, a-z, 0-9, '-', '_' and '.' takes 3)", n, MaxNameBytes)
	}
	return ""
}

// refProblem applies git's ref-name rules (git-check-ref-format(1)) to the
// part of refs/heads/auto/<id> that comes from id; "" when it is valid.
func refProblem(id string) string {
	for _, c := range []byte(id) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Sprintf("it contains %q", c)
		}
	}
	switch {
	case strings.Contains(id, ".."):
		return `it contains ".."`
	case strings.Contains(id, "@{"):
		return `it contains "@{"`
	case strings.HasSuffix(id, "."):
		return `it ends with "."`
	}
	for _, part := range strings.Split(id, "/") {
		switch {
		case part == "":
			return `it has an empty part between "/"s (or starts or ends with "/")`
		case strings.HasPrefix(part, "."):
			return fmt.Sprintf("its part %q starts with \".\"", part)
		case strings.HasSuffix(part, ".lock"):
			return fmt.Sprintf("its part %q ends with \".lock\"", part)
		}
	}
	return ""
}

// SafeName makes an id usable as one path element, for the phase's
// worktree and log folders. Other bytes are %-escaped, so distinct ids stay
// distinct ("a/b" and "a_b"), and the names "." and ".." cannot come out.
func SafeName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
