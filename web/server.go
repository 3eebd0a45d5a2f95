package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/claudopilot/claudopilot/scheduler"
	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/status"
)

//go:embed page.html
var page []byte

// CookieName is the cookie the one-time login URL sets.
const CookieName = "claudopilot_token"

// Actions carry out POST /api/v1/actions. The composition implements them
// with the same switches and manifest writes as the commands.
type Actions interface {
	Pause() error
	Resume() error
	Drain() error
	Retry(id string) error
	// Lane switches lane id on or off, as `claudopilot lane on|off ID`.
	Lane(id string, on bool) error
	// Answer answers the open question of node id, as `claudopilot
	// answer ID TEXT`: the one asked at asked (the page sends the time of
	// the question it showed), any when zero.
	Answer(id string, asked time.Time, text string) error
	// ScannerRun runs scanner name now, through the run's slot pool, as
	// the refill would; ScannerSwitch switches it off or on, as
	// `claudopilot scanners off|on NAME` (docs/queue.md).
	ScannerRun(name string) error
	ScannerSwitch(name string, on bool) error
}

// LogPath finds a phase's log: role "" means any, attempt 0 the newest.
type LogPath func(id, role string, attempt int) (string, error)

// LogList lists a phase's logs, oldest first (state.Layout.Logs); an error
// for an id that is no node.
type LogList func(id string) ([]state.LogFile, error)

// Server is the HTTP side of a running driver.
type Server struct {
	Token   string
	Model   *Model
	Actions Actions
	Log     LogPath
	Logs    LogList
	Hub     *Hub
	// Redact is the driver's redaction funnel: every log line served
	// goes through it (nil: the rules alone).
	Redact *secret.Redactor
	// Screen opens the live terminal of node id's agent read-only (an
	// agent on a terminal, ATTACH=1), as `claudopilot attach` shows it
	// (nil: none).
	Screen func(id string) (io.ReadCloser, error)
	// Timeline reads the run's timeline from the journal (nil: none).
	Timeline func() (status.Timeline, error)
	// Origin is the page's public origin when an HTTPS proxy serves it
	// (LISTEN_ORIGIN, "https://pilot.example.com"): the browser's requests
	// name it, not the address the driver listens on ("" none).
	Origin string

	mu   sync.Mutex      // guards once
	once map[string]bool // one-time login codes not used yet
}

// NewToken makes a random token for .claudopilot/state/web-token.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// LoginCode makes a one-time code for the login URL; it works once.
func (s *Server) LoginCode() (string, error) {
	c, err := NewToken()
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.once == nil {
		s.once = map[string]bool{}
	}
	s.once[c] = true
	return c, nil
}

// CheckAddr refuses an address that is not loopback unless public is set.
func CheckAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: want HOST:PORT, e.g. 127.0.0.1:7777: %w", addr, err)
	}
	if public {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address: pass --listen-public too to serve other machines (still token-only)", addr)
}

// CheckOrigin reads LISTEN_ORIGIN: a scheme (http or https) and a host,
// no path; it returns the origin as browsers write it.
func CheckOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	if err == nil && (u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil) {
		err = errors.New("want SCHEME://HOST[:PORT], e.g. https://pilot.example.com")
	}
	if err != nil {
		return "", fmt.Errorf("LISTEN_ORIGIN (--listen-origin) %q: %w", origin, err)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), nil
}

// Handler routes every request.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.login)
	mux.HandleFunc("GET /{$}", s.auth(s.page))
	mux.HandleFunc("GET /api/v1/state", s.auth(s.state))
	mux.HandleFunc("GET /api/v1/events", s.auth(s.events))
	mux.HandleFunc("GET /api/v1/logs/{id}", s.auth(s.logs))
	mux.HandleFunc("GET /api/v1/logs/{id}/list", s.auth(s.logList))
	mux.HandleFunc("GET /api/v1/timeline", s.auth(s.timeline))
	mux.HandleFunc("POST /api/v1/actions", s.auth(s.action))
	mux.HandleFunc("GET /api/v1/attach/{id}", s.auth(s.screen))
	mux.HandleFunc("POST /api/v1/login", s.auth(s.newLogin))
	return mux
}

