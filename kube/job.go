package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels every Job and pod of the driver carries. Label values are
// restricted (63 characters, [A-Za-z0-9._-]): the repository is a hash of
// its path, the phase a cleaned name; the annotations keep them whole.
const (
	LabelApp        = "app.kubernetes.io/managed-by"
	LabelRepository = "claudopilot.dev/repository"
	LabelPhase      = "claudopilot.dev/phase"
	LabelRole       = "claudopilot.dev/role"
	LabelAttempt    = "claudopilot.dev/attempt"
	LabelInstance   = "claudopilot.dev/instance"
	LabelJob        = "claudopilot.dev/job"

	AnnotationPhase  = "claudopilot.dev/phase"
	AnnotationPrompt = "claudopilot.dev/prompt"
	annotationFile   = "claudopilot.dev/file-"
	annotationDoc    = "claudopilot.dev/doc-"

	appName = "claudopilot"
)

// Container and volume names, and where the pod keeps things.
const (
	initName    = "fetch"
	agentName   = "agent"
	workDir     = "/work"
	repoDir     = "/work/repo"
	homeDir     = "/work/home" // on K8S_SESSION_CLAIM when set
	inputDir    = "/etc/claudopilot"
	gitTokenDir = "/var/run/claudopilot/git"
	resultFile  = "/dev/termination-log"
	// AttemptPrefix is the branch namespace the pod pushes to: the only
	// one its git token may write.
	AttemptPrefix = "claudopilot/attempt/"
	startPrefix   = "claudopilot/start/"
	mergePrefix   = "claudopilot/merge/"
	basePrefix    = "claudopilot/base/"
)

// Attempt is one agent run, as package work describes it.
type Attempt struct {
	Phase   string // the phase or issue id
	Role    string // worker, supervisor, reviewer
	Attempt int
	// Base is the base branch's name and BaseSHA the commit the attempt
	// starts from; Branch the phase branch and Start its tip when it
	// exists and holds commits of its own ("" starts at BaseSHA).
	Base, BaseSHA string
	Branch, Start string
	// Merge is the commit a merge under way brings in (a supervisor
	// resolving conflicts): the pod merges it after the checkout, its
	// conflicts left for the agent. "" none.
	Merge   string
	Command string // the agent command line (sh -c)
	// Docs are files of the worktree the driver writes and never commits
	// (an issue's doc), by path relative to it: the pod writes them and
	// excludes them from its commits.
	Docs   map[string][]byte
	Prompt []byte   // given on stdin and as CLAUDOPILOT_PROMPT_FILE
	Env    []string // the contract environment (CLAUDOPILOT_*)
	// Files are small files the contract names by path (the failure log
	// a supervisor reads, review findings): variable name -> content.
	// The pod gets each under inputDir and the variable set to it.
	Files map[string][]byte
	// Resume is set when the driver restarts an attempt it may have left
	// running: a Job of an earlier attempt of the phase is adopted.
	Resume bool
}

// JobName is the attempt's Job name: the same attempt always gets the
// same name (a repeated create is harmless), two repositories or phases
// never share one. A DNS-1123 label of at most 63 characters.
func JobName(repository, phase, role string, attempt int) string {
	sum := sha256.Sum256([]byte(repository + "\x00" + phase + "\x00" + role + "\x00" + strconv.Itoa(attempt)))
	suffix := fmt.Sprintf("-%s%d-%s", roleLetter(role), attempt, hex.EncodeToString(sum[:])[:8])
	return "cp-" + clean(phase, 63-3-len(suffix)) + suffix
}

func roleLetter(role string) string {
	if role == "" {
		return "x"
	}
	return role[:1]
}

// clean makes s a label-safe lowercase name of at most n characters.
func clean(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > n {
		out = strings.Trim(out[:n], "-")
	}
	if out == "" {
		out = "x"
	}
	return out
}

// RepositoryLabel is the label value that names a repository: its path
// hashed (a path holds characters a label may not).
func RepositoryLabel(repository string) string {
	sum := sha256.Sum256([]byte(repository))
	return hex.EncodeToString(sum[:])[:16]
}

// labels of the attempt's Job and pod.
func (d *Driver) labels(a Attempt, name string) map[string]string {
	return map[string]string{
		LabelApp:        appName,
		LabelRepository: RepositoryLabel(d.cfg.Repository),
		LabelPhase:      clean(a.Phase, 63),
		LabelRole:       clean(a.Role, 63),
		LabelAttempt:    strconv.Itoa(a.Attempt),
		LabelInstance:   clean(d.cfg.Instance, 63),
		LabelJob:        name,
	}
}

