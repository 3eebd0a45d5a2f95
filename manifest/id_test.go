package manifest

import (
	"os/exec"
	"strings"
	"testing"
)

// The ref-name half of the id check agrees with git itself on every id
// below: an id passes exactly when `git check-ref-format` accepts
// refs/heads/auto/<id>.
func TestIDRefRuleMatchesGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ids := []string{
		"phase-01", "a..b", "a.b", ".a", "a.", "a/.b", "a/b", "a//b", "/a", "a/",
		"a.lock", "a.lock/b", "a/b.lock", "x.locked", "a@{b", "a@b", "@", "a{b}",
		"a~1", "a^", "a:b", "a?", "a[1]", "a\\b", "#12", "é-ü", "фаза", "a\x01b",
		"a-", "-a", "_a", "a..", "...", "a.b.c", "lock", ".lock", "a/.lock",
	}
	for _, id := range ids {
		err := exec.Command("git", "check-ref-format", "refs/heads/"+BranchPrefix+id).Run()
		gitOK := err == nil
		why := refProblem(id)
		if gitOK != (why == "") {
			t.Errorf("id %q: git accepts the branch: %v; refProblem = %q", id, gitOK, why)
		}
	}
}

// Ids that run could not use are refused at parse time with the line.
func TestIDsRunCannotUse(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ф", 50) // 100 bytes, 300 as a folder name
	for _, tc := range []struct{ id, want string }{
		{"a..b", `phase id "a..b" cannot be a git branch name (auto/a..b): it contains ".."`},
		{"x.lock", `ends with ".lock"`},
		{"..", `contains ".."`},
		{".", `ends with "."`},
		{"a:b", `contains ':'`},
		{long, "is too long: it makes a 300-byte folder name, at most 200"},
		{strings.Repeat("a", 201), "is too long: it makes a 201-byte folder name"},
	} {
		src := "# M\n\n1. [pending] **ok** — fine (deps: none)\n2. [pending] **" + tc.id + "** — bad (deps: ok)\n"
		_, err := Parse([]byte(src))
		list, _ := err.(ErrorList)
		if len(list) != 1 || list[0].Line != 4 || !strings.Contains(list[0].Msg, tc.want) {
			t.Errorf("id %q: %v; want one error at line 4 with %q", tc.id, err, tc.want)
		}
	}
	if _, err := Parse([]byte("1. [pending] **" + strings.Repeat("a", 200) + "** — x\n")); err != nil {
		t.Errorf("a 200-byte id: %v", err)
	}
}
