package land_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"

	"github.com/claudopilot/claudopilot/internal/gittest"
	"github.com/claudopilot/claudopilot/land"
	"github.com/claudopilot/claudopilot/scheduler"
)

// PUSH_BASE (docs/landing.md, "Pushing the base") against a real bare
// origin that refuses non-fast-forward pushes (receive.denyNonFastForwards),
// so a forced push would fail these tests, and "someone else" who pushes
// from a clone of their own.

// upstream is a fixture with an origin, where "someone else" pushes:
// their commits are imported into origin (gittest.Import), not made
// in a clone of their own and pushed (a pull, an add, a commit and a
// push: nine processes a commit with their children, and a clone).
type upstream struct {
	*fixture
	origin, dir string
}

// gateScript records each gated tree in gated.txt, fails on a tree that
// holds red.txt, and, once, runs push-once (someone else's push during the
// gate: after the landing fetched, before it pushes).
const gateScript = `#!/bin/sh
git rev-parse 'HEAD^{tree}' >> "$D/gated.txt"
if [ -e "$D/push-once" ]; then mv "$D/push-once" "$D/pushing" && sh "$D/pushing"; fi
test ! -e red.txt
`

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	f := newFixture(t, manifestSrc)
	u := &upstream{fixture: f, dir: t.TempDir()}
	u.origin = filepath.Join(u.dir, "origin.git")
	// origin is a bare clone of the repository (one process; an init and
	// a push were four with the push's children), with main and auto/p1
	// there and in the repository's remote-tracking refs as a push of
	// both leaves them, its remote added to the config file as git
	// remote add writes it, and receive's settings in origin's config
	// (autogc off: a local push drops the test's GIT_CONFIG_COUNT).
	f.gitIn(u.dir, "clone", "-q", "--bare", f.top, u.origin)
	main := f.rev("main")
	for _, p := range []string{filepath.Join(u.origin, "refs/heads/auto/p1"), filepath.Join(f.top, ".git/refs/remotes/origin/main"), filepath.Join(f.top, ".git/refs/remotes/origin/auto/p1")} {
		f.write(filepath.Dir(p), filepath.Base(p), main+"\n")
	}
	appendFile(t, filepath.Join(u.origin, "config"), "[receive]\n\tdenyNonFastForwards = true\n\tdenyDeletes = false\n\tautogc = false\n")
	appendFile(t, filepath.Join(f.top, ".git", "config"), "[remote \"origin\"]\n\turl = "+u.origin+"\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n")
	f.write(u.dir, "gate.sh", strings.ReplaceAll(gateScript, "$D", u.dir))
	gate := "sh " + filepath.Join(u.dir, "gate.sh")
	f.owner.Upstream = &land.Upstream{Remote: "origin", Gate: gate}
	return u
}

// appendFile appends text to the file at p.
func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(text)
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
}

func (u *upstream) job(id, title, tip string) scheduler.MergeJob {
	j := job(id, title, tip)
	j.Gate = u.owner.Upstream.Gate
	return j
}

// someone is someone else's commit of file on origin's main.
func someone(subject, file string) gittest.Commit {
	return gittest.Commit{Ref: "main", From: "main^0", Message: subject, Files: map[string]string{file: file + "\n"}}
}

// push commits file on origin's main as someone else and returns it.
func (u *upstream) push(file string) string {
	u.t.Helper()
	return gittest.Import(u.t, u.env, u.origin, someone("someone else's "+file, file))[0]
}

// pushDuringGate makes the next gate push file as someone else.
func (u *upstream) pushDuringGate(file string) {
	u.write(u.dir, "push-stream", string(gittest.Stream(u.env, someone("someone else: "+file, file))))
	u.write(u.dir, "push-once", "git --git-dir='"+u.origin+"' -c fastimport.unpackLimit=0 fast-import --quiet < '"+filepath.Join(u.dir, "push-stream")+"'\n")
}

func (u *upstream) originMain() string {
	u.t.Helper()
	return u.gitIn(u.origin, "rev-parse", "main")
}

// allGated fails unless every first-parent commit of main after the
// first has a tree the gate passed. One git log (three processes a
// commit before).
func (u *upstream) allGated() {
	u.t.Helper()
	b, _ := os.ReadFile(filepath.Join(u.dir, "gated.txt"))
	gated := string(b)
	commits := strings.Split(u.gitIn(u.top, "log", "--first-parent", "--format=%H %T %s", "main"), "\n")
	for _, l := range commits[:len(commits)-1] { // the last: the initial commit
		c, rest, _ := strings.Cut(l, " ")
		tree, subject, _ := strings.Cut(rest, " ")
		if strings.HasPrefix(subject, "someone") {
			continue // not the driver's
		}
		if !strings.Contains(gated, tree) {
			u.t.Errorf("first-parent commit %.12s (%s) was never gated", c, subject)
		}
	}
}

