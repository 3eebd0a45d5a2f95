package initcmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/settings"
)

// TestInitConfig: the generated claudopilot.config names every run
// setting, commented out at its default; uncommented, it reads back as
// exactly the defaults.
func TestInitConfig(t *testing.T) {
	ks := settings.ForScope(settings.Run)
	text := initConfig(ks)
	for _, k := range ks {
		if !strings.Contains(text, "\n#"+k.Env+"="+k.Def+"\n") {
			t.Errorf("claudopilot.config lacks #%s=%s", k.Env, k.Def)
		}
		if !strings.Contains(text, "(--"+k.Flag+")") {
			t.Errorf("claudopilot.config does not name --%s", k.Flag)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, settings.ConfigFile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Top: dir})
	if err != nil || len(s.Set()) != 0 {
		t.Fatalf("as written: %v, %v; want no setting", s.Set(), err)
	}
	on := regexp.MustCompile(`(?m)^#([A-Z_]+=)`).ReplaceAllString(text, "$1")
	if err := os.WriteFile(path, []byte(on), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = settings.Resolve(settings.Input{Scope: settings.Run, Top: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if v := s.Value(k.Env); v.Src.Kind != settings.FromFile || v.Raw != k.Def {
			t.Errorf("uncommented %s = %q (from %s), want the default %q", k.Env, v.Raw, v.Src, k.Def)
		}
	}
}
