package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/state"
)

// logsFixture gives phase b a worker log, a green gate log and a red one,
// as the layout lists them.
func logsFixture(t *testing.T) (*fixture, map[string]string) {
	t.Helper()
	f := newFixture(t)
	dir := t.TempDir()
	paths := map[string]string{}
	var files []state.LogFile
	for i, name := range []string{"worker-1", "gate-1", "worker-2", "gate-2"} {
		p := filepath.Join(dir, name+".log")
		body := name + " output\n"
		if name == "worker-2" {
			body = `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Fixing <b>it</b>."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":10,"output_tokens":2}}}` + "\n"
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
		role, n, _ := strings.Cut(name, "-")
		files = append(files, state.LogFile{Path: p, Role: role, Attempt: int(n[0] - '0'), Mod: time.Unix(int64(i), 0)})
	}
	f.srv.Logs = func(id string) ([]state.LogFile, error) {
		if id != "b" {
			return nil, errors.New("no phase")
		}
		return files, nil
	}
	f.srv.Log = func(id, role string, attempt int) (string, error) {
		if p, ok := paths[role+"-"+string(rune('0'+attempt))]; ok && id == "b" {
			return p, nil
		}
		return paths["worker-2"], nil
	}
	return f, paths
}

func logIndex(t *testing.T, f *fixture) LogIndex {
	t.Helper()
	resp := f.do(t, "GET", "/api/v1/logs/b/list", "tok", "", "")
	var idx LogIndex
	if err := json.NewDecoder(resp.Body).Decode(&idx); err != nil || resp.StatusCode != 200 {
		t.Fatalf("list: %d %v", resp.StatusCode, err)
	}
	return idx
}

// The pane lists every log of a node, gate logs too, and opens on the
// newest agent log, or, for a node parked by a red gate, on the gate's
// output.
func TestLogListOpensOnTheFailure(t *testing.T) {
	f, paths := logsFixture(t)
	idx := logIndex(t, f)
	if len(idx.Logs) != 4 || idx.Logs[1].Label != "gate 1" || idx.Open != 2 {
		t.Fatalf("running: %+v", idx)
	}
	f.srv.Model.Apply(scheduler.Event{Kind: scheduler.EvBlocked, Phase: "b", State: "blocked", Reason: state.ReasonGate, LogPath: paths["gate-2"]})
	idx = logIndex(t, f)
	if idx.Open != 3 || !idx.Logs[3].Failing || idx.Logs[3].Label != "gate 2 (failed)" {
		t.Errorf("parked on a red gate: %+v", idx)
	}
	if got := f.do(t, "GET", "/api/v1/logs/zz/list", "tok", "", "").StatusCode; got != 404 {
		t.Errorf("unknown node: %d", got)
	}
	if got := f.do(t, "GET", "/api/v1/logs/b/list", "", "", "").StatusCode; got != 401 {
		t.Errorf("no token: %d", got)
	}
}

// view=transcript serves the log as transcript entries rendered as HTML
// (escaped), whole or followed.
func TestLogTranscript(t *testing.T) {
	f, _ := logsFixture(t)
	resp := f.do(t, "GET", "/api/v1/logs/b?role=worker&attempt=2&view=transcript", "tok", "", "")
	var got struct {
		Entries []entryJSON `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 3 || got.Entries[0].Kind != "turn" || !strings.Contains(got.Entries[1].HTML, "Fixing &lt;b&gt;it&lt;/b&gt;.") ||
		!strings.Contains(got.Entries[2].HTML, "<b>Bash</b> <code>go test ./...</code>") {
		t.Fatalf("transcript: %+v", got.Entries)
	}
	if code := f.do(t, "GET", "/api/v1/logs/b?view=pretty", "tok", "", "").StatusCode; code != 400 {
		t.Errorf("bad view: %d", code)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/api/v1/logs/b?role=worker&attempt=2&view=transcript&follow=1", nil)
	req.Header.Set("Authorization", "Bearer tok")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	var events []string
	for len(events) < 3 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") {
			events = append(events, strings.TrimPrefix(sc.Text(), "event: "))
		}
	}
	if strings.Join(events, ",") != "entry,entry,entry" {
		t.Errorf("followed: %v", events)
	}
}