// job builds the attempt's Job.
// podInputs are what the pod reads besides the base: the prompt, the
// contract's files and the phase docs, each carried in an annotation and
// mounted through the downward API, with the environment naming them.
func (d *Driver) podInputs(a Attempt, name string) (map[string]string, []corev1.EnvVar, []corev1.DownwardAPIVolumeFile) {
	ann := map[string]string{AnnotationPhase: a.Phase, AnnotationPrompt: string(a.Prompt)}
	env := d.podEnv(a, name)
	items := []corev1.DownwardAPIVolumeFile{{Path: "prompt", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + AnnotationPrompt + "']"}}}
	env = append(env, corev1.EnvVar{Name: "CLAUDOPILOT_PROMPT_FILE", Value: inputDir + "/prompt"})
	names := make([]string, 0, len(a.Files))
	for k := range a.Files {
		names = append(names, k)
	}
	sort.Strings(names)
	for i, k := range names {
		key := annotationFile + strconv.Itoa(i)
		file := "file-" + strconv.Itoa(i)
		ann[key] = string(a.Files[k])
		items = append(items, corev1.DownwardAPIVolumeFile{Path: file, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + key + "']"}})
		env = append(env, corev1.EnvVar{Name: k, Value: inputDir + "/" + file})
	}
	docs := make([]string, 0, len(a.Docs))
	for k := range a.Docs {
		docs = append(docs, k)
	}
	sort.Strings(docs)
	for i, rel := range docs {
		key, file := annotationDoc+strconv.Itoa(i), "doc-"+strconv.Itoa(i)
		ann[key] = string(a.Docs[rel])
		items = append(items, corev1.DownwardAPIVolumeFile{Path: file, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + key + "']"}})
		env = append(env, corev1.EnvVar{Name: "CLAUDOPILOT_DOC_" + strconv.Itoa(i), Value: rel},
			corev1.EnvVar{Name: "CLAUDOPILOT_DOC_FILE_" + strconv.Itoa(i), Value: inputDir + "/" + file})
	}
	env = append(env, corev1.EnvVar{Name: "CLAUDOPILOT_DOCS", Value: strconv.Itoa(len(docs))})
	return ann, env, items
}

func (d *Driver) job(a Attempt, name string) (*batchv1.Job, error) {
	labels := d.labels(a, name)
	ann, env, items := d.podInputs(a, name)
	res, err := d.resources()
	if err != nil {
		return nil, err
	}
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr(false), // no Kubernetes API credentials in the pod
		EnableServiceLinks:           ptr(false),
		ServiceAccountName:           d.cfg.ServiceAccount,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: []corev1.Container{d.container(initName, initScript, env, corev1.ResourceRequirements{})},
		Containers:     []corev1.Container{d.container(agentName, agentScript, env, res)},
		Volumes: []corev1.Volume{
			{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "input", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: items}}},
		},
	}
	d.mountOptional(&pod, a)
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.cfg.Namespace, Labels: labels, Annotations: map[string]string{AnnotationPhase: a.Phase}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr(int32(0)), // the supervisor owns retries
			// An eviction is the cluster's doing: the Job controller
			// makes a new pod, and the attempt is not spent.
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			TTLSecondsAfterFinished: ptr(int32(86400)), // the driver collects it long before
			Template:                corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: ann}, Spec: pod},
		},
	}
	if d.cfg.AgentTimeout > 0 {
		s := int64(d.cfg.AgentTimeout.Seconds())
		if s < 1 {
			s = 1
		}
		j.Spec.ActiveDeadlineSeconds = &s
	}
	return j, nil
}

// mountOptional adds what the settings ask for beyond the defaults: a
// RuntimeClass, the session store, the git token and the agent's Secret.
func (d *Driver) mountOptional(pod *corev1.PodSpec, a Attempt) {
	if d.cfg.RuntimeClass != "" {
		pod.RuntimeClassName = ptr(d.cfg.RuntimeClass)
	}
	if d.cfg.SessionClaim != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "home", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.cfg.SessionClaim}}})
		m := corev1.VolumeMount{Name: "home", MountPath: homeDir, SubPath: d.sessionDir(a.Phase)}
		pod.InitContainers[0].VolumeMounts = append(pod.InitContainers[0].VolumeMounts, m)
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, m)
	}
	if d.cfg.GitSecret != "" {
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "git", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: d.cfg.GitSecret, DefaultMode: ptr(int32(0o400))}}})
		for i := range pod.InitContainers {
			pod.InitContainers[i].VolumeMounts = append(pod.InitContainers[i].VolumeMounts, corev1.VolumeMount{Name: "git", MountPath: gitTokenDir, ReadOnly: true})
		}
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "git", MountPath: gitTokenDir, ReadOnly: true})
	}
	if d.cfg.Secret != "" {
		// The agent's own credentials (an API key, a CLI login): the
		// agent container only, never the fetch.
		pod.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: d.cfg.Secret}}}}
	}
}

