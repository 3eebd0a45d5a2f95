package launch

import "strings"

// secretWords are what makes a variable's name say it holds a secret.
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL"}

// SecretName reports whether a variable's name says it holds a secret
// (GITHUB_TOKEN, NPM_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD, …); not
// LANE_<id>_CREDENTIALS, a path. The one rule for what agents are not
// given (work.AgentEnv) and what the driver's own git never gets
// (worktree.Client).
func SecretName(name string) bool {
	up := strings.ToUpper(name)
	if strings.HasPrefix(up, "LANE_") && strings.HasSuffix(up, "_CREDENTIALS") {
		return false // a lane's account: the path of its configuration folder, not a secret (docs/lanes.md)
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}
