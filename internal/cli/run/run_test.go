package run

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/settings"
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

// queue alone announces its changed retry defaults (issue 23: it used to
// repair 3 times and retry passing API errors 3 times) until the user
// sets either knob; the note names the counts the one policy gives. The
// root package's TestQueueRetriesAsRunDoes (CLAUDOPILOT_SOAK=1) sees the
// same note from a driver run.
func TestQueuePolicyNoteUntilSet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "note: the queue retries as run does: 2 repair runs per issue (MAX_SUPERVISOR_ATTEMPTS_PER_PHASE, was 3) and 10 retries of passing API errors (TRANSIENT_API_MAX_RETRIES, was 3)"},
		{map[string]string{"MAX_SUPERVISOR_ATTEMPTS_PER_PHASE": "3"}, ""},
		{map[string]string{"TRANSIENT_API_MAX_RETRIES": "3"}, ""},
	} {
		s, err := settings.Resolve(settings.Input{Scope: settings.Queue, Env: c.env, Issues: true})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		noteQueuePolicy(&cmdutil.App{S: &cmdutil.Streams{Err: &out}, Env: c.env}, s)
		if c.want == "" && out.Len() != 0 || c.want != "" && !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: note %q, want %q", c.env, out.String(), c.want)
		}
	}
}
