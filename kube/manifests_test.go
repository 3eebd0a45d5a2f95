package kube

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// TestClusterManifests decodes every manifest of docs/cluster.md into
// client-go's types, strictly (an unknown or misspelt field fails), and
// checks what the walkthrough says of them.
func TestClusterManifests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	// The groups the manifests use, not client-go's scheme of every
	// group (it would make this test's binary 50 MB larger).
	s := NewScheme()
	for _, add := range []func(*runtime.Scheme) error{networkingv1.AddToScheme, nodev1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	decode := serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
	kinds := map[string]int{}
	var role *rbacv1.Role
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		for _, m := range strings.Split(block[1], "\n---\n") {
			obj, gvk, err := decode.Decode([]byte(m), nil, nil)
			if err != nil {
				t.Fatalf("%v in:\n%s", err, m)
			}
			kinds[gvk.Kind]++
			switch o := obj.(type) {
			case *rbacv1.Role:
				role = o
			case *corev1.ServiceAccount:
				if o.Name == "claudopilot-agent" && (o.AutomountServiceAccountToken == nil || *o.AutomountServiceAccountToken) {
					t.Error("the agents' service account mounts its token")
				}
			case *networkingv1.NetworkPolicy:
				if o.Spec.PodSelector.MatchLabels[LabelApp] != appName {
					t.Errorf("the NetworkPolicy selects %v, not the agents' pods", o.Spec.PodSelector.MatchLabels)
				}
			case *nodev1.RuntimeClass:
				if o.Handler == "" {
					t.Error("the RuntimeClass has no handler")
				}
			}
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "Role", "RoleBinding", "Secret", "RuntimeClass", "NetworkPolicy"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in docs/cluster.md", k)
		}
	}
	if role == nil {
		t.Fatal("no Role")
	}
	// Jobs, pods (read) and pods/log only.
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			switch res {
			case "jobs", "pods", "pods/log":
			default:
				t.Errorf("the driver's Role grants %s", res)
			}
			if res != "jobs" && strings.Contains(strings.Join(r.Verbs, ","), "create") {
				t.Errorf("the driver's Role may create %s", res)
			}
		}
	}
}

// TestK8sModulesAtOneRelease: k8s.io/api, apimachinery and client-go are
// released together and must be required at one release
// (docs/DEPENDENCIES.md); a go get of one alone would split them.
func TestK8sModulesAtOneRelease(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "k8s.io/api" || f[0] == "k8s.io/apimachinery" || f[0] == "k8s.io/client-go") {
			got[f[0]] = f[1]
		}
	}
	if len(got) != 3 || got["k8s.io/api"] != got["k8s.io/apimachinery"] || got["k8s.io/api"] != got["k8s.io/client-go"] {
		t.Fatalf("go.mod requires %v: keep the three at one release", got)
	}
}
