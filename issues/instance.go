package issues

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/claudopilot/claudopilot/atomicfile"
)

// StableInstance is the clone's instance name, kept in the file at path
// (made on first use). It stays the same across runs, so a driver
// restarted after a crash finds its own claims and resumes them at once
// instead of waiting CLAIM_STALE_HOURS for them to go stale; the
// repository lock makes sure one driver at a time uses it.
func StableInstance(path string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if name := strings.TrimSpace(string(b)); validInstance(name) {
			return name, nil
		}
		// Damaged: a new name. Claims under the old one go stale.
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("instance name: %w", err)
	}
	name := NewInstance()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	if err := atomicfile.Write(path, []byte(name+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	return name, nil
}

// validInstance: a name a claim marker can carry (no space, no '>').
func validInstance(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t\r\n<>")
}
