package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// issue-pilot.conf is read as bash would source it (several assignments
// on a line, ; between them, $HOME), where issue-pilot reads it: the
// repository's, else ISSUE_PILOT_CONF or $ISSUE_PILOT_HOME/issue-pilot.conf.
// issue-pilot's lane settings keep their ids as written; its renamed
// settings are read with one note each; its settings with no equivalent
// get a note per line; a line that is nobody's setting is an error.
// (The lines are issue-pilot's own, from its test.sh and
// issue-pilot.conf.example, kasbly/issue-pilot.)
func TestIssuePilotConf(t *testing.T) {
	t.Parallel()
	top, home := t.TempDir(), t.TempDir()
	writeFile(t, home, ".claude-work/.credentials.json", "{}")
	conf := `GH_REPO=x/y; READY_LABEL=r; CLAIM_LABEL=c
REFILL_THRESHOLD=10; SCANNER_CMD=true; POLL_SECS=1; BATCH_SIZE=25
LANES="t codex"
LANE_t_LABEL="T"; LANE_t_MODE="window"; LANE_t_CMD=true
LANE_t_USAGE_CMD="echo 42 302400" LANE_t_MIN_CONCURRENCY=2
LANE_t_CREDENTIALS="$HOME/.claude-work/.credentials.json"
LANE_codex_MODE="always"
LANE_codex_CONCURRENCY=3
LANE_codex_CMD='codex exec --dangerously-bypass-approvals-and-sandbox "$(envsubst < examples/goal.md)"'
JANITOR_STALE_HOURS=12
MERGE_METHOD="--squash"
RESOURCE_PROBE_CMD='echo "32 0 64000"'
RESOURCE_PROBE_CMD="echo 8 6 64000"
CAMPAIGN_MAX_ISSUES=10
NOTIFY_CMD='curl -s -d "$MSG" ntfy.sh/my-topic'
`
	writeFile(t, top, IssuePilotConf, conf)
	env := map[string]string{"HOME": home}
	s, err := Resolve(Input{Scope: Queue, Top: top, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if s.Repo != "x/y" || s.Labels.Ready != "r" || s.Labels.Claim != "c" || s.BatchSize != 25 || s.Poll != time.Second || s.ClaimStale != 12*time.Hour || s.MergeMethod != "squash" ||
		s.ProbeCmd != "echo 8 6 64000" || s.Notify != `curl -s -d "$MSG" ntfy.sh/my-topic` {
		t.Errorf("resolved repo %q labels %+v batch %d poll %v stale %v merge %q probe %q notify %q", s.Repo, s.Labels, s.BatchSize, s.Poll, s.ClaimStale, s.MergeMethod, s.ProbeCmd, s.Notify)
	}
	if s.RefillThreshold != 10 || s.ScannerCmd != "true" {
		t.Errorf("issue-pilot's refill: REFILL_THRESHOLD %d, SCANNER_CMD %q", s.RefillThreshold, s.ScannerCmd)
	}
	if len(s.Lanes) != 2 {
		t.Fatalf("lanes %+v", s.Lanes)
	}
	lt, lc := s.Lanes[0], s.Lanes[1]
	if lt.Label != "T" || lt.Cmd != "true" || lt.UsageCmd != "echo 42 302400" || lt.MinConcurrency != 2 || lt.Credentials != filepath.Join(home, ".claude-work") {
		t.Errorf("lane t: %+v", lt)
	}
	if lc.Concurrency != 3 || lc.Mode != "always" || !strings.HasPrefix(lc.Cmd, "codex exec") || lc.Label != "codex" {
		t.Errorf("lane codex: %+v", lc)
	}
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, n.String())
	}
	for _, want := range []string{
		"issue-pilot.conf:2: POLL_SECS (issue-pilot's) is read as POLL_SECONDS=1",
		"issue-pilot.conf:10: JANITOR_STALE_HOURS (issue-pilot's) is read as CLAIM_STALE_HOURS=12",
		"issue-pilot.conf:11: MERGE_METHOD=--squash (issue-pilot's) is read as MERGE_METHOD=squash",
		"issue-pilot.conf:14: CAMPAIGN_MAX_ISSUES is issue-pilot's and has no effect here",
	} {
		if !strings.Contains(strings.Join(notes, "\n"), want) {
			t.Errorf("no note %q in\n%s", want, strings.Join(notes, "\n"))
		}
	}
	if s.Source("POLL_SECONDS").String() != "issue-pilot.conf:2" || len(s.Read) != 1 || s.Read[0] != IssuePilotConf {
		t.Errorf("POLL_SECONDS from %s; read %v", s.Source("POLL_SECONDS"), s.Read)
	}

	// issue-pilot's own place for it: ISSUE_PILOT_HOME (or _CONF), outside
	// the repository; named there, it must exist.
	ipHome := t.TempDir()
	writeFile(t, ipHome, IssuePilotConf, "POLL_SECS=7\n")
	s, err = Resolve(Input{Scope: Queue, Top: top, Env: map[string]string{"ISSUE_PILOT_HOME": ipHome}})
	if err != nil || s.Poll != 7*time.Second || s.Source("POLL_SECONDS").String() != filepath.Join(ipHome, IssuePilotConf)+":1" {
		t.Errorf("ISSUE_PILOT_HOME: poll %v from %s (%v)", s.Poll, s.Source("POLL_SECONDS"), err)
	}
	_, err = Resolve(Input{Scope: Queue, Top: top, Env: map[string]string{"ISSUE_PILOT_CONF": filepath.Join(ipHome, "nope.conf")}})
	if err == nil || !strings.Contains(err.Error(), "ISSUE_PILOT_CONF names "+filepath.Join(ipHome, "nope.conf")+", which cannot be read") {
		t.Errorf("a missing ISSUE_PILOT_CONF: %v", err)
	}
}

