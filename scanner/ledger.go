package scanner

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LedgerName is the scanner ledger's file in the state folder: every
// candidate filed, every scanner run, every scanner switched off or on,
// kept across runs.
const LedgerName = "scans.jsonl"

// Record kinds of the ledger.
const (
	KindRun   = "run"   // a scanner ran (Filed, Dropped, Error)
	KindFiled = "filed" // a candidate was filed as Issue
	KindOff   = "off"   // the scanner was switched off
	KindOn    = "on"    // … and on again
)

// Record is one line of the ledger.
type Record struct {
	At          time.Time `json:"at"`
	Kind        string    `json:"kind"`
	Scanner     string    `json:"scanner"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Issue       int       `json:"issue,omitempty"`
	Title       string    `json:"title,omitempty"`
	Filed       int       `json:"filed,omitempty"`
	Dropped     int       `json:"dropped,omitempty"`
	Error       string    `json:"error,omitempty"`
	Log         string    `json:"log,omitempty"`
}

// Ledger is the scanner ledger: an append-only JSON-lines file. A torn last
// line (a crash mid-write) is skipped when read.
type Ledger struct {
	Path string
	mu   sync.Mutex
}

// LedgerPath is the ledger of the state folder stateDir.
func LedgerPath(stateDir string) string { return filepath.Join(stateDir, LedgerName) }

// Append adds records, each one line written whole.
func (l *Ledger) Append(rs ...Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	var buf []byte
	for _, r := range rs {
		b, err := json.Marshal(r)
		if err != nil {
			f.Close()
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	_, err = f.Write(buf)
	return errors.Join(err, f.Close())
}

// State is what the ledger says now.
type State struct {
	// Filed: the fingerprints filed, by "scanner\x00fingerprint".
	Filed map[string]int
	// LastRun: each scanner's newest run record.
	LastRun map[string]Record
	// Newest is the newest run of any scanner (zero: none yet).
	Newest Record
	// Off: the scanners switched off.
	Off map[string]bool
	// LastFiled: what each scanner's newest run filed (its "filed"
	// records, written before the run's own).
	LastFiled map[string][]Record
}

// Read folds the ledger.
func (l *Ledger) Read() (State, error) {
	st := State{Filed: map[string]int{}, LastRun: map[string]Record{}, Off: map[string]bool{}, LastFiled: map[string][]Record{}}
	pending := map[string][]Record{} // filed by a run not recorded yet
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a torn line
		}
		switch r.Kind {
		case KindFiled:
			st.Filed[key(r.Scanner, r.Fingerprint)] = r.Issue
			pending[r.Scanner] = append(pending[r.Scanner], r)
		case KindRun:
			st.LastRun[r.Scanner] = r
			st.LastFiled[r.Scanner], pending[r.Scanner] = pending[r.Scanner], nil
			if !r.At.Before(st.Newest.At) {
				st.Newest = r
			}
		case KindOff:
			st.Off[r.Scanner] = true
		case KindOn:
			delete(st.Off, r.Scanner)
		}
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("%s: %w", l.Path, err)
	}
	return st, nil
}

func key(scanner, fp string) string { return scanner + "\x00" + fp }
