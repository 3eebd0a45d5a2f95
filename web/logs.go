package web

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
	"github.com/claudopilot/claudopilot/transcript"
)

// LogItem is one log of a node, as GET /api/v1/logs/{id}/list lists it.
type LogItem struct {
	Role    string `json:"role"`
	Attempt int    `json:"attempt"`
	Label   string `json:"label"`
	// Failing is the log the node's parking names: the red gate's output,
	// the attempt that failed.
	Failing bool `json:"failing,omitempty"`
}

// LogIndex is GET /api/v1/logs/{id}/list: a node's logs, oldest first,
// and the one the pane opens on (Open, an index; -1 when there is none).
type LogIndex struct {
	Logs []LogItem `json:"logs"`
	Open int       `json:"open"`
}

// agentRole says whether a log is an agent's (the pane's default) rather
// than a gate's or a merge step's.
func agentRole(role string) bool {
	return role == "worker" || role == "supervisor" || role == "reviewer"
}

func (s *Server) logList(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.Logs == nil {
		httpError(w, http.StatusNotFound, "no log list here")
		return
	}
	files, err := s.Logs(id)
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	failing := s.Model.failingLog(id)
	idx := LogIndex{Logs: []LogItem{}, Open: -1}
	for i, f := range files {
		it := LogItem{Role: f.Role, Attempt: f.Attempt, Label: f.Role + " " + strconv.Itoa(f.Attempt), Failing: failing != "" && f.Path == failing}
		if it.Failing {
			it.Label += " (failed)"
		}
		idx.Logs = append(idx.Logs, it)
		if agentRole(f.Role) || idx.Open < 0 {
			idx.Open = i
		}
	}
	for i, it := range idx.Logs {
		if it.Failing {
			idx.Open = i // a parked node opens on what parked it
		}
	}
	writeJSON(w, http.StatusOK, idx)
}

// failingLog is the log a parked node's failure names, or "".
func (m *Model) failingLog(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.fold.Node(id)
	if p == nil || (p.State != string(manifest.Failed) && p.State != string(manifest.Blocked)) {
		return ""
	}
	return p.Log
}

// logs prints a phase's log, scrubbed of secrets: as text, or with
// view=transcript as the transcript's entries rendered (package
// transcript); follow=1 streams new lines (or entries) as server-sent
// events until the client goes.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	attempt := 0
	if a := q.Get("attempt"); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, "attempt: want a number ≥ 1")
			return
		}
		attempt = n
	}
	view := q.Get("view")
	if view != "" && view != "raw" && view != "transcript" {
		httpError(w, http.StatusBadRequest, "view: want raw or transcript")
		return
	}
	path, err := s.Log(r.PathValue("id"), q.Get("role"), attempt)
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	f, err := os.Open(path)
	if err != nil {
		httpError(w, http.StatusNotFound, "no log yet")
		return
	}
	defer f.Close()
	switch {
	case q.Get("follow") == "1":
		s.follow(w, r, f, view == "transcript")
	case view == "transcript":
		s.transcript(w, f)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), transcript.MaxLine)
		red := s.Redact.Stream()
		for sc.Scan() {
			fmt.Fprintln(w, red.Line(sc.Text()))
		}
	}
}

// entryJSON is one transcript entry as the API serves it: its index (an
// entry can change: a tool call gets its result), kind and HTML.
type entryJSON struct {
	I    int    `json:"i"`
	Kind string `json:"kind"`
	HTML string `json:"html"`
}

func (s *Server) transcript(w http.ResponseWriter, f io.Reader) {
	p := transcript.NewParser()
	red := s.Redact.Stream()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), transcript.MaxLine)
	for sc.Scan() {
		p.Feed(red.Line(sc.Text()))
	}
	out := []entryJSON{}
	for i, e := range p.Entries() {
		out = append(out, entryJSON{I: i, Kind: string(e.Kind), HTML: string(transcript.HTML(e))})
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": out})
}

// follow streams f as it grows: each line as a "line" event, or, for a
// transcript, each entry added or changed as an "entry" event.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, f *os.File, asTranscript bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	sseHeaders(w)
	rd := bufio.NewReader(f)
	red := s.Redact.Stream()
	p := transcript.NewParser()
	send := func(line string) {
		if !asTranscript {
			b, _ := json.Marshal(line)
			fmt.Fprintf(w, "event: line\ndata: %s\n\n", b)
			return
		}
		for _, i := range p.Feed(line) {
			e := p.Entries()[i]
			b, _ := json.Marshal(entryJSON{I: i, Kind: string(e.Kind), HTML: string(transcript.HTML(e))})
			fmt.Fprintf(w, "event: entry\ndata: %s\n\n", b)
		}
	}
	var part string
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		for {
			line, err := rd.ReadString('\n')
			part += line
			if err != nil {
				break // the rest of a line comes later
			}
			send(red.Line(strings.TrimRight(part, "\r\n")))
			part = ""
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-tick.C: // a log is a file: look again for more
		}
	}
}
