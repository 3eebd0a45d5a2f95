package secret

import "testing"

// A lane's LANE_<id>_CREDENTIALS names its account's folder: a path, not
// a secret, so the secret-name rules neither withhold nor redact it.
func TestLaneCredentialsIsNoSecret(t *testing.T) {
	for name, want := range map[string]bool{"LANE_main_CREDENTIALS": false, "LANE_CLAUDE_MAX_CREDENTIALS": false, "AWS_CREDENTIALS": true, "GITHUB_TOKEN": true} {
		if got := SecretEnv(name); got != want {
			t.Errorf("SecretEnv(%s) = %v, want %v", name, got, want)
		}
	}
	r := NewRedactor([]string{"LANE_main_CREDENTIALS=claude-work-account-folder"})
	if got := r.String("CLAUDE_CONFIG_DIR=claude-work-account-folder"); got != "CLAUDE_CONFIG_DIR=claude-work-account-folder" {
		t.Errorf("redacted: %q", got)
	}
}