// auth lets a request through with the token as a bearer header or the
// login cookie. A POST must not come from another origin; one made with
// the cookie must say its origin, as browsers do.
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		byCookie := false
		tok := ""
		if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
			tok = strings.TrimPrefix(h, "Bearer ")
		} else if c, err := r.Cookie(CookieName); err == nil {
			tok, byCookie = c.Value, true
		}
		if tok == "" {
			httpError(w, http.StatusUnauthorized, "a token is needed: Authorization: Bearer <.claudopilot/state/web-token>, or open a login URL (`claudopilot web` prints one)")
			return
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.Token)) != 1 {
			httpError(w, http.StatusUnauthorized, "wrong token")
			return
		}
		if r.Method == http.MethodPost {
			origin := r.Header.Get("Origin")
			if origin != "" && origin != "http://"+r.Host && (s.Origin == "" || origin != s.Origin) {
				httpError(w, http.StatusForbidden, "cross-origin request refused")
				return
			}
			if origin == "" && byCookie {
				httpError(w, http.StatusForbidden, "a request with the cookie must name its origin")
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		next(w, r)
	}
}

// loginUsed is the page a login URL that is unknown or was used already
// opens: it says how to get another.
const loginUsed = `<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>claudopilot: login URL used</title>
<body style="font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem">
<h1 style="font-size:1.2rem">This login URL was used already (or is unknown)</h1>
<p>A login URL works once. For a new one, run this in the repository where the driver runs:</p>
<pre style="background:#f0f2f5;padding:.6rem">claudopilot web</pre>
<p>It prints a fresh URL for the running driver (and fails when none runs).
Scripts use the token in <code>.claudopilot/state/web-token</code> as a bearer header instead.</p>
</body>`

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	s.mu.Lock()
	ok := code != "" && s.once[code]
	delete(s.once, code)
	s.mu.Unlock()
	if !ok {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, loginUsed)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
	w.Write(page)
}

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Model.State())
}

// events streams the scheduler's events as server-sent events, the same
// JSON as --json prints.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	ch, cancel := s.Hub.Subscribe()
	defer cancel()
	sseHeaders(w)
	fmt.Fprint(w, ": claudopilot events\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev, ok := <-ch:
			if !ok {
				return // the run ended, or this client fell behind
			}
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Kind, b)
			fl.Flush()
		}
	}
}

// timeline serves the run's timeline, drawn from the journal: as HTML (a
// legend and an SVG, what the page shows) or, with format=json, its rows.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request) {
	if s.Timeline == nil {
		httpError(w, http.StatusNotFound, "no timeline here")
		return
	}
	tl, err := s.Timeline()
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if r.URL.Query().Get("format") == "json" {
		writeJSON(w, http.StatusOK, tl)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	TimelineSVG(w, tl)
}

// newLogin makes a one-time login code for `claudopilot web` (which holds
// the token): {"code":"…"}.
func (s *Server) newLogin(w http.ResponseWriter, r *http.Request) {
	code, err := s.LoginCode()
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"code": code})
}

// screen streams an agent's terminal, read-only: "screen" events whose
// data is the bytes (base64; the recent screen first, through the
// redaction funnel), then "end" when the agent ends.
func (s *Server) screen(w http.ResponseWriter, r *http.Request) {
	if s.Screen == nil {
		httpError(w, http.StatusNotFound, "no agent runs on a terminal here (ATTACH=1)")
		return
	}
	c, err := s.Screen(r.PathValue("id"))
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	defer c.Close()
	stop := context.AfterFunc(r.Context(), func() { c.Close() })
	defer stop()
	sseHeaders(w)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			fmt.Fprintf(w, "event: screen\ndata: %s\n\n", base64.StdEncoding.EncodeToString([]byte(s.Redact.String(string(buf[:n])))))
		}
		if err != nil {
			fmt.Fprint(w, "event: end\ndata: {}\n\n")
		}
		if fl != nil {
			fl.Flush()
		}
		if err != nil {
			return
		}
	}
}

