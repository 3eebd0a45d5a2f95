package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/roadmap"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/web"
)

// The web page's log pane reads the same listing as `logs`
// (state.Layout.Logs): with no role named, the newest agent log before a
// newer gate log; a role and an attempt pick that file; a repair's failure
// summary is no log.
func TestFindLog(t *testing.T) {
	rm, err := roadmap.Parse("/rm", []byte("# Execution Manifest: t\n\n1. [pending] **p1** — one (deps: none)\n"), nil, roadmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := state.Layout{Top: t.TempDir()}
	if _, err := FindLog(l, rm, "p1", "", 0); err == nil {
		t.Fatal("a log before any was written")
	}
	t0 := time.Now().Add(-time.Hour)
	for i, name := range []string{"worker-1.log", "gate-1.log", "supervisor-1.log", "gate-2.log", "supervisor-1.failure.log"} {
		p := filepath.Join(l.LogDir("p1"), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := t0.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		role    string
		attempt int
		want    string
	}{
		{"", 0, "supervisor-1.log"},
		{"gate", 0, "gate-2.log"},
		{"gate", 1, "gate-1.log"},
		{"", 1, "supervisor-1.log"},
		{"worker", 0, "worker-1.log"},
	} {
		got, err := FindLog(l, rm, "p1", tc.role, tc.attempt)
		if err != nil || filepath.Base(got) != tc.want {
			t.Errorf("role %q attempt %d: %s %v, want %s", tc.role, tc.attempt, got, err, tc.want)
		}
	}
	if _, err := FindLog(l, rm, "p1", "reviewer", 0); err == nil {
		t.Error("a reviewer log that is not there")
	}
	if _, err := FindLog(l, rm, "nope", "", 0); err == nil {
		t.Error("a log of an unknown phase")
	}
}

// `claudopilot web`'s side: with the token, the running driver makes a
// new one-time login URL each time (the page's base, LISTEN_ORIGIN's when
// set); it works once, and the used one opens a page that says how to
// get another. With no driver serving (no web.json, or one left by a
// killed driver) it fails with ErrNoWeb.
func TestWebLogin(t *testing.T) {
	dir := t.TempDir()
	if _, err := WebLogin(context.Background(), dir); !errors.Is(err, ErrNoWeb) {
		t.Fatalf("no driver: %v", err)
	}
	srv := &web.Server{Token: "tok", Hub: web.NewHub()}
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := srv.Serve(ctx, "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, WebTokenFile), []byte("tok\n"), 0o600)
	if err := writeWebWhere(filepath.Join(dir, WebFile), webWhere{Addr: addr, URL: "http://" + addr}); err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		resp, err := noRedirect.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	first, err := WebLogin(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := WebLogin(context.Background(), dir)
	if err != nil || second == first || !strings.HasPrefix(second, "http://"+addr+"/login?code=") {
		t.Fatalf("second URL %q (first %q): %v", second, first, err)
	}
	for _, u := range []string{first, second} {
		if code, _ := get(u); code != http.StatusSeeOther {
			t.Errorf("%s: %d, want 303 (logged in)", u, code)
		}
	}
	if code, body := get(first); code != http.StatusForbidden || !strings.Contains(body, "claudopilot web") {
		t.Errorf("a used URL: %d %q", code, body)
	}
	cancel()
	// The driver is gone and its web.json stayed (a kill).
	for {
		if _, err := http.Get("http://" + addr + "/"); err != nil {
			break
		}
	}
	if _, err := WebLogin(context.Background(), dir); !errors.Is(err, ErrNoWeb) {
		t.Errorf("web.json left by a killed driver: %v", err)
	}
}

// The web page's token is written 0600 from its creation, in place of
// whatever was at its path: a link planted there (an unsandboxed agent's,
// to a file it can read) is replaced, not followed.
func TestWebTokenFileIsNewAndPrivate(t *testing.T) {
	dir := t.TempDir()
	bait := filepath.Join(dir, "bait")
	if err := os.WriteFile(bait, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, WebTokenFile)
	if err := os.Symlink(bait, p); err != nil {
		t.Fatal(err)
	}
	if err := writeSecretFile(p, "tok\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(bait); len(b) != 0 {
		t.Errorf("the token went through the planted link: %q", b)
	}
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Errorf("web-token is %v, want a plain file 0600", st.Mode())
	}
}