func (d *Driver) container(name, script string, env []corev1.EnvVar, res corev1.ResourceRequirements) corev1.Container {
	return corev1.Container{
		Name: name, Image: d.cfg.Image, Command: []string{"/bin/sh", "-c", script},
		Env: env, WorkingDir: workDir, Resources: res,
		TerminationMessagePath:   resultFile,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "work", MountPath: workDir},
			{Name: "input", MountPath: inputDir, ReadOnly: true},
		},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
}

// podEnv is the contract environment and what the scripts read. Nothing
// else of the driver's environment goes to the cluster: its PATH, HOME
// and tokens mean nothing there, or must not be there.
func (d *Driver) podEnv(a Attempt, name string) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, kv := range a.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, "CLAUDOPILOT_") || k == "CLAUDOPILOT_PROMPT_FILE" || a.Files[k] != nil {
			continue
		}
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	env = append(env,
		corev1.EnvVar{Name: "CLAUDOPILOT_JOB", Value: name},
		corev1.EnvVar{Name: "CLAUDOPILOT_REMOTE", Value: d.cfg.Remote},
		corev1.EnvVar{Name: "CLAUDOPILOT_BASE_SHA", Value: a.BaseSHA},
		corev1.EnvVar{Name: "CLAUDOPILOT_START_SHA", Value: a.Start},
		corev1.EnvVar{Name: "CLAUDOPILOT_MERGE_SHA", Value: a.Merge},
		corev1.EnvVar{Name: "CLAUDOPILOT_AGENT", Value: a.Command},
		corev1.EnvVar{Name: "CLAUDOPILOT_WORKTREE", Value: repoDir},
		corev1.EnvVar{Name: "CLAUDOPILOT_RESULT", Value: resultFile},
		corev1.EnvVar{Name: "HOME", Value: homeDir},
	)
	if !hasEnv(env, "CLAUDOPILOT_BASE") {
		env = append(env, corev1.EnvVar{Name: "CLAUDOPILOT_BASE", Value: a.Base})
	}
	if !hasEnv(env, "CLAUDOPILOT_BRANCH") {
		env = append(env, corev1.EnvVar{Name: "CLAUDOPILOT_BRANCH", Value: a.Branch})
	}
	// git's configuration through the environment: an identity for the
	// agent's commits, no hooks, and the token file as the credential.
	cfg := [][2]string{{"user.name", "claudopilot agent"}, {"user.email", "agent@claudopilot.invalid"}, {"core.hooksPath", "/dev/null"}}
	if d.cfg.GitSecret != "" {
		cfg = append(cfg, [2]string{"credential.helper", `!f() { echo username=x-access-token; printf 'password=%s\n' "$(cat ` + gitTokenDir + `/token)"; }; f`})
	}
	env = append(env, corev1.EnvVar{Name: "GIT_CONFIG_COUNT", Value: strconv.Itoa(len(cfg))})
	for i, kv := range cfg {
		env = append(env, corev1.EnvVar{Name: "GIT_CONFIG_KEY_" + strconv.Itoa(i), Value: kv[0]}, corev1.EnvVar{Name: "GIT_CONFIG_VALUE_" + strconv.Itoa(i), Value: kv[1]})
	}
	return env
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// resources: K8S_CPU and K8S_MEMORY, as requests and limits both (a
// memory limit is what makes OOMKilled a thing the driver can tell).
func (d *Driver) resources() (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	for _, q := range []struct {
		name corev1.ResourceName
		val  string
		knob string
	}{{corev1.ResourceCPU, d.cfg.CPU, "K8S_CPU"}, {corev1.ResourceMemory, d.cfg.Memory, "K8S_MEMORY"}} {
		if q.val == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.val)
		if err != nil {
			return r, fmt.Errorf("%s=%q: %w", q.knob, q.val, err)
		}
		if r.Limits == nil {
			r.Limits, r.Requests = corev1.ResourceList{}, corev1.ResourceList{}
		}
		r.Limits[q.name], r.Requests[q.name] = v, v
	}
	return r, nil
}

