// Package kubewire is the Kubernetes runner's wiring (AGENT_RUNNER=
// kubernetes, docs/cluster.md): the one package of the command tree that
// imports package kube. The command tree's root injects it into every
// command (cmdutil.App.Cluster), so only the binary and the packages that
// start a runner link k8s.io; wire, cmdutil and the verbs stay light to
// build and to link (issue 23; internal/funclen's TestK8sOnlyWhereARunnerStarts).
package kubewire

import (
	"context"
	"fmt"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/kube"
	"github.com/claudopilot/claudopilot/settings"
	"github.com/claudopilot/claudopilot/state"
	"github.com/claudopilot/claudopilot/work"
	"github.com/claudopilot/claudopilot/worktree"
)

// Cluster is the Kubernetes runner wire.Engine and doctor use
// (wire.Cluster).
type Cluster struct{}

// Remote is the engine's runner of agents as Kubernetes Jobs, which carry
// the repository and the clone's stable instance name.
func (Cluster) Remote(s *settings.Settings) func(context.Context, *worktree.Client, state.Layout) (work.Remote, func(), error) {
	k, cfg := s.K8s, kubeConfig(s)
	return func(ctx context.Context, git *worktree.Client, l state.Layout) (work.Remote, func(), error) {
		inst, err := issues.StableInstance(l.InstancePath())
		if err != nil {
			return nil, nil, err
		}
		cfg.Repository, cfg.Instance = git.Dir, inst
		d, stop, err := kube.Open(ctx, cfg, k.Kubeconfig, k.Context, git)
		if err != nil {
			return nil, nil, err
		}
		// Orphans of earlier runs go; what a killed driver's attempts
		// left is kept for the resumed attempts to adopt or collect.
		if _, err := d.Sweep(ctx, func(phase string) bool { return work.AttemptInFlight(l, phase) }); err != nil {
			stop()
			return nil, nil, err
		}
		return kube.Runner{Driver: d}, stop, nil
	}
}

// kubeConfig is the driver's configuration from the K8S_* settings.
func kubeConfig(s *settings.Settings) kube.Config {
	k := s.K8s
	return kube.Config{
		Namespace: k.Namespace, Image: k.Image, Remote: k.Remote, Secret: k.Secret, GitSecret: k.GitSecret,
		ServiceAccount: k.ServiceAccount, RuntimeClass: k.RuntimeClass, CPU: k.CPU, Memory: k.Memory, SessionClaim: k.SessionClaim,
		Pending: k.Pending, StuckTimeout: s.StuckTimeout, AgentTimeout: s.AgentTimeout,
	}
}

// Probe is doctor's check of AGENT_RUNNER=kubernetes: the API server lets
// the driver list Jobs in K8S_NAMESPACE (kube.Probe), and the driver can
// read K8S_REMOTE. Nothing is changed on either.
func (Cluster) Probe(ctx context.Context, s *settings.Settings, git *worktree.Client) (cluster, remote error) {
	cluster = kube.Probe(ctx, kubeConfig(s), s.K8s.Kubeconfig, s.K8s.Context)
	if git != nil {
		if _, err := git.Git(ctx, "ls-remote", "--heads", s.K8s.Remote, "refs/heads/"+kube.AttemptPrefix+"*"); err != nil {
			remote = fmt.Errorf("K8S_REMOTE %s cannot be read: %w", s.K8s.Remote, err)
		}
	}
	return cluster, remote
}
