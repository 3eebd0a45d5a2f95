package work

import (
	"io"
	"os"

	"github.com/claudopilot/claudopilot/ledger"
)

// fileSize is the size of path, 0 when it does not exist.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// usageOf reads what the agent reported spending from its log, from
// offset on (the output of this run; a relaunch appends to the log).
// A log capped by LOG_CAP_MB keeps its tail, where the result is. A cost
// the ledger skips as unreadable is noted at the log's end, and returned
// for a warning.
func usageOf(path string, offset int64) (ledger.Usage, []string) {
	f, err := os.Open(path)
	if err != nil {
		return ledger.Usage{}, nil
	}
	defer f.Close()
	if offset > 0 && offset <= fileSize(path) {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return ledger.Usage{}, nil
		}
	}
	u, notes := ledger.Parse(f)
	for _, n := range notes {
		noteInLog(path, "claudopilot: "+n)
	}
	return u, notes
}
