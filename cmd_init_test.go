package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInitConfig: the generated claudopilot.config names every run
// setting, commented out at its default; uncommented, it reads back as
// exactly the defaults.
func TestInitConfig(t *testing.T) {
	ks := runKnobs()
	text := initConfig(ks)
	for _, k := range ks {
		if !strings.Contains(text, "\n#"+k.env+"="+k.def+"\n") {
			t.Errorf("claudopilot.config lacks #%s=%s", k.env, k.def)
		}
		if !strings.Contains(text, "(--"+k.flag+")") {
			t.Errorf("claudopilot.config does not name --%s", k.flag)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, ConfigFile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if vals, _, err := readConfig(dir, ks); err != nil || len(vals) != 0 {
		t.Fatalf("as written: %v, %v; want no setting", vals, err)
	}
	on := regexp.MustCompile(`(?m)^#([A-Z_]+=)`).ReplaceAllString(text, "$1")
	if err := os.WriteFile(path, []byte(on), 0o644); err != nil {
		t.Fatal(err)
	}
	vals, _, err := readConfig(dir, ks)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if v := vals[k.env]; !v.set || v.v != k.def {
			t.Errorf("uncommented %s = %q (set %v), want the default %q", k.env, v.v, v.set, k.def)
		}
	}
}

func TestWithin(t *testing.T) {
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(top, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{filepath.Join(top, "roadmap"), true},
		{filepath.Join(top, "a", "b", "c"), true},
		{top, true},
		{filepath.Join(link, "new", "dir"), true},
		{filepath.Join(top, "..", "x"), false},
		{filepath.Join(top+"x", "roadmap"), false},
	} {
		if got := pathWithin(top, c.path); got != c.want {
			t.Errorf("pathWithin(%s, %s) = %v, want %v", top, c.path, got, c.want)
		}
	}
}
