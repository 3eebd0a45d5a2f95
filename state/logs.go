package state

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LogFile is one log of a node: .claudopilot/logs/<id>/<role>-<attempt>.log.
type LogFile struct {
	Path    string
	Role    string
	Attempt int
	Mod     time.Time
}

// Logs lists a node's logs (a phase's, or an outside node's such as "#12"),
// oldest first; role "" means every role. A repair's failure summaries
// (*.failure.*) are not logs of their own.
func (l Layout) Logs(id, role string) []LogFile {
	dir := l.LogDir(id)
	ents, _ := os.ReadDir(dir)
	var out []LogFile
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".log") || strings.Contains(name, ".failure.") {
			continue
		}
		base := strings.TrimSuffix(name, ".log")
		i := strings.LastIndexByte(base, '-')
		if i < 0 {
			continue
		}
		n, err := strconv.Atoi(base[i+1:])
		if err != nil {
			continue
		}
		if role != "" && base[:i] != role {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, LogFile{Path: filepath.Join(dir, name), Role: base[:i], Attempt: n, Mod: info.ModTime()})
	}
	// By time written; one instant's logs by attempt.
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Mod.Equal(out[j].Mod) {
			return out[i].Mod.Before(out[j].Mod)
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out
}

// LatestLog is the newest log of a node, of any role, or "".
func (l Layout) LatestLog(id string) string {
	logs := l.Logs(id, "")
	if len(logs) == 0 {
		return ""
	}
	return logs[len(logs)-1].Path
}

// Stamped end lines. Every agent's log ends with one line saying when and
// how its attempt ended, passing attempts too:
//
//	=== claudopilot 2026-12-04T22:05:04Z: worker attempt 2 of #12 finished: exit 0
//	=== claudopilot 2026-12-04T22:05:04Z: worker attempt 1 of p1 failed: reason=gate: …
const stampPrefix = "=== claudopilot "

// EndStamp is the stamped end line of an attempt, without the newline.
func EndStamp(now time.Time, what string) string {
	return stampPrefix + now.UTC().Format(time.RFC3339) + ": " + what
}

// lastStamp is the last stamped end line of the log at path, or "".
func lastStamp(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	const tail = 4096
	off := max(st.Size()-tail, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.HasPrefix(l, stampPrefix) && len(l) > len(stampPrefix) && l[len(stampPrefix)] != ':' {
			return l
		}
		if strings.TrimSpace(lines[i]) != "" && !strings.HasPrefix(lines[i], "=== claudopilot") {
			return "" // the agent's own output after the last stamp: a relaunch that has not ended
		}
	}
	return ""
}

// passed says whether a log's last stamp is of an attempt that passed.
func passed(stamp string) bool {
	return strings.HasSuffix(stamp, " finished: exit 0")
}

// RotatedFile records the logs LOG_KEEP rotated away, in a node's log
// folder: one line each, "<log name>\t<when>\t<its end line>".
const RotatedFile = "rotated.txt"

// RotateLogs removes the oldest logs of role of node id beyond the newest
// keep (LOG_KEEP; 0 keeps all), and records each it removes. It never
// removes a failed attempt's log (nor one without an end line, which has
// not ended), nor the latest.
func (l Layout) RotateLogs(id, role string, keep int, now time.Time) ([]string, error) {
	logs := l.Logs(id, role)
	if keep <= 0 || len(logs) <= keep {
		return nil, nil
	}
	var removed []string
	for _, lf := range logs[:len(logs)-keep] {
		stamp := lastStamp(lf.Path)
		if !passed(stamp) {
			continue
		}
		rec := fmt.Sprintf("%s\t%s\t%s\n", filepath.Base(lf.Path), now.UTC().Format(time.RFC3339), stamp)
		if err := appendFile(filepath.Join(l.LogDir(id), RotatedFile), rec); err != nil {
			return removed, err
		}
		if err := os.Remove(lf.Path); err != nil && !os.IsNotExist(err) {
			return removed, fmt.Errorf("rotate %s: %w", lf.Path, err)
		}
		removed = append(removed, lf.Path)
	}
	return removed, nil
}

// Rotated is a log LOG_KEEP rotated away: when, and how its attempt ended.
type Rotated struct {
	When time.Time
	End  string
}

// RotatedLog says whether the log of role's attempt of node id was
// rotated away.
func (l Layout) RotatedLog(id, role string, attempt int) (Rotated, bool) {
	b, err := os.ReadFile(filepath.Join(l.LogDir(id), RotatedFile))
	if err != nil {
		return Rotated{}, false
	}
	name := fmt.Sprintf("%s-%d.log", role, attempt)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) == 3 && f[0] == name {
			when, _ := time.Parse(time.RFC3339, f[1])
			return Rotated{When: when, End: f[2]}, true
		}
	}
	return Rotated{}, false
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	_, werr := f.WriteString(s)
	if err := f.Close(); werr == nil {
		werr = err
	}
	return werr
}
