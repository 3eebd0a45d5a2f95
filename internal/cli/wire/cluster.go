package wire

import (
	"context"

	"github.com/claudopilot/claudopilot/internal/cli/cmdutil"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Cluster runs agents as Kubernetes Jobs (AGENT_RUNNER=kubernetes):
// cmdutil.Cluster, which the command tree's root injects (kubewire).
type Cluster = cmdutil.Cluster

// ErrNoCluster is cmdutil.ErrNoCluster: no Kubernetes runner was injected.
var ErrNoCluster = cmdutil.ErrNoCluster

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
