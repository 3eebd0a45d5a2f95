package settings

import (
	"strings"
	"testing"
)

// PROTECTED_PATHS: a bad glob is a problem naming the value and its
// source; good globs are protected beside every file the settings model
// reads (Files), and none turns the check off.
func TestProtectedPaths(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	_, err := Resolve(Input{Scope: Run, Env: map[string]string{"PROTECTED_PATHS": "scripts/[x"}})
	if err == nil || !strings.Contains(err.Error(), `PROTECTED_PATHS="scripts/[x" from the environment`) || !strings.Contains(err.Error(), "not a glob") {
		t.Errorf("a bad glob: %v", err)
	}
	s, err := Resolve(Input{Scope: Run, Env: map[string]string{"PROTECTED_PATHS": "scripts/**, Makefile"}})
	if err != nil {
		t.Fatal(err)
	}
	ps := s.Protected(top)
	for _, p := range []string{"scripts/bootstrap.sh", "Makefile", ConfigFile, "claudopilot.config.sh", ".claudopilot/config.json", ".claudopilot/config.sh"} {
		if len(ps.Check([]string{p}, nil)) != 1 {
			t.Errorf("%s is not protected", p)
		}
	}
	if hits := ps.Check([]string{"src/main.go"}, nil); len(hits) != 0 {
		t.Errorf("src/main.go protected: %v", hits)
	}
	q, err := Resolve(Input{Scope: Queue, Env: map[string]string{"PROTECTED_PATHS": "none"}})
	if err != nil || !q.Protected(top).Off {
		t.Errorf("none: %+v %v", q.ProtectedPaths, err)
	}
}
