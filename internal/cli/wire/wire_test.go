package wire

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/engine"
	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// The queue's configuration comes from the one model: its labels'
// defaults are the queue's own, the supervisor is the agent unless set,
// its poll is its own default. Its base is the run's (engine.Open), its
// slots and retry policy the scheduler's: none of them is the queue's.
func TestQueueFromSettings(t *testing.T) {
	t.Parallel()
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Env: map[string]string{"GH_REPO": "acme/widgets", "AGENT_CMD": "agent-x", "MAX_PARALLEL": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	env := Env{"GITHUB_TOKEN": "tok", "PATH": "/bin"}
	c, g, err := Queue(context.Background(), s, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Labels != issues.DefaultLabels {
		t.Errorf("labels %+v, want the queue's defaults %+v", c.Labels, issues.DefaultLabels)
	}
	if c.Base != "" || c.Agent != "agent-x" || c.Supervisor != "agent-x" || c.Poll != time.Minute || c.Token != "tok" {
		t.Errorf("queue config %+v", c)
	}
	if g.Owner != "acme" || g.Repo != "widgets" || g.Token != "tok" {
		t.Errorf("GitHub config %+v", g)
	}
	// No token: misuse, named as such.
	_, _, err = Queue(context.Background(), s, nil, Env{})
	var se *settings.Error
	if !errors.As(err, &se) || se.Unreadable() {
		t.Errorf("no token: %v, want a settings problem", err)
	}
}

func TestRepoFromRemote(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]string{
		"https://github.com/acme/widgets.git":    "acme/widgets",
		"git@github.com:acme/widgets.git":        "acme/widgets",
		"ssh://git@ghe.example.com/acme/widgets": "acme/widgets",
		"/srv/git/widgets.git":                   "",
		"file:///srv/git/acme/widgets.git":       "",
	} {
		if got := RepoFromRemote(u); got != want {
			t.Errorf("RepoFromRemote(%q) = %q, want %q", u, got, want)
		}
	}
}

// One retry policy whatever the command (issue 23: queue hard-coded 3
// repair runs and 3 transient retries, run --issues took 2 and 10): the
// engine a run and a queue alone (no roadmap) derive from the one settings
// model carries the same MAX_SUPERVISOR_ATTEMPTS_PER_PHASE and
// TRANSIENT_API_MAX_RETRIES, by default and when set.
func TestOneRetryPolicy(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		// git 2.38+ is a stated requirement (README; .ci/run installs it):
		// without it only this machine is unfit, as for the other git tests.
		t.Skip("no git")
	}
	dir, git := repo(t)
	for _, c := range []struct {
		env              map[string]string
		super, transient int
	}{
		{env: map[string]string{}, super: 2, transient: 10},
		{env: map[string]string{"MAX_SUPERVISOR_ATTEMPTS_PER_PHASE": "4", "TRANSIENT_API_MAX_RETRIES": "6"}, super: 4, transient: 6},
	} {
		env := Env{"PATH": os.Getenv("PATH"), "AGENT_CMD": "true", "SANDBOX": "off", "BASE_BRANCH": "main", "GH_REPO": "acme/widgets"}
		for k, v := range c.env {
			env[k] = v
		}
		for _, scope := range []settings.Scope{settings.Run, settings.Queue} {
			s, err := settings.Resolve(settings.Input{Scope: scope, Env: env, Top: dir})
			if err != nil {
				t.Fatal(err)
			}
			for _, alone := range []bool{false, true} {
				e, err := Engine(context.Background(), s, Run{Git: git, Env: env, Alone: alone})
				if err != nil {
					t.Fatalf("scope %v, alone %v: %v", scope, alone, err)
				}
				if e.MaxSuper != c.super || e.Transient != c.transient {
					t.Errorf("%v: scope %v, alone %v: %d repair runs and %d transient retries, want %d and %d",
						c.env, scope, alone, e.MaxSuper, e.Transient, c.super, c.transient)
				}
			}
		}
	}
}

