package proc

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// A supervisor's prompt goes to its stdin from a file that has no name:
// it was a temp file in TMPDIR unlinked just after it was made, which a
// driver killed in between left there.
func TestPromptInputHasNoName(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	f, err := promptInput(Spec{Prompt: []byte("fix it\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "fix it\n" {
		t.Errorf("stdin holds %q, %v", b, err)
	}
	where, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(where, "/memfd:") {
		t.Errorf("the prompt's file is %s, want a memfd", where)
	}
}
