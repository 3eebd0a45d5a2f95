package wire

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/claudopilot/claudopilot/issues"
	"github.com/claudopilot/claudopilot/settings"
)

// The queue's configuration comes from the one model: its labels'
// defaults are the queue's own, the supervisor is the agent unless set,
// its poll is its own default. Its base is the run's (engine.Open), its
// slots and retry policy the scheduler's: none of them is the queue's.
func TestQueueFromSettings(t *testing.T) {
	t.Parallel()
	s, err := settings.Resolve(settings.Input{Scope: settings.Run, Env: map[string]string{"GH_REPO": "acme/widgets", "AGENT_CMD": "agent-x", "MAX_PARALLEL": "5"}})
	if err != nil {
		t.Fatal(err)
	}
	env := Env{"GITHUB_TOKEN": "tok", "PATH": "/bin"}
	c, g, err := Queue(context.Background(), s, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Labels != issues.DefaultLabels {
		t.Errorf("labels %+v, want the queue's defaults %+v", c.Labels, issues.DefaultLabels)
	}
	if c.Base != "" || c.Agent != "agent-x" || c.Supervisor != "agent-x" || c.Poll != time.Minute || c.Token != "tok" {
		t.Errorf("queue config %+v", c)
	}
	if g.Owner != "acme" || g.Repo != "widgets" || g.Token != "tok" {
		t.Errorf("GitHub config %+v", g)
	}
	// No token: misuse, named as such.
	_, _, err = Queue(context.Background(), s, nil, Env{})
	var se *settings.Error
	if !errors.As(err, &se) || se.Unreadable() {
		t.Errorf("no token: %v, want a settings problem", err)
	}
}

func TestRepoFromRemote(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]string{
		"https://github.com/acme/widgets.git":    "acme/widgets",
		"git@github.com:acme/widgets.git":        "acme/widgets",
		"ssh://git@ghe.example.com/acme/widgets": "acme/widgets",
		"/srv/git/widgets.git":                   "",
		"file:///srv/git/acme/widgets.git":       "",
	} {
		if got := RepoFromRemote(u); got != want {
			t.Errorf("RepoFromRemote(%q) = %q, want %q", u, got, want)
		}
	}
}
