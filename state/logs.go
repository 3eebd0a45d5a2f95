package state

import (
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
