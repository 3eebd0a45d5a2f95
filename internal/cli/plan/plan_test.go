package plan

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args   []string
		format string
		exit   int
	}{
		{[]string{"x", "--format", "dot"}, "dot", 0},
		{nil, "text", 0},
		{[]string{"--format", "yaml"}, "", cmdutil.ExitUsage},
		{[]string{"a", "b"}, "", cmdutil.ExitUsage},
	} {
		var got *Options
		cmd := NewCmd(func(_ context.Context, o *Options) error { got = o; return nil })
		err := cmd.Run(context.Background(), &cmdutil.App{S: &cmdutil.Streams{}, Cwd: dir}, c.args)
		if code := cmdutil.ExitCode(err, nil); code != c.exit {
			t.Errorf("%q: exit %d (%v), want %d", c.args, code, err, c.exit)
			continue
		}
		if c.exit == 0 && (got.Format != c.format || filepath.Dir(got.Dir) != dir) {
			t.Errorf("%q: options %+v", c.args, got)
		}
	}
}
