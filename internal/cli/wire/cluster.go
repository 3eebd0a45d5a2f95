package wire

import (
	"context"
	"errors"

	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Cluster runs agents as Kubernetes Jobs (AGENT_RUNNER=kubernetes,
// docs/cluster.md). The command tree's root injects the one
// implementation (internal/cli/kubewire) into every command, so wire,
// cmdutil and the verbs that never start a runner do not link k8s.io
// (issue 23: the suite's link cost).
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

// remote is the engine's runner of agents elsewhere: nil for
// AGENT_RUNNER=local, else the cluster's.
func remote(s *settings.Settings, c Cluster) (func(context.Context, *worktree.Client, state.Layout) (work.Remote, func(), error), error) {
	if s.AgentRunner != "kubernetes" {
		return nil, nil
	}
	if c == nil {
		return nil, ErrNoCluster
	}
	return c.Remote(s), nil
}

// ProbeCluster is doctor's check of AGENT_RUNNER=kubernetes through c
// (ErrNoCluster for the cluster when c is nil).
func ProbeCluster(ctx context.Context, c Cluster, s *settings.Settings, git *worktree.Client) (cluster, remote error) {
	if c == nil {
		return ErrNoCluster, nil
	}
	return c.Probe(ctx, s, git)
}
