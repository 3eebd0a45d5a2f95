// Package kube runs one agent attempt as one Kubernetes Job
// (AGENT_RUNNER=kubernetes). It is a runner and nothing more: the
// scheduler, lanes, pacer, supervisor policy, review gate and landing do
// not know it exists.
//
// The attempt's start is pushed to K8S_REMOTE (a git remote the cluster
// and the driver both reach); an init container fetches it; the agent
// container runs the agent with the phase prompt and the contract
// environment, pushes what it made as claudopilot/attempt/<job> and ends
// with a small result JSON in its termination message. The driver then
// fetches that branch and hands it to package work, which applies the
// same checks as for a local agent: the pod's word is never taken.
//
// One pair of shared informers (Jobs and Pods of this driver instance)
// watches every attempt; client-go's reflector lists again when a watch
// drops. The Job controller does what it is good at: the deadline
// (activeDeadlineSeconds from AGENT_TIMEOUT), no retries (backoffLimit 0:
// the supervisor owns retries), and a new pod after an eviction (a
// podFailurePolicy that ignores DisruptionTarget), which is no attempt.
// The driver keeps what only it can tell: silence (STUCK_TIMEOUT), a pod
// Pending past K8S_PENDING_SECONDS (unschedulable), OOMKilled (oom).
package kube
