package secret

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const testToken = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"

// Every form #22 §1 walked around the scan with is found, by file and
// line (or commit message) and rule, never with its value.
func TestLandingCatchesEveryForm(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	git := func(args ...string) string {
		t.Helper()
		out, err := g.Git(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	base := commit("base", map[string]string{"README.md": "hi\n"})
	git("checkout", "-q", "-b", "side")
	commit("side", map[string]string{"side.txt": "side\n"})
	git("checkout", "-q", "-b", "br", "main")
	commit("work", map[string]string{"work.txt": "work\n"})
	// A secret only a merge commit adds, taken out by the next commit.
	git("merge", "-q", "--no-commit", "side")
	commit("merge side", map[string]string{"evil.txt": "t " + testToken + "\n"})
	commit("rm", map[string]string{"evil.txt": ""})
	commit("notes\n\nthe token is "+testToken+"\n", map[string]string{"bin.dat": "\x00\x01\x02 key " + testToken + " \x00\n"})
	commit("more", map[string]string{
		"split.txt": "const t = \"ghp_abcdefgh\" +\n  \"ijklmnopqrstuvwxyz0123456789\"\n",
		"b64.txt":   "creds: " + base64.StdEncoding.EncodeToString([]byte(testToken)) + "\n",
		"cfg.json":  `{"db":{"password":"Hx7kq9Lm2p"}}` + "\n",
		".env":      "CACHE_KEY=users\nDB_PASS=s3cr3tP4ssw0rd\n",
		"key.txt":   "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Zh8Y0Rkz7yV7cX5i2Fz7Oeg1\n",
	})
	tip := git("rev-parse", "HEAD")
	found, err := Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.String())
	}
	s := strings.Join(got, "\n")
	for _, want := range []string{
		"evil.txt:1 (added by commit ",
		"bin.dat:1: github-token",
		"message of commit ",
		"split.txt:1: github-token (split over two lines)",
		"b64.txt:1: github-token (base64)",
		"cfg.json:1: secret-field (password)",
		".env:2: secret-assignment (DB_PASS)",
		"key.txt:1: private-key (base64)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("findings lack %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "abcdefgh") || strings.Contains(s, ".env:1") || strings.Contains(s, "side.txt") {
		t.Errorf("findings:\n%s", s)
	}
}

// A merge's lines that one parent already holds are that parent's: a
// branch that merges the base in is not blamed for the base's secrets.
func TestLandingMergeOfBaseAddsNothing(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	base := commit("base", map[string]string{"README.md": "hi\n"})
	if _, err := g.Git(ctx, "checkout", "-q", "-b", "br"); err != nil {
		t.Fatal(err)
	}
	commit("work", map[string]string{"work.txt": "work\n"})
	if _, err := g.Git(ctx, "checkout", "-q", "main"); err != nil {
		t.Fatal(err)
	}
	// A secret on the base (a user's), committed after the branch forked.
	mainTip := commit("user", map[string]string{"old.env": "API_TOKEN=a8f3k29dk3l0qpz7\n"})
	if _, err := g.Git(ctx, "checkout", "-q", "br"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Git(ctx, "merge", "-q", "--no-edit", "main"); err != nil {
		t.Fatal(err)
	}
	tip, _ := g.Git(ctx, "rev-parse", "HEAD")
	if found, err := Landing(ctx, g, mainTip, tip); err != nil || len(found) != 0 {
		t.Errorf("found %v, %v", found, err)
	}
	_ = base
}

// An allow comment naming the rule, or a SECRET_ALLOW glob, accepts a
// known false positive; the accepted hits are reported apart. A comment
// naming another rule accepts nothing. A comment is trusted only on a
// line the base holds already (the user wrote it): one the branch added
// is the agent's verdict on its own output and the hit stands, saying
// so; so does one in a commit's message.
func TestLandingAllow(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	userLine := "const fake = \"" + testToken + "\" // claudopilot:allow-secret github-token\n"
	base := commit("base", map[string]string{"README.md": "hi\n", "a.go": userLine})
	commit("add", map[string]string{
		"a.go":              userLine + "// a second case\n" + userLine,
		"b.go":              "const fake = \"" + testToken + "\" // claudopilot:allow-secret high-entropy\n",
		"d.go":              "const fake = \"" + testToken + "\" // claudopilot:allow-secret github-token\n",
		"testdata/x.golden": "DB_PASS=s3cr3tP4ssw0rd\n",
		"c.pem.fixture":     "-----BEGIN RSA PRIVATE KEY-----\n",
	})
	tip := commit(testToken+" claudopilot:allow-secret github-token", map[string]string{"e.txt": "e\n"})
	r, err := (&Scanner{Allow: []string{"testdata/**", "*.fixture"}}).Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range r.Found {
		found = append(found, f.Path+" "+f.Note)
	}
	want := "" +
		" an allow comment the branch added is not trusted: list the path in SECRET_ALLOW or commit the line on the base; " +
		"b.go ; " +
		"d.go an allow comment the branch added is not trusted: list the path in SECRET_ALLOW or commit the line on the base"
	if strings.Join(found, "; ") != want {
		t.Errorf("found %q\nwant %q", found, want)
	}
	var allowed []string
	for _, f := range r.Allowed {
		allowed = append(allowed, f.Path+" "+f.Allowed)
	}
	if strings.Join(allowed, "; ") != "a.go claudopilot:allow-secret; c.pem.fixture SECRET_ALLOW *.fixture; testdata/x.golden SECRET_ALLOW testdata/**" {
		t.Errorf("allowed %q", allowed)
	}
}

// No allow accepts the driver's own secrets: an agent that read the
// token and writes it under a SECRET_ALLOW path, with an allow comment,
// is stopped all the same.
func TestLandingKnownValueNeverAllowed(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	pw := "Zq8wXv93kLpT7mNb"
	base := commit("base", map[string]string{"README.md": "hi\n"})
	tip := commit("add", map[string]string{"testdata/leak.txt": pw + " # claudopilot:allow-secret known-secret\n"})
	r, err := (&Scanner{Allow: []string{"testdata/**"}, Known: NewRedactor([]string{"DEPLOY_PASSWORD=" + pw})}).Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Found) != 1 || r.Found[0].Rule != ruleKnown || r.Found[0].Note != noteKnownAllow || len(r.Allowed) != 0 {
		t.Errorf("found %v, allowed %v", r.Found, r.Allowed)
	}
}

