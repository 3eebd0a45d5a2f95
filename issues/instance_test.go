package issues

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStableInstance: the clone's instance name is made once and read
// back by every later run; a damaged file gets a new name.
func TestStableInstance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "instance")
	first, err := StableInstance(path)
	if err != nil || !validInstance(first) {
		t.Fatalf("first: %q, %v", first, err)
	}
	again, err := StableInstance(path)
	if err != nil || again != first {
		t.Fatalf("again: %q, %v; want %q", again, err, first)
	}
	if err := os.WriteFile(path, []byte("two words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, err := StableInstance(path)
	if err != nil || fresh == first || !validInstance(fresh) {
		t.Fatalf("after damage: %q, %v", fresh, err)
	}
	if kept, _ := StableInstance(path); kept != fresh {
		t.Fatalf("the new name was not kept: %q, want %q", kept, fresh)
	}
}