// TestPushBase: each landing is pushed; a base behind the remote's is
// fast-forwarded before a landing; one that diverged from it (a commit
// of yours on the base, one of someone else's on origin), and a push
// rejected because someone else pushed during the landing's gate, are
// merged through the gate and pushed again; nothing is forced; the
// remote's auto/<id> goes once the phase landed.
func TestPushBase(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	o0 := u.push("o0.txt") // main is behind origin's
	_, tip := u.branch("p1", "p1-first.md", map[string]string{"a.txt": "a1\n"})
	trace := filepath.Join(t.TempDir(), "trace")
	git := u.owner.Git
	u.owner.Git = git.WithEnv(append(testEnv(), "GIT_TRACE="+trace))
	u.mustMerge(u.job("p1", "first phase", tip))
	u.owner.Git = git
	// The base and origin's are read through the shared resolver, and one
	// merge-base tells a base behind from one ahead or diverged: four
	// rev-parse and two merge-base --is-ancestor before, per landing.
	// The base fast-forwarded to origin's is not pushed back to it:
	// one push, the landing's (two before, and the first one's scan).
	var reads, pushes []string
	for _, c := range gitCalls(t, trace) {
		if strings.HasPrefix(c, "rev-parse") || strings.HasPrefix(c, "merge-base") {
			reads = append(reads, c)
		}
		if strings.HasPrefix(c, "push ") || strings.Contains(c, " push ") {
			pushes = append(pushes, c)
		}
	}
	if len(reads) != 1 {
		t.Errorf("%d rev-parse and merge-base processes in a landing that levels and pushes, want 1 merge-base:\n%s", len(reads), strings.Join(reads, "\n"))
	}
	if len(pushes) != 2 || !strings.Contains(pushes[0], ":refs/heads/main") || !strings.Contains(pushes[1], ":refs/heads/auto/p1") {
		t.Errorf("pushes in a landing after a fast-forward to origin's base: want the landing's and the delete of auto/p1:\n%s", strings.Join(pushes, "\n"))
	}
	if got, want := u.originMain(), u.rev("main"); got != want {
		t.Fatalf("origin main %.12s, want the landed %.12s", got, want)
	}
	if u.rev("main^1") != o0 {
		t.Errorf("p1's merge is on %.12s, want origin's %.12s (fast-forwarded first)", u.rev("main^1"), o0)
	}
	if out := u.gitIn(u.origin, "branch", "--list", "auto/p1"); out != "" {
		t.Errorf("origin still has auto/p1 after p1 landed: %q", out)
	}

	u.commitOn(u.top, "someone here: h.txt", map[string]string{"h.txt": "h\n"})
	o1 := u.push("o1.txt")     // diverged before p2's landing
	u.pushDuringGate("o2.txt") // and again during the first gate after that
	_, tip = u.branch("p2", "p2-second.md", map[string]string{"api/x.go": "package api\n"})
	u.mustMerge(u.job("p2", "second phase", tip))
	main := u.rev("main")
	if got := u.originMain(); got != main {
		t.Fatalf("origin main %.12s, want local main %.12s", got, main)
	}
	for _, f := range []string{"o1.txt", "o2.txt", "h.txt", "api/x.go", "a.txt"} {
		u.committed("main", f)
	}
	u.gitIn(u.top, "merge-base", "--is-ancestor", o1, "main") // fails the test when not
	if n := strings.Count(u.gitIn(u.top, "log", "--first-parent", "--format=%s", "main"), "Merge origin/main into main"); n != 2 {
		t.Errorf("%d gated merges of origin's commits on main's first parents, want 2 (before the landing, after the rejected push):\n%s", n, u.gitIn(u.top, "log", "--first-parent", "--oneline", "main"))
	}
	u.allGated()
}

// TestPushBaseTrain: under speculative gates (Build, GateCar, Publish)
// the car at the front levels the base first, and the train's landing is
// pushed.
func TestPushBaseTrain(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	u.commitOn(u.top, "someone here: h.txt", map[string]string{"h.txt": "h\n"})
	u.push("o1.txt")
	tips := u.branches(phase{"p1", "p1-first.md", map[string]string{"a.txt": "a1\n"}}, phase{"p2", "p2-second.md", map[string]string{"api/x.go": "package api\n"}})
	js := []scheduler.MergeJob{u.job("p1", "first phase", tips[0]), u.job("p2", "second phase", tips[1])}
	b := u.mustBuild("", js)
	g := u.owner.GateCar(u.ctx, scheduler.CarGate{Commit: b.Commit, Tree: b.Tree, Jobs: js})
	if !g.OK {
		t.Fatalf("GateCar = %+v", g)
	}
	pub := u.owner.Publish(u.ctx, scheduler.CarPublish{Jobs: js, Tips: b.Tips, From: b.Base, To: b.Commit})
	u.owner.Wait()
	if !pub.Out.OK {
		t.Fatalf("Publish = %+v", pub)
	}
	if got, want := u.originMain(), u.rev("main"); got != want || want != b.Commit {
		t.Fatalf("origin main %.12s, main %.12s, want both the train's %.12s", got, want, b.Commit)
	}
	u.committed("main", "o1.txt")
	u.allGated()
}

