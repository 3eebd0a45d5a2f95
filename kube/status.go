package kube

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// cond is the Job's condition of type t when it is true.
func cond(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if c := &j.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// finished: the Job controller says the Job is over.
func finished(j *batchv1.Job) bool {
	return cond(j, batchv1.JobComplete) != nil || cond(j, batchv1.JobFailed) != nil
}

func jobMessage(j *batchv1.Job) string {
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete} {
		if c := cond(j, t); c != nil {
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return "no reason given"
}

// disrupted: the pod failed because the cluster took it away (eviction,
// preemption, a drained node), not because of the agent.
func disrupted(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodFailed {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// condMessage is the reason and message of the pod's condition t
// ("" when it has none).
func condMessage(p *corev1.Pod, t corev1.PodConditionType) string {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return ""
}

// started: the named container runs or ran.
func started(p *corev1.Pod, name string) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Running != nil || s.State.Terminated != nil
		}
	}
	return false
}

// waiting: the pod is Pending and no container of it (init or not) has
// run yet: not scheduled, or its image cannot be pulled.
func waiting(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
		return false
	}
	for _, ss := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range ss {
			if s.State.Running != nil || s.State.Terminated != nil {
				return false
			}
		}
	}
	return true
}

// waitingReason names why a container waits (ErrImagePull, ...).
func waitingReason(p *corev1.Pod) string {
	for _, ss := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range ss {
			if w := s.State.Waiting; w != nil && w.Reason != "" {
				return strings.TrimSpace(w.Reason + " " + w.Message)
			}
		}
	}
	return ""
}

func terminated(p *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.State.Terminated
		}
	}
	return nil
}
