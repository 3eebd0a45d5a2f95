package root

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRetryIssueWithoutQueueSettings: retry of an issue works on GitHub,
// with the queue's settings: without a token, or without a GitHub origin,
// it is flag misuse (64) and changes nothing, even beside a phase it could
// flip; a manifest with issue deps loads for retry, and retry of a pending
// phase says so. In process here, where the whole command tree is linked
// anyway: explain's test binary then needs neither retry nor the engine
// (#23: the suite's link cost). The script status_outside runs the same
// through the binary under CLAUDOPILOT_SOAK=1.
func TestRetryIssueWithoutQueueSettings(t *testing.T) {
	const manifest = "# Execution Manifest: outside nodes\n\n**Status:** in-progress\n\n## Phases\n\n" +
		"1. [merged] **p1** — first (deps: none)\n2. [pending] **p2** — after issue 3 (deps: p1, #3)\n" +
		"3. [pending] **p3** — after issue 12 (deps: #12)\n"
	r := newRepoFixture(t, map[string]string{
		"roadmap/EXECUTION-MANIFEST.md": manifest,
		"roadmap/p1-first.md":           "# first\n", "roadmap/p2-after.md": "# after 3\n", "roadmap/p3-after.md": "# after 12\n",
	})
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"retry", "#12"}, nil, "retry of an issue needs a GitHub token: set GITHUB_TOKEN or GH_TOKEN"},
		{[]string{"retry", "p3", "#12"}, nil, "retry of an issue needs a GitHub token"},
		{[]string{"retry", "#12"}, []string{"GITHUB_TOKEN=tok"}, "cannot tell the GitHub repository from the origin remote"},
	} {
		env := r.env
		r.env = append(r.env[:len(r.env):len(r.env)], c.env...)
		_, stderr, code := r.run(r.dir, c.args...)
		r.env = env
		if code != 64 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v %v: exit %d\n%s; want 64 and %q", c.args, c.env, code, stderr, c.want)
		}
		if b, _ := os.ReadFile(filepath.Join(r.dir, "roadmap/EXECUTION-MANIFEST.md")); string(b) != manifest {
			t.Fatalf("%v changed the manifest:\n%s", c.args, b)
		}
	}
	if out, stderr, code := r.run(r.dir, "retry", "p3"); code != 0 || !strings.Contains(out+stderr, "p3 is already [pending]") {
		t.Errorf("retry p3: exit %d\n%s%s; want p3 is already [pending]", code, out, stderr)
	}
}