// sessionDir is the phase's folder on K8S_SESSION_CLAIM: every attempt
// of the phase (a worker's, a supervisor's) mounts the same one, where
// the agent CLI keeps its sessions; two repositories or phases never
// share one.
func (d *Driver) sessionDir(phase string) string {
	sum := sha256.Sum256([]byte(phase))
	return RepositoryLabel(d.cfg.Repository) + "/" + clean(phase, 40) + "-" + hex.EncodeToString(sum[:])[:8]
}

func ptr[T any](v T) *T { return &v }

// initScript fetches the attempt's start from the remote and checks it is
// the commit the driver named (a remote that moved is no start). One
// fetch takes every ref the driver pushed and one rev-parse reads them
// all: a repair's pod made three of each, and a fetch from K8S_REMOTE is
// a round trip to the git server (issue 23: a git process is the cost).
const initScript = `set -eu
git init -q "$CLAUDOPILOT_WORKTREE"
cd "$CLAUDOPILOT_WORKTREE"
git remote add origin "$CLAUDOPILOT_REMOTE"
set -- "+refs/heads/` + basePrefix + `$CLAUDOPILOT_JOB:refs/heads/$CLAUDOPILOT_BASE"
refs="refs/heads/$CLAUDOPILOT_BASE" want="$CLAUDOPILOT_BASE_SHA" start="$CLAUDOPILOT_BASE_SHA"
if [ -n "$CLAUDOPILOT_START_SHA" ]; then
  set -- "$@" "+refs/heads/` + startPrefix + `$CLAUDOPILOT_JOB:refs/claudopilot/start"
  refs="$refs refs/claudopilot/start" want="$want $CLAUDOPILOT_START_SHA" start="$CLAUDOPILOT_START_SHA"
fi
if [ -n "$CLAUDOPILOT_MERGE_SHA" ]; then
  set -- "$@" "+refs/heads/` + mergePrefix + `$CLAUDOPILOT_JOB:refs/claudopilot/merge"
  refs="$refs refs/claudopilot/merge" want="$want $CLAUDOPILOT_MERGE_SHA"
fi
git fetch -q --no-tags origin "$@"
# A ref name holds no blank: the words are the refs, the lines their ids.
got=$(git rev-parse $refs)
test "$(echo $got)" = "$want"
git checkout -q -B "$CLAUDOPILOT_BRANCH" "$start"
if [ -n "$CLAUDOPILOT_MERGE_SHA" ]; then
  # The merge the driver could not finish: made again, conflicts left
  # in place for the agent (a merge that stops at conflicts exits 1).
  git merge -q --no-ff --no-commit "$CLAUDOPILOT_MERGE_SHA" || test -f .git/MERGE_HEAD
fi
# The files the driver writes into a worktree and never commits (an
# issue's doc): written, and kept out of the result's commits.
i=0
while [ "$i" -lt "$CLAUDOPILOT_DOCS" ]; do
  eval "rel=\"\$CLAUDOPILOT_DOC_$i\" file=\"\$CLAUDOPILOT_DOC_FILE_$i\""
  case "$rel" in */*) mkdir -p "${rel%/*}" ;; esac
  cp "$file" "$rel"
  printf '/%s\n' "$rel" >> .git/info/exclude
  i=$((i+1))
done
mkdir -p "$HOME"
`

// agentScript runs the agent, commits what it left, pushes the result
// and says how it ended in the termination message. The driver checks
// all of it again. The pod made the repository (git init: .git is a
// folder), so a merge in progress is .git/MERGE_HEAD, read without a
// git process (an agent that swaps .git fools this check as it could
// fool rev-parse: the driver's own checks are what count). A commit
// with nothing to commit fails and says so on stdout, dropped: one
// process where git diff --cached --quiet and a commit were two.
const agentScript = `set -u
cd "$CLAUDOPILOT_WORKTREE"
sh -c "$CLAUDOPILOT_AGENT" < "$CLAUDOPILOT_PROMPT_FILE"
code=$?
# A merge whose conflicts are still there is not concluded (the markers
# would be committed): given up, as the driver does with a local one.
if [ -f .git/MERGE_HEAD ] && [ -n "$(git diff --name-only --diff-filter=U)" ]; then
  git merge --abort
fi
git add -A && git commit -q -m "claudopilot: what the agent left uncommitted" >/dev/null
pushed=true
git push -q --force origin "HEAD:refs/heads/` + AttemptPrefix + `$CLAUDOPILOT_JOB" || pushed=false
printf '{"exit":%d,"tip":"%s","pushed":%s}' "$code" "$(git rev-parse HEAD)" "$pushed" > "$CLAUDOPILOT_RESULT"
exit $code
`