// The driver's own secrets (the Redactor's values) do not land either, in
// any of their forms.
func TestLandingKnownValues(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	pw := "p@ss/w0rd+Zq8 long"
	base := commit("base", map[string]string{"README.md": "hi\n"})
	tip := commit("add", map[string]string{"notes.txt": "url https://x.example/?p=" + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(pw, "@", "%40"), "/", "%2F"), "+", "%2B"), " ", "+") + "\n"})
	r, err := (&Scanner{Known: NewRedactor([]string{"DEPLOY_PASSWORD=" + pw})}).Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Found) != 1 || r.Found[0].String() != "notes.txt:1: known-secret (the value of DEPLOY_PASSWORD)" {
		t.Errorf("found %v", r.Found)
	}
}

// A forged header in a commit message cannot end the message early: the
// lines after it are still read as the message.
func TestLandingMessageCannotForgeHeaders(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	base := commit("base", map[string]string{"README.md": "hi\n"})
	tip := commit("msg\n\x02\ndiff --git a/x b/x\n"+testToken+"\n", map[string]string{"a.txt": "a\n"})
	found, err := Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Path != "" || found[0].Line != 4 {
		t.Errorf("found %v", found)
	}
}

// A line longer than a piece (a binary file with no newline) is read in
// overlapping pieces: a token across a piece's end is still found, on
// its line, and the lines after it keep their numbers.
func TestLandingLongLine(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	base := commit("base", map[string]string{"README.md": "hi\n"})
	// The token starts 10 bytes before the first piece ends: the "+"
	// of the diff line, then the file's bytes.
	long := strings.Repeat("\x00x", (maxLine-11)/2) + " " + testToken + " " + strings.Repeat("\x01", 2*maxLine)
	tip := commit("add", map[string]string{"big.bin": long + "\nDB_PASS=s3cr3tP4ssw0rd\n"})
	found, err := Landing(ctx, g, base, tip)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.String())
	}
	if strings.Join(got, "; ") != "big.bin:1: github-token; big.bin:2: secret-assignment (DB_PASS)" {
		t.Errorf("found %q", got)
	}
}

// A landing's merge (the base its first parent) is scanned in one git
// process, the log, whose diff of the merge against the base is the
// tree's diff: the report is the one the tree's diff and the log read
// apart give (2 processes before, issue 25 §1). A scan from a commit
// that is not the first parent still reads the tree's diff.
func TestLandingOfAMergeReadsTheLogOnly(t *testing.T) {
	g, commit := newRepo(t)
	ctx := context.Background()
	git := func(args ...string) string {
		t.Helper()
		out, err := g.Git(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	base := commit("base", map[string]string{"README.md": "hi\n", "allowed.txt": "x " + testToken + " # claudopilot:allow-secret github-token\n"})
	git("checkout", "-q", "-b", "br")
	commit("work", map[string]string{"evil.txt": "t " + testToken + "\n"})
	commit("rm", map[string]string{"evil.txt": ""})
	commit("more\n\nthe token is "+testToken+"\n", map[string]string{
		"split.txt":   "const t = \"ghp_abcdefgh\" +\n  \"ijklmnopqrstuvwxyz0123456789\"\n",
		".env":        "DB_PASS=s3cr3tP4ssw0rd\n",
		"allowed.txt": "x " + testToken + " # claudopilot:allow-secret github-token\ny " + testToken + "\n",
	})
	tip := git("rev-parse", "HEAD")
	merge := git("commit-tree", "-p", base, "-p", tip, "-m", "Merge br", tip+"^{tree}")
	s := &Scanner{Allow: []string{".env"}}
	for _, c := range []struct {
		from, to string
		calls    int
	}{{base, merge, 1}, {base, tip, 2}} {
		trace := filepath.Join(t.TempDir(), "trace")
		traced := g.WithEnv(append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_TRACE="+trace))
		got, err := s.Landing(ctx, traced, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		p := &patchScan{s: s, ctx: ctx, git: g, from: c.from}
		if err := p.treeDiff(c.from, c.to); err != nil {
			t.Fatal(err)
		}
		want, err := p.history(c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || len(want.Found) < 4 || len(want.Allowed) != 1 {
			t.Errorf("%s..%s: report\n%#v\nwant (the tree's diff and the log apart)\n%#v", c.from[:7], c.to[:7], got, want)
		}
		b, _ := os.ReadFile(trace)
		// The client's resolver aside (long-lived: a landing's is running).
		n := strings.Count(string(b), "trace: built-in: git ") - strings.Count(string(b), "git cat-file --batch-command")
		if n != c.calls {
			t.Errorf("%s..%s: %d git processes, want %d:\n%s", c.from[:7], c.to[:7], n, c.calls, b)
		}
	}
}