// A LANE_ setting must name a lane of LANES and one of its keys, as
// written or upper-cased: anything else is an error naming where it was
// set, with the closest name; both forms set to different values is an
// error too.
func TestLaneKeys(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, ConfigFile, "LANES=claude codex-max\nLANE_claude_CMD=c\nLANE_CODEX_MAX_CMD=x\nLANE_claude_CONCURENCY=4\nLANE_cluade_MODE=window\n")
	_, err := Resolve(Input{Scope: Run, Top: top, Env: map[string]string{"LANE_codex_max_MODEL": "m", "LANE_claude_FALLBACK": "codex-max", "LANE_codex-max_MODE": "x"}})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{
		"claudopilot.config:4: unknown setting LANE_claude_CONCURENCY (did you mean LANE_claude_CONCURRENCY?)",
		"claudopilot.config:5: unknown setting LANE_cluade_MODE (did you mean LANE_claude_MODE?)",
		"unknown setting LANE_codex-max_MODE (did you mean LANE_codex_max_MODE?) (from the environment)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "LANE_codex_max_MODEL") || strings.Contains(msg, "LANE_claude_FALLBACK") || strings.Contains(msg, "LANE_CODEX_MAX_CMD") {
		t.Errorf("a valid lane setting refused:\n%s", msg)
	}
	writeFile(t, top, ConfigFile, "LANES=t\nLANE_t_CONCURRENCY=4\nLANE_T_CONCURRENCY=5\nLANE_t_CMD=x\n")
	if _, err := Resolve(Input{Scope: Run, Top: top}); err == nil || !strings.Contains(err.Error(), "LANE_t_CONCURRENCY and LANE_T_CONCURRENCY are both set, to different values") {
		t.Errorf("both forms: %v", err)
	}
	writeFile(t, top, ConfigFile, "LANE_t_CMD=x\n")
	if _, err := Resolve(Input{Scope: Run, Top: top}); err == nil || !strings.Contains(err.Error(), "unknown setting LANE_t_CMD: LANES is not set") {
		t.Errorf("no LANES: %v", err)
	}
}

