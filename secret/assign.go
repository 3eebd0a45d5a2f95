package secret

import "strings"

// An assignment is a name, then = := : or =>, then a value, quoted or
// not, anywhere in a line: .env, shell, YAML, TOML, JSON (one line too,
// and JSON inside a JSON string, its quotes escaped) and code. Every
// = and : of a line is looked at, so an assignment inside another's
// value is found too ("content": "API_KEY=…\nDB_PASS=…"). A hand-written
// reader, not a regular expression: it looks back from each operator for
// the name and reads a value only for a name that says secret, which a
// scan of every line of a landing needs to be cheap.

// assignHits finds secret values assigned to secret names in line.
// mask is line's hintMask.
func assignHits(line string, mask uint64, out []hit) []hit {
	if mask&nameBit == 0 || !strings.ContainsAny(line, ":=") {
		return out
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c != ':' && c != '=' {
			continue
		}
		opEnd := i + 1
		if opEnd < len(line) && (c == ':' && line[opEnd] == '=' || c == '=' && line[opEnd] == '>') {
			opEnd++
		}
		ns, ne := nameBefore(line, i)
		if ns == ne || hintMask(line[ns:ne])&nameBit == 0 || !secretName(line[ns:ne]) {
			i = opEnd - 1
			continue
		}
		vs, ve, quoted := valueAfter(line, opEnd)
		if vs < 0 {
			continue
		}
		name, value := line[ns:ne], line[vs:ve]
		if rule := valueRule(name, value, quoted || atLineStart(line[:ns])); rule != "" {
			out = append(out, hit{rule: rule, detail: name, start: vs, end: ve})
		}
		i = opEnd - 1
	}
	return out
}

// nameChar is a byte of a name.
func nameChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-'
}

// nameBefore finds the name before the operator at op: over blanks, a
// closing quote (escaped or not), then name bytes back to a byte that
// cannot be in a name. A name starts with a letter or _, and not with
// the letter of a JSON escape (\nAPI_KEY is API_KEY).
func nameBefore(line string, op int) (start, end int) {
	j := op
	for j > 0 && (line[j-1] == ' ' || line[j-1] == '\t') {
		j--
	}
	if j > 0 && (line[j-1] == '"' || line[j-1] == '\'') {
		j--
		if j > 0 && line[j-1] == '\\' {
			j--
		}
	}
	end = j
	for j > 0 && nameChar(line[j-1]) {
		j--
	}
	if j > 0 && line[j-1] == '\\' && j < end && strings.IndexByte("nrt", line[j]) >= 0 {
		j++
	}
	for j < end && !(line[j] == '_' || line[j] >= 'a' && line[j] <= 'z' || line[j] >= 'A' && line[j] <= 'Z') {
		j++
	}
	return j, end
}

// valueAfter reads the value after an operator ending at from: \"…\"
// (JSON inside JSON), "…", '…', or a run of bytes up to a blank, a quote,
// # , ; & or a backslash. vs < 0: there is none.
func valueAfter(line string, from int) (vs, ve int, quoted bool) {
	k := from
	for k < len(line) && (line[k] == ' ' || line[k] == '\t') {
		k++
	}
	if k >= len(line) {
		return -1, -1, false
	}
	switch {
	case strings.HasPrefix(line[k:], `\"`):
		if e := strings.Index(line[k+2:], `\"`); e >= 0 {
			return k + 2, k + 2 + e, true
		}
		return -1, -1, false
	case line[k] == '"':
		for e := k + 1; e < len(line); e++ {
			switch line[e] {
			case '\\':
				e++
			case '"':
				return k + 1, e, true
			}
		}
		return -1, -1, false
	case line[k] == '\'':
		if e := strings.IndexByte(line[k+1:], '\''); e >= 0 {
			return k + 1, k + 1 + e, true
		}
		return -1, -1, false
	}
	e := k
	for e < len(line) && strings.IndexByte(" \t\r\n\"'#,;&\\", line[e]) < 0 {
		e++
	}
	if e == k {
		return -1, -1, false
	}
	return k, e, false
}

// atLineStart: before holds only what may start a YAML or .env line
// before its key (blanks, a list's dash, export, the key's quote).
func atLineStart(before string) bool {
	s := strings.TrimLeft(strings.TrimRight(before, `"'\`), " \t")
	if rest, ok := strings.CutPrefix(s, "-"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
		s = strings.TrimLeft(rest, " \t")
	}
	if rest, ok := strings.CutPrefix(s, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		s = strings.TrimLeft(rest, " \t")
	}
	return s == ""
}
