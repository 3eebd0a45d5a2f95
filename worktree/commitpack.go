package worktree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ReplaceFileCommit is ReplaceFile, then CommitTree of the new tree with
// parents and msg, with the commit written in the same pack as the new
// blob and trees: one git unpack-objects for the manifest flip and the
// merge commit, not also a commit-tree (issue 25 §1). The commit's bytes
// are those commit-tree writes: the author and committer git var names
// (read once per run, commitIdent), the time now. Where commit-tree might
// write something else it is commit-tree that writes the commit: with
// commit.gpgSign set (git 2.39's commit-tree does not sign, another git
// might), a commit encoding other than UTF-8, an identity git would have
// to guess, a message that is not UTF-8.
func (c *Client) ReplaceFileCommit(ctx context.Context, tree, p string, content []byte, parents []string, msg string) (newTree, commit string, err error) {
	newTree, commit, _, err = c.ReplaceFileCommitAlso(ctx, tree, p, content, parents, msg, nil)
	return newTree, commit, err
}

// Also is a second commit ReplaceFileCommitAlso writes: of the same new
// tree, its parents Base and the first commit, its message Msg (a merge
// train's first-parent commit over its last link's merge).
type Also struct{ Base, Msg string }

// ReplaceFileCommitAlso is ReplaceFileCommit, and with also set the second
// commit also describes, written in the same pack (a merge train's
// commit-tree, issue 25 §1), or by commit-tree where the first is.
func (c *Client) ReplaceFileCommitAlso(ctx context.Context, tree, p string, content []byte, parents []string, msg string, also *Also) (newTree, commit, second string, err error) {
	msg = endLine(msg)
	id := c.commitIdent(ctx)
	if !id.ok || !utf8.ValidString(msg) || strings.ContainsRune(msg, 0) || also != nil && (!utf8.ValidString(also.Msg) || strings.ContainsRune(also.Msg, 0)) {
		t, err := c.ReplaceFile(ctx, tree, p, content)
		if err != nil {
			return "", "", "", err
		}
		return c.commitsSlow(ctx, t, parents, msg, also)
	}
	oid, pack, hashLen, err := c.flipPack(ctx, tree, p, content)
	if err != nil {
		return "", "", "", err
	}
	if pack == nil { // written the slow way: no pack to add the commit to
		return c.commitsSlow(ctx, oid, parents, msg, also)
	}
	now := time.Now()
	body := id.commitBody(oid, parents, msg, now)
	commit = objectID("commit", body, hashLen)
	pack = append(pack, packObject{kind: packCommit, data: body})
	want := [][2]string{{oid, "tree"}, {commit, "commit"}}
	if also != nil {
		body := id.commitBody(oid, []string{also.Base, commit}, endLine(also.Msg), now)
		second = objectID("commit", body, hashLen)
		pack = append(pack, packObject{kind: packCommit, data: body})
		want = append(want, [2]string{second, "commit"})
	}
	if err := c.unpack(ctx, pack, hashLen, want...); err != nil {
		return "", "", "", fmt.Errorf("replace %s in %s and commit: %w", p, tree, err)
	}
	return oid, commit, second, nil
}

// commitsSlow writes ReplaceFileCommitAlso's commits of tree by
// commit-tree.
func (c *Client) commitsSlow(ctx context.Context, tree string, parents []string, msg string, also *Also) (newTree, commit, second string, err error) {
	if commit, err = c.CommitTree(ctx, tree, parents, msg); err != nil || also == nil {
		return tree, commit, "", err
	}
	second, err = c.CommitTree(ctx, tree, []string{also.Base, commit}, endLine(also.Msg))
	return tree, commit, second, err
}

// endLine is msg ending with a line break, as commit-tree writes it.
func endLine(msg string) string {
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg
}

// ident is who git commit-tree names as a commit's author and committer,
// as git var -l reads it for one environment.
type ident struct {
	ok bool // false: commit-tree writes the commits
	// named: a name and an email given for both, as git's
	// user.useConfigOnly asks (HasIdentity).
	named             bool
	author, committer string // "Name <email>"
	// authorDate, committerDate: "<seconds> <zone>" when GIT_AUTHOR_DATE
	// or GIT_COMMITTER_DATE fixes it; "" for the time of the commit.
	authorDate, committerDate string
}

// commitBody is the commit object commit-tree writes for tree, parents and
// msg at now.
func (id *ident) commitBody(tree string, parents []string, msg string, now time.Time) []byte {
	date := gitDate(now)
	ad, cd := id.authorDate, id.committerDate
	if ad == "" {
		ad = date
	}
	if cd == "" {
		cd = date
	}
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, p := range parents {
		b.WriteString("parent " + p + "\n")
	}
	b.WriteString("author " + id.author + " " + ad + "\n")
	b.WriteString("committer " + id.committer + " " + cd + "\n\n")
	b.WriteString(msg)
	return []byte(b.String())
}