type actionReq struct {
	Action string `json:"action"`
	ID     string `json:"id"`
	Text   string `json:"text,omitempty"` // answer's
	// Asked names the question an answer is for (the state's asked).
	Asked time.Time `json:"asked,omitzero"`
}

func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	var req actionReq
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "want JSON {\"action\":\"pause\"|\"resume\"|\"drain\"|\"retry\"|\"lane_on\"|\"lane_off\"|\"answer\"|\"scanner_run\"|\"scanner_on\"|\"scanner_off\",\"id\":…}")
		return
	}
	var err error
	switch req.Action {
	case "pause":
		err = s.Actions.Pause()
	case "resume":
		err = s.Actions.Resume()
	case "drain":
		err = s.Actions.Drain()
	case "retry":
		if req.ID == "" {
			httpError(w, http.StatusBadRequest, "retry needs an id")
			return
		}
		err = s.Actions.Retry(req.ID)
	case "answer":
		if req.ID == "" || strings.TrimSpace(req.Text) == "" {
			httpError(w, http.StatusBadRequest, "answer needs an id and a text")
			return
		}
		err = s.Actions.Answer(req.ID, req.Asked, req.Text)
	case "lane_on", "lane_off":
		if req.ID == "" {
			httpError(w, http.StatusBadRequest, req.Action+" needs an id (a lane of LANES)")
			return
		}
		err = s.Actions.Lane(req.ID, req.Action == "lane_on")
	case "scanner_run", "scanner_on", "scanner_off":
		if req.ID == "" {
			httpError(w, http.StatusBadRequest, req.Action+" needs an id (a scanner's name)")
			return
		}
		if req.Action == "scanner_run" {
			err = s.Actions.ScannerRun(req.ID)
		} else {
			err = s.Actions.ScannerSwitch(req.ID, req.Action == "scanner_on")
		}
	default:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("unknown action %q: want pause, resume, drain, retry, lane_on, lane_off, answer, scanner_run, scanner_on or scanner_off", req.Action))
		return
	}
	if err != nil {
		httpError(w, http.StatusConflict, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"ok": req.Action})
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// Serve listens on addr and serves until ctx ends. It returns the address
// it listens on (the port is chosen for ":0") once it listens.
func (s *Server) Serve(ctx context.Context, addr string, errs chan<- error) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("--listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && errs != nil {
			errs <- err
		}
	}()
	return ln.Addr().String(), nil
}

// Hub fans the run's events out to the event streams. A client that falls
// behind is dropped (its stream ends) rather than slowing the run.
type Hub struct {
	mu   sync.Mutex // guards subs and done
	subs map[chan scheduler.Event]bool
	done bool
}

// NewHub makes an empty hub.
func NewHub() *Hub { return &Hub{subs: map[chan scheduler.Event]bool{}} }

// Subscribe returns a stream of events and its cancel.
func (h *Hub) Subscribe() (<-chan scheduler.Event, func()) {
	ch := make(chan scheduler.Event, 256)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		close(ch)
		return ch, func() {}
	}
	h.subs[ch] = true
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.subs[ch] {
			delete(h.subs, ch)
			close(ch)
		}
	}
}

// Publish hands ev to every stream; it never blocks.
func (h *Hub) Publish(ev scheduler.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- ev:
		default:
			delete(h.subs, ch)
			close(ch)
		}
	}
}

// Close ends every stream.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.done = true
	for ch := range h.subs {
		close(ch)
	}
	h.subs = map[chan scheduler.Event]bool{}
}
