// Package record is the promote loop's ledger (promote.jsonl in the state
// folder): one JSON line per step's outcome, written by the promoter and
// read by status and the web page. It is its own package so that its
// readers do not link the promoter and, through it, the queue's GitHub
// client (issue 23: the suite's link cost).
package record

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LedgerName is the promote ledger's file in the state folder.
const LedgerName = "promote.jsonl"

// Step outcomes.
const (
	Promoted = "promoted" // the pull request was merged
	Red      = "red"      // checks red, timed out, or the merge refused: tried again next interval
	Waiting  = "waiting"  // the source's checks are still running: tried again at the next tick
	Current  = "current"  // nothing to promote: the target has the source's head
	NotDue   = "not due"  // within PROMOTE_EVERY_HOURS of the step's last try
)

// Result is one step's outcome.
type Result struct {
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	PR        int       `json:"pr,omitempty"`
	SHA       string    `json:"sha,omitempty"`
	Why       string    `json:"why,omitempty"`
	Changelog string    `json:"changelog,omitempty"`
}

// ReadLedger reads the promote ledger (none: empty); a torn line is
// skipped.
func ReadLedger(path string) ([]Result, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, line := range strings.Split(string(b), "\n") {
		var r Result
		if json.Unmarshal([]byte(line), &r) == nil && r.Kind != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// Latest is each step's newest outcome in the ledger (promoted or red),
// in the order the steps first appear: what `status` and the page show
// of the promote loop. The changelog is left out.
func Latest(rs []Result) []Result {
	var out []Result
	at := map[string]int{}
	for _, r := range rs {
		r.Changelog = ""
		k := r.From + "\x00" + r.To
		if i, ok := at[k]; ok {
			out[i] = r
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	return out
}

// ReadLatest is Latest of the ledger in stateDir.
func ReadLatest(stateDir string) ([]Result, error) {
	rs, err := ReadLedger(filepath.Join(stateDir, LedgerName))
	return Latest(rs), err
}

// Append adds r to the ledger at path (made with its folder if missing).
func Append(path string, r Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(r)
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}
