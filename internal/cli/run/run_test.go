package run

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
)

// run's flags, parsed through runF (gh's shape): what each says lands in
// Options, and misuse ends before anything runs, with exit 64.
func TestParseFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want func(*Options) bool
		exit int
	}{
		{[]string{"plans", "--json", "--keep-going", "1"}, func(o *Options) bool {
			return o.Dir == filepath.Join(dir, "plans") && o.JSON && !o.Issues && o.Flags.Changed("keep-going")
		}, 0},
		{[]string{"--issues", "--once"}, func(o *Options) bool { return o.Issues && o.Once && o.Dir == filepath.Join(dir, "roadmap") }, 0},
		{[]string{"--once"}, nil, cmdutil.ExitUsage},
		{[]string{"--max-parallel", "0"}, nil, cmdutil.ExitUsage},
		{[]string{"a", "b"}, nil, cmdutil.ExitUsage},
		{[]string{"--bogus"}, nil, cmdutil.ExitUsage},
	} {
		var got *Options
		cmd := NewCmd(func(_ context.Context, o *Options) error { got = o; return nil })
		a := &cmdutil.App{S: &cmdutil.Streams{}, Env: map[string]string{}, Cwd: dir}
		err := cmd.Run(context.Background(), a, c.args)
		if code := cmdutil.ExitCode(err, nil); code != c.exit {
			t.Errorf("%q: exit %d (%v), want %d", c.args, code, err, c.exit)
			continue
		}
		if c.want != nil && (got == nil || got.App != a || !c.want(got)) {
			t.Errorf("%q: options %+v", c.args, got)
		}
		if c.exit != 0 && got != nil {
			t.Errorf("%q: ran despite misuse", c.args)
		}
	}
}