// gitDate is t as git writes it in a commit: seconds since the epoch and
// the zone's offset, +hhmm.
func gitDate(t time.Time) string {
	_, off := t.Zone()
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%d %c%02d%02d", t.Unix(), sign, off/3600, off/60%60)
}

// idents caches the ident of each environment that decides it, for the
// run (issue 25 §1: the identity and commit.gpgSign read once per run,
// not by a commit-tree per merge).
type idents struct {
	mu sync.Mutex
	m  map[string]*ident
}

// identEnv is the environment a commit's identity and the config git
// reads depend on.
func identEnv(env []string) string {
	var keep []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "GIT_AUTHOR_"), strings.HasPrefix(name, "GIT_COMMITTER_"),
			strings.HasPrefix(name, "GIT_CONFIG"), name == "EMAIL", name == "TZ", name == "HOME",
			name == "XDG_CONFIG_HOME", name == "USER", name == "LOGNAME", name == "GIT_DIR":
			keep = append(keep, kv)
		}
	}
	slices.Sort(keep)
	return strings.Join(keep, "\x00")
}

// commitIdent is the client's ident, read once per environment with one
// git var -l. A failed read is not kept: the next commit asks again (and
// meanwhile commit-tree writes the commits).
func (c *Client) commitIdent(ctx context.Context) *ident {
	env := c.environ(nil)
	key := identEnv(env)
	l := &c.locks().idents
	l.mu.Lock()
	defer l.mu.Unlock()
	if id, ok := l.m[key]; ok {
		return id
	}
	out, err := c.run(ctx, "", nil, nil, "var", "-l")
	if err != nil {
		return &ident{}
	}
	id := parseIdent(string(out), env, time.Now())
	if l.m == nil {
		l.m = map[string]*ident{}
	}
	l.m[key] = id
	return id
}

// parseIdent reads git var -l's output (the config, then the logical
// variables) in environment env at now. The ident is ok only where
// commit-tree would write what is read here: no signing, UTF-8, a name and
// an email given (git var's own idents are guessed where none is, and
// commit-tree refuses a guess), a zone git and this process agree on.
func parseIdent(out string, env []string, now time.Time) *ident {
	given := map[string]bool{}
	for _, kv := range env {
		if name, v, _ := strings.Cut(kv, "="); v != "" {
			given[name] = true
		}
	}
	id := &ident{ok: true, named: true}
	var authorIdent, committerIdent string
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(l, "=")
		switch strings.ToLower(k) {
		case "commit.gpgsign":
			if b := strings.ToLower(v); b != "false" && b != "no" && b != "off" && b != "0" {
				id.ok = false
			}
		case "i18n.commitencoding":
			if b := strings.ToLower(v); b != "utf-8" && b != "utf8" {
				id.ok = false
			}
		case "user.name", "author.name", "committer.name", "user.email", "author.email", "committer.email":
			if v != "" {
				given[strings.ToLower(k)] = true
			}
		}
		// The logical variables come after the config: the last line of
		// each is git's (a config value's line breaks cannot forge it).
		if k == "GIT_AUTHOR_IDENT" {
			authorIdent = v
		} else if k == "GIT_COMMITTER_IDENT" {
			committerIdent = v
		}
	}
	named := func(who, what string) bool {
		// (EMAIL alone is left to git: user.useConfigOnly refuses it.)
		return given["GIT_"+strings.ToUpper(who)+"_"+strings.ToUpper(what)] || given[who+"."+what] || given["user."+what]
	}
	for _, who := range []string{"author", "committer"} {
		if !named(who, "name") || !named(who, "email") {
			id.named = false
		}
	}
	var ok1, ok2 bool
	id.author, id.authorDate, ok1 = splitIdent(authorIdent, given["GIT_AUTHOR_DATE"], now)
	id.committer, id.committerDate, ok2 = splitIdent(committerIdent, given["GIT_COMMITTER_DATE"], now)
	id.named = id.named && ok1 && ok2
	id.ok = id.ok && id.named
	return id
}

// splitIdent splits "Name <email> <seconds> <zone>" into the name and
// email, and the date when fixed says GIT_*_DATE fixed it ("" otherwise,
// and then git's zone must be this process's at now).
func splitIdent(s string, fixed bool, now time.Time) (who, date string, ok bool) {
	i := strings.LastIndexByte(s, '>')
	if i < 0 || !strings.Contains(s[:i], "<") || strings.ContainsAny(s, "\n\x00") {
		return "", "", false
	}
	who, date = s[:i+1], strings.TrimSpace(s[i+1:])
	if strings.TrimSpace(who[:strings.IndexByte(who, '<')]) == "" {
		return "", "", false // commit-tree refuses an empty name
	}
	f := strings.Fields(date)
	if len(f) != 2 {
		return "", "", false
	}
	if fixed {
		return who, date, true
	}
	_, zone, _ := strings.Cut(gitDate(now), " ")
	return who, "", f[1] == zone
}
