package cmdutil

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/claudopilot/claudopilot/proc"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Env is the process environment as given, as a map (nothing below main
// reads os.Getenv). It is declared here, not in wire (which names it
// wire.Env), so that cmdutil and the commands that never build an engine
// do not link the engine and the queue (issue 23: the suite's link cost).
type Env map[string]string

// EnvMap reads "K=V" lines.
func EnvMap(environ []string) Env {
	m := make(Env, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Driver is the environment for the driver's own git commands and the
// agents it starts: the caller's, marked so a restarted driver finds this
// one's processes (work.Reap).
func (e Env) Driver() []string {
	out := make([]string, 0, len(e)+1)
	for _, k := range slices.Sorted(maps.Keys(e)) {
		out = append(out, k+"="+e[k])
	}
	return append(out, proc.Mark("git"))
}

// Cluster runs agents as Kubernetes Jobs (AGENT_RUNNER=kubernetes,
// docs/cluster.md). The command tree's root injects the one
// implementation (internal/cli/kubewire) into every command, so wire,
// cmdutil and the verbs that never start a runner do not link k8s.io
// (issue 23: the suite's link cost). wire.Cluster is this type.
type Cluster interface {
	// Remote opens the engine's runner of agents in the cluster
	// (engine.Settings.Remote).
	Remote(s *settings.Settings) func(context.Context, *worktree.Client, state.Layout) (work.Remote, func(), error)
	// Probe is doctor's check: the cluster answers the driver's
	// credentials, and K8S_REMOTE can be read.
	Probe(ctx context.Context, s *settings.Settings, git *worktree.Client) (cluster, remote error)
}

// ErrNoCluster is what AGENT_RUNNER=kubernetes meets where no Kubernetes
// runner was injected (a command run without the command tree's root):
// the run refuses rather than running agents here.
var ErrNoCluster = errors.New("AGENT_RUNNER=kubernetes: no Kubernetes runner is wired into this command (internal/cli/kubewire)")
