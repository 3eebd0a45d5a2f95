package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// WebFile says where the running driver serves its page, in the state
// folder: written when it starts serving, removed when it stops.
const WebFile = "web.json"

// webWhere is WebFile's content: the address the driver listens on (for
// `claudopilot web` on this machine) and the page's base URL (LISTEN_ORIGIN
// when a proxy serves it).
type webWhere struct {
	Addr string `json:"addr"`
	URL  string `json:"url"`
}

func writeWebWhere(path string, w webWhere) error {
	b, _ := json.Marshal(w)
	// Atomic, so `claudopilot web` never reads half of it; not fsynced: it
	// names a live driver, worth nothing after a crash.
	if err := atomicfile.Write(path, append(b, '\n'), 0o600, atomicfile.Mode(), atomicfile.NoSync()); err != nil {
		return fmt.Errorf("web: %w", err)
	}
	return nil
}

// ErrNoWeb is WebLogin's error when no running driver serves a page here.
var ErrNoWeb = errors.New("no running driver serves the web page here")

// WebLogin asks the driver that serves the page (its state folder
// stateDir) for a new one-time login code, with the API token, and
// returns the login URL.
func WebLogin(ctx context.Context, stateDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, WebFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w (start one with --listen, docs/web.md)", ErrNoWeb)
	}
	var w webWhere
	if err == nil {
		err = json.Unmarshal(b, &w)
	}
	if err != nil || w.Addr == "" {
		return "", fmt.Errorf("%s: %v", filepath.Join(stateDir, WebFile), errors.Join(err, errors.New("no address")))
	}
	tok, err := os.ReadFile(filepath.Join(stateDir, WebTokenFile))
	if err != nil {
		return "", fmt.Errorf("web token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.Addr+"/api/v1/login", bytes.NewReader(nil))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The file is left by a driver that was killed.
		return "", fmt.Errorf("%w: nothing answers at %s (%v)", ErrNoWeb, w.Addr, err)
	}
	defer resp.Body.Close()
	var ans struct{ Code, Error string }
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err := json.Unmarshal(body, &ans); err != nil || resp.StatusCode != http.StatusOK || ans.Code == "" {
		return "", fmt.Errorf("%w: %s answered %s %s", ErrNoWeb, w.Addr, resp.Status, ans.Error)
	}
	return w.URL + "/login?code=" + ans.Code, nil
}