// Other tools' names in the environment: read below the knob's own name,
// with a note; POLL_MS is milliseconds.
func TestRenamedInTheEnvironment(t *testing.T) {
	t.Parallel()
	s, err := Resolve(Input{Scope: Queue, Env: map[string]string{"POLL_MS": "1500", "JANITOR_STALE_HOURS": "3", "MERGE_METHOD": "--rebase"}})
	if err != nil || s.Poll != 1500*time.Millisecond || s.ClaimStale != 3*time.Hour || s.MergeMethod != "rebase" {
		t.Fatalf("poll %v stale %v merge %q (%v)", s.Poll, s.ClaimStale, s.MergeMethod, err)
	}
	want := []string{
		"the environment (POLL_MS): POLL_MS=1500 (issue-orchestrator's) is read as POLL_SECONDS=1.5",
		"the environment (JANITOR_STALE_HOURS): JANITOR_STALE_HOURS=3 (issue-pilot's) is read as CLAIM_STALE_HOURS=3",
		"the environment: MERGE_METHOD=--rebase (issue-pilot's) is read as MERGE_METHOD=rebase",
	}
	if len(s.Notes) != len(want) {
		t.Errorf("notes %v", s.Notes)
	}
	for i, n := range s.Notes {
		if i < len(want) && n.String() != want[i] {
			t.Errorf("note %q, want %q", n, want[i])
		}
	}
	s, _ = Resolve(Input{Scope: Queue, Env: map[string]string{"POLL_MS": "1500", "POLL_SECONDS": "9"}})
	if s.Poll != 9*time.Second {
		t.Errorf("the knob's own name loses to another tool's: %v", s.Poll)
	}
	if _, err := Resolve(Input{Scope: Queue, Env: map[string]string{"POLL_MS": "soon"}}); err == nil || !strings.Contains(err.Error(), `POLL_MS="soon" from the environment (POLL_MS): want milliseconds`) {
		t.Errorf("bad POLL_MS: %v", err)
	}
}