// repo is a new repository with one commit on main, and its client.
func repo(t *testing.T) (string, *worktree.Client) {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git, err := worktree.Open(context.Background(), dir, []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"})
	if err != nil {
		t.Fatal(err)
	}
	return dir, git
}

// A queue alone takes LANES as run does (one engine): each lane with its
// command, concurrency and fallback, and the pacer's settings, the same
// for run --issues and for queue without a roadmap, not the lanes'
// commands on MAX_PARALLEL's slots. The scheduler's lane rules are its own
// tests' (TestOneSlotCountInEveryMode with LANES, TestLanePinnedWaitsForItsLane,
// TestLaneFallbackOnRateLimit); the root package's TestQueueLaneLabelIsTheLanes
// (CLAUDOPILOT_SOAK=1) runs them end to end.
func TestQueueAloneTakesTheLanes(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		// git 2.38+ is a stated requirement (README; .ci/run installs it):
		// without it only this machine is unfit, as for the other git tests.
		t.Skip("no git")
	}
	dir, git := repo(t)
	env := Env{"PATH": os.Getenv("PATH"), "AGENT_CMD": "true", "SANDBOX": "off", "BASE_BRANCH": "main", "GH_REPO": "acme/widgets",
		"MAX_PARALLEL": "1", "LANES": "claude codex", "LANE_CLAUDE_CMD": "true claude", "LANE_CLAUDE_CONCURRENCY": "1",
		"LANE_CODEX_CMD": "true codex", "LANE_CODEX_CONCURRENCY": "2", "LANE_CODEX_FALLBACK": "claude", "RESOURCE_PROBE_CMD": "echo 64 0 640000"}
	var got []engine.Lanes
	for _, c := range []struct {
		scope settings.Scope
		alone bool
	}{{settings.Run, false}, {settings.Queue, true}} {
		s, err := settings.Resolve(settings.Input{Scope: c.scope, Env: env, Top: dir, Issues: true})
		if err != nil {
			t.Fatal(err)
		}
		e, err := Engine(context.Background(), s, Run{Git: git, Env: env, Alone: c.alone})
		if err != nil {
			t.Fatalf("scope %v, alone %v: %v", c.scope, c.alone, err)
		}
		got = append(got, e.Lanes)
	}
	q := got[1]
	if len(q.Lanes) != 2 || q.Lanes[0].ID != "claude" || q.Lanes[0].Cmd != "true claude" || q.Lanes[1].ID != "codex" ||
		q.Lanes[1].Cmd != "true codex" || q.Lanes[1].Concurrency != 2 || q.Lanes[1].Fallback != "claude" || q.Settings.ProbeCmd != "echo 64 0 640000" {
		t.Errorf("queue alone's lanes: %+v", q)
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Errorf("run --issues's lanes and the queue alone's differ:\n%+v\n%+v", got[0], got[1])
	}
}

// fakeCluster is a Kubernetes runner that records being asked.
type fakeCluster struct{ asked *int }

func (f fakeCluster) Remote(*settings.Settings) func(context.Context, *worktree.Client, state.Layout) (work.Remote, func(), error) {
	*f.asked++
	return func(context.Context, *worktree.Client, state.Layout) (work.Remote, func(), error) {
		return nil, func() {}, nil
	}
}

func (f fakeCluster) Probe(context.Context, *settings.Settings, *worktree.Client) (error, error) {
	*f.asked++
	return nil, nil
}

// The Kubernetes runner is the one the root injects (wire.Cluster): used
// under AGENT_RUNNER=kubernetes only, and a run without one refuses
// rather than running the agents here.
func TestRemoteIsTheInjectedCluster(t *testing.T) {
	t.Parallel()
	kubeEnv := map[string]string{"AGENT_RUNNER": "kubernetes", "K8S_NAMESPACE": "a", "K8S_IMAGE": "i", "K8S_REMOTE": "r"}
	kubeSet, err := settings.Resolve(settings.Input{Scope: settings.Run, Top: t.TempDir(), Env: kubeEnv})
	if err != nil {
		t.Fatal(err)
	}
	local, err := settings.Resolve(settings.Input{Scope: settings.Run, Top: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	if r, err := remote(local, fakeCluster{&asked}); r != nil || err != nil || asked != 0 {
		t.Errorf("AGENT_RUNNER=local: remote %v, err %v, cluster asked %d times", r != nil, err, asked)
	}
	if r, err := remote(kubeSet, fakeCluster{&asked}); r == nil || err != nil || asked != 1 {
		t.Errorf("AGENT_RUNNER=kubernetes: remote %v, err %v, cluster asked %d times", r != nil, err, asked)
	}
	if r, err := remote(kubeSet, nil); r != nil || !errors.Is(err, ErrNoCluster) {
		t.Errorf("no cluster injected: remote %v, err %v, want ErrNoCluster", r != nil, err)
	}
	if c, _ := ProbeCluster(context.Background(), nil, kubeSet, nil); !errors.Is(c, ErrNoCluster) {
		t.Errorf("doctor without a cluster: %v, want ErrNoCluster", c)
	}
	if c, r := ProbeCluster(context.Background(), fakeCluster{&asked}, kubeSet, nil); c != nil || r != nil || asked != 2 {
		t.Errorf("doctor's probe: %v %v, cluster asked %d times", c, r, asked)
	}
}