// TestPushBaseRedRemergeNeverPushed: someone else pushes a commit that
// breaks the gate while a phase lands; the merge of it is red, so nothing
// is pushed: origin keeps their commit, the run halts with why.
func TestPushBaseRedRemergeNeverPushed(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	u.pushDuringGate("red.txt")
	_, tip := u.branch("p1", "p1-first.md", map[string]string{"a.txt": "a1\n"})
	theirs := u.originMain()
	out := u.owner.Merge(u.ctx, u.job("p1", "first phase", tip))
	u.owner.Wait()
	if out.Err == nil || !strings.Contains(out.Err.Error(), "red on the gate") || !strings.Contains(out.Err.Error(), "not pushed") {
		t.Fatalf("outcome %+v, want an error: landed, not pushed, the merge red", out)
	}
	red := u.originMain()
	if red == theirs {
		t.Fatal("someone else's push did not happen")
	}
	if _, ok, _ := u.git.ReadFile(u.ctx, "main", "red.txt"); ok {
		t.Error("main holds red.txt: the red merge landed")
	}
	if got := u.gitIn(u.origin, "log", "-1", "--format=%s", "main"); got != "someone else: red.txt" {
		t.Errorf("origin main is %q, want someone else's commit untouched", got)
	}
	u.committed("main", "a.txt") // p1 landed here
	u.allGated()
}

// TestPushBaseResumesAfterAKill: a push cut off half-way (the driver
// stopped while origin's hook held the push) leaves the landing local;
// the next run's start pushes it, nothing lost.
func TestPushBaseResumesAfterAKill(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	hook := filepath.Join(u.origin, "hooks", "pre-receive")
	u.write(u.dir, "hook", "#!/bin/sh\ncat >/dev/null\nif [ -e "+u.dir+"/release ]; then exit 0; fi\ntouch "+u.dir+"/started\nwhile [ ! -e "+u.dir+"/release ]; do sleep 0.05; done\nexit 1\n")
	if err := os.Rename(filepath.Join(u.dir, "hook"), hook); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	_, tip := u.branch("p1", "p1-first.md", map[string]string{"a.txt": "a1\n"})
	ctx, cancel := context.WithCancel(u.ctx)
	defer cancel()
	done := make(chan scheduler.MergeOutcome)
	go func() { done <- u.owner.Merge(ctx, u.job("p1", "first phase", tip)) }()
	waitFile(t, filepath.Join(u.dir, "started"), done)
	cancel()
	// The hook then refuses the push, should it outlive the cancel: a
	// push cut off or refused, the landing is not on origin either way.
	u.write(u.dir, "release", "")
	out := <-done
	u.owner.Wait()
	if out.Err == nil || !strings.Contains(out.Err.Error(), "not pushed") {
		t.Fatalf("outcome %+v, want landed, not pushed", out)
	}
	landed := u.rev("main")
	if u.originMain() == landed {
		t.Fatal("origin has the landing: the push was not cut off")
	}
	next := &land.Owner{Git: u.git, Layout: u.layout, Live: u.live, Env: u.env, Upstream: u.owner.Upstream}
	if err := next.SyncUpstream(u.ctx); err != nil {
		t.Fatal(err)
	}
	if got := u.originMain(); got != landed {
		t.Fatalf("origin main %.12s after the restart's sync, want %.12s", got, landed)
	}
}

// TestPushBaseScansThePush: a secret the landing let through (SECRET_SCAN
// off) is not pushed: the push is scanned as the queue's are.
func TestPushBaseScansThePush(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	u.owner.NoSecretScan = true
	_, tip := u.branch("p1", "p1-first.md", map[string]string{"a.txt": "token = ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"})
	before := u.originMain()
	out := u.owner.Merge(u.ctx, u.job("p1", "first phase", tip))
	u.owner.Wait()
	if out.Err == nil || !strings.Contains(out.Err.Error(), "github-token") {
		t.Fatalf("outcome %+v, want the push refused for a github-token", out)
	}
	if u.originMain() != before {
		t.Error("origin moved: the secret was pushed")
	}
}

// waitFile waits for path to appear (a watch on its folder), or fails
// when done delivers first.
func waitFile(t *testing.T, path string, done <-chan scheduler.MergeOutcome) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	for !exists(path) {
		select {
		case <-w.Events:
		case err := <-w.Errors:
			t.Fatal(err)
		case out := <-done:
			t.Fatalf("the merge ended before the push started: %+v", out)
		}
	}
}
