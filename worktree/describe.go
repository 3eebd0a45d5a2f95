package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BranchDescription returns branch.<name>.description, the text `git
// branch --edit-description` keeps (and `git format-patch --cover-letter`
// shows); "" when the branch has none.
func (c *Client) BranchDescription(ctx context.Context, branch string) (string, error) {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if !c.mayDescribe(ctx) {
		return "", nil
	}
	if d, ok := c.describedInConfig(ctx, branch); ok {
		return d, nil
	}
	out, err := c.run(ctx, "", nil, nil, "config", "--get", "branch."+branch+".description")
	if exitCode(err) == 1 {
		return "", nil // unset
	}
	if err != nil {
		return "", fmt.Errorf("read the description of %s: %w", branch, err)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// AppendBranchDescription adds line to the description of branch, keeping
// what is there (a person's own words included). The repository's config
// file takes one writer at a time: the driver's writers are serialized
// here, and a writer outside it (an agent's `git config`) is waited out
// with a few short retries.
func (c *Client) AppendBranchDescription(ctx context.Context, branch, line string) error {
	branch = strings.TrimPrefix(branch, "refs/heads/")
	if branch == "" || strings.HasPrefix(branch, "-") || strings.ContainsAny(line, "\n\r") {
		return fmt.Errorf("describe branch %q: invalid branch or line", branch)
	}
	c.locks().cfg.Lock()
	defer c.locks().cfg.Unlock()
	var err error
	for try := range 5 {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(try*try) * 20 * time.Millisecond):
			}
		}
		var old string
		if old, err = c.BranchDescription(ctx, branch); err != nil {
			continue
		}
		desc := line
		if old != "" {
			desc = old + "\n" + line
		}
		if _, err = c.run(ctx, "", nil, nil, "config", "branch."+branch+".description", desc+"\n"); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("describe branch %s: %w", branch, err)
}

// mayDescribe is false when the repository's config files name no
// description and include no other file: no branch of it has a
// description there, and git need not be asked (one process per landing,
// issue 25 §1; with LANES every branch has one, and git is asked). A
// description in the user's own config is not looked for.
func (c *Client) mayDescribe(ctx context.Context) bool {
	common, err := c.CommonDir(ctx)
	if err != nil {
		return true
	}
	for _, name := range []string{"config", "config.worktree"} {
		b, err := readPlain(filepath.Join(common, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		low := bytes.ToLower(b)
		if err != nil || bytes.Contains(low, []byte("description")) || bytes.Contains(low, []byte("include")) {
			return true
		}
	}
	return false
}

// describedInConfig reads branch.<branch>.description from the
// repository's config file as git reads it (the last value; a value's
// quotes, escapes and comments), without a git process: a read per
// landing and one before each append with LANES (issue 23). ok is false
// where git must be asked: an include, a config.worktree, a description
// set through the environment, a line this reader does not know.
func (c *Client) describedInConfig(ctx context.Context, branch string) (string, bool) {
	for _, kv := range c.Env {
		if strings.HasPrefix(kv, "GIT_CONFIG") && strings.Contains(strings.ToLower(kv), "description") {
			return "", false
		}
	}
	common, err := c.CommonDir(ctx)
	if err != nil {
		return "", false
	}
	if _, err := os.Lstat(filepath.Join(common, "config.worktree")); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	b, err := readPlain(filepath.Join(common, "config"))
	if err != nil || bytes.Contains(bytes.ToLower(b), []byte("include")) || bytes.ContainsRune(b, '\r') {
		return "", false
	}
	desc, in := "", false
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimLeft(line, " \t")
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			sec, sub, ok := configSection(line)
			if !ok {
				return "", false
			}
			in = strings.EqualFold(sec, "branch") && sub == branch
		default:
			key, rest, _ := strings.Cut(line, "=")
			key = strings.TrimRight(key, " \t")
			if !validConfigKey(key) {
				return "", false
			}
			v, ok := configValue(rest)
			if !ok {
				return "", false // or a value continued on the next line
			}
			if in && strings.EqualFold(key, "description") {
				if !strings.Contains(line, "=") {
					return "", false // a bare key: git's "true"
				}
				desc = v
			}
		}
	}
	return strings.TrimRight(desc, "\n"), true
}

// configSection parses a section header line: [name] or [name "sub"]
// (a subsection's \x is x), with nothing but a comment after it.
func configSection(line string) (sec, sub string, ok bool) {
	end := strings.IndexAny(line, " \t]")
	if end < 0 {
		return "", "", false
	}
	sec, rest := line[1:end], line[end:]
	if sec == "" || strings.Trim(strings.ToLower(sec), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return "", "", false // an old-style [a.b] among others
	}
	if r, found := strings.CutPrefix(strings.TrimLeft(rest, " \t"), "\""); found {
		var b strings.Builder
		i := 0
		for ; i < len(r) && r[i] != '"'; i++ {
			if r[i] == '\\' && i+1 < len(r) {
				i++
			}
			b.WriteByte(r[i])
		}
		if i >= len(r) {
			return "", "", false
		}
		sub, rest = b.String(), r[i+1:]
	}
	rest, found := strings.CutPrefix(rest, "]")
	rest = strings.TrimLeft(rest, " \t")
	if !found || (rest != "" && rest[0] != '#' && rest[0] != ';') {
		return "", "", false
	}
	return sec, sub, true
}

// validConfigKey: a letter, then letters, digits and dashes.
func validConfigKey(k string) bool {
	if k == "" || !('a' <= k[0]|0x20 && k[0]|0x20 <= 'z') {
		return false
	}
	return strings.Trim(strings.ToLower(k), "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// configValue is git's parse_value (config.c) on the rest of a line
// after its "=": blanks outside quotes before the value dropped, those
// inside it kept as spaces, those after it dropped; quotes removed; \n
// \t \b \\ \" unescaped; a comment outside quotes ends it. ok is false
// for what git refuses or continues on the next line.
func configValue(s string) (string, bool) {
	var b strings.Builder
	quote, space := false, 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if (ch == ' ' || ch == '\t') && !quote {
			if b.Len() > 0 {
				space++
			}
			continue
		}
		if !quote && (ch == '#' || ch == ';') {
			break
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch ch {
		case '"':
			quote = !quote
			continue
		case '\\':
			i++
			if i >= len(s) {
				return "", false // a continued line
			}
			esc, known := map[byte]byte{'n': '\n', 't': '\t', 'b': '\b', '\\': '\\', '"': '"'}[s[i]]
			if !known {
				return "", false
			}
			ch = esc
		}
		b.WriteByte(ch)
	}
	if quote {
		return "", false
	}
	return b.String(), true
}