// ROADMAP_DIR and MANIFEST name the roadmap folder (from the top); the
// prompt files they name are read, and protected with Claudopilot v0.x's
// prompt folder and issue-pilot.conf.
func TestPlaces(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	writeFile(t, top, "claudopilot.config.sh", "export ROADMAP_DIR=\"plans\"\nexport MANIFEST=\"$REPO_ROOT/plans/EXECUTION-MANIFEST.md\"\nexport WORKER_PROJECT_PROMPT=\"$REPO_ROOT/claudopilot/prompts/worker.project.md\"\n")
	writeFile(t, top, "claudopilot/prompts/worker.project.md", "rules\n")
	writeFile(t, top, "claudopilot/prompts/worker.md", "v0 prompt\n")
	if dir, err := RoadmapDir(nil, top); err != nil || dir != filepath.Join(top, "plans") {
		t.Errorf("RoadmapDir = %q, %v", dir, err)
	}
	if dir, err := RoadmapDir(map[string]string{"ROADMAP_DIR": "other"}, top); err == nil || dir != "" {
		t.Errorf("ROADMAP_DIR and MANIFEST apart: %q, %v", dir, err)
	}
	if dir, err := RoadmapDir(map[string]string{"MANIFEST": "x/MANIFEST.md", "ROADMAP_DIR": ""}, top); err == nil || !strings.Contains(err.Error(), "the manifest is a roadmap folder's EXECUTION-MANIFEST.md") {
		t.Errorf("MANIFEST not named EXECUTION-MANIFEST.md: %q, %v", dir, err)
	}
	if _, err := Resolve(Input{Scope: Run, Top: top, Env: map[string]string{"ISSUE_PILOT_CONF": "ops/issue-pilot.conf"}}); err == nil || !strings.Contains(err.Error(), "ISSUE_PILOT_CONF names "+filepath.Join(top, "ops/issue-pilot.conf")) {
		t.Errorf("missing conf: %v", err)
	}
	writeFile(t, top, "ops/issue-pilot.conf", "\n")
	s, err := Resolve(Input{Scope: Run, Top: top, Env: map[string]string{"ISSUE_PILOT_CONF": "ops/issue-pilot.conf"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.PromptFiles.WorkerProject != filepath.Join(top, "claudopilot/prompts/worker.project.md") || s.V0Prompts != filepath.Join(top, V0PromptDir) {
		t.Errorf("prompt files %+v, v0 %q", s.PromptFiles, s.V0Prompts)
	}
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0].String(), "claudopilot/prompts/worker.md: PROMPT_FILE's default (Claudopilot v0.x's) is read as the worker prompt") {
		t.Errorf("notes %v", s.Notes)
	}
	ps := s.Protected(top)
	for _, p := range []string{IssuePilotConf, "ops/issue-pilot.conf"} {
		if len(ps.Check([]string{p}, nil)) != 1 {
			t.Errorf("%s is not protected", p)
		}
	}
	writeFile(t, top, "claudopilot.config.sh", "export PROMPT_FILE=prompts/mine.md\n")
	if _, err := Resolve(Input{Scope: Run, Top: top}); err == nil || !strings.Contains(err.Error(), `PROMPT_FILE="prompts/mine.md" from claudopilot.config.sh:1`) {
		t.Errorf("a missing PROMPT_FILE: %v", err)
	}
	if err := os.Remove(filepath.Join(top, "claudopilot.config.sh")); err != nil {
		t.Fatal(err)
	}
}

// A line of several assignments is taken whole or not at all; a command
// after them needs a shell.
func TestShellLineOfAssignments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		want map[string]string
		err  string
	}{
		{`A=1; B="x y"  C='z'  # c`, map[string]string{"A": "1", "B": "x y", "C": "z"}, ""},
		{`export A=1; export B=2; export A`, map[string]string{"A": "1", "B": "2"}, ""},
		{`A="${A:-3}" B=4`, map[string]string{"A": "3", "B": "4"}, ""},
		{`A=1; touch x`, nil, `after A=…, bash would run "touch"`},
		{`A=1 B=2 make`, nil, `B needs a shell: an unquoted space (bash would run "make" with B set for it)`},
		{`A=$HOME/x`, map[string]string{"A": "/home/u/x"}, ""},
		{`A=1|cat`, nil, `an unquoted "|"`},
	} {
		ents := shellLine(c.line, 1, "/top", "/home/u")
		got := map[string]string{}
		errs := ""
		for _, e := range ents {
			if e.err != "" {
				errs += e.err
				continue
			}
			got[e.key] = e.val
		}
		if c.err != "" {
			if !strings.Contains(errs, c.err) || len(got) != 0 {
				t.Errorf("%s: %v %q, want the error %q", c.line, got, errs, c.err)
			}
			continue
		}
		if errs != "" || len(got) != len(c.want) {
			t.Errorf("%s: %v %q, want %v", c.line, got, errs, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", c.line, k, got[k], v)
			}
		}
	}
}

// TestIssuePilotScriptSettings: every setting kasbly/issue-pilot's scripts
// read from its file (bin/*.sh at eb139b1, `${NAME:-default}`), beyond
// those its issue-pilot.conf.example lists, is taken or noted, never an
// error: a file that worked there must not stop a run here.
func TestIssuePilotScriptSettings(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	keys := []string{"ANNOUNCE_FROM", "CLAUDE_CREDENTIALS", "CODEX_HOME", "CODEX_SESSIONS", "CODEX_SNAPSHOT_MAX_AGE",
		"FORCE_MAX_DRIFT", "FORCE_MAX_USED", "PROMOTE_MAX_DRIFT", "PROMOTE_MAX_ROUNDS", "PROMOTE_ROUND_WAIT",
		"SCANNER_DIMENSION", "SCANNER_EFFORT", "SCANNER_FALLBACK_MAX_USED", "SCANNER_GUARD_DEFAULT_TYPE", "SCANNER_MODEL"}
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=1\n")
	}
	writeFile(t, top, IssuePilotConf, b.String())
	s, err := Resolve(Input{Scope: Queue, Top: top})
	if err != nil {
		t.Fatalf("issue-pilot's script settings refused: %v", err)
	}
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, n.String())
	}
	for i, k := range keys {
		if want := fmt.Sprintf("issue-pilot.conf:%d: %s is issue-pilot's and has no effect here: ", i+1, k); !strings.Contains(strings.Join(notes, "\n"), want) {
			t.Errorf("no note %q in\n%s", want, strings.Join(notes, "\n"))
		}
	}
}
