package launch

import "strings"

// Names are the variables whose values Hide keeps out of the process's
// environment: the GitHub token (GITHUB_TOKEN, else GH_TOKEN, as the queue
// reads it).
var Names = []string{"GITHUB_TOKEN", "GH_TOKEN"}

// FDEnv names the pipe the secrets come over in the re-executed image.
const FDEnv = "CLAUDOPILOT_SECRET_FD"

// split separates env into what is kept in the process's environment and
// the secret variables (Names), in the order given.
func split(env []string) (keep, secrets []string) {
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if isSecret(k) {
			secrets = append(secrets, kv)
			continue
		}
		keep = append(keep, kv)
	}
	return keep, secrets
}

func isSecret(k string) bool {
	for _, n := range Names {
		if k == n {
			return true
		}
	}
	return false
}

// encode and decode carry "K=V" entries NUL-separated, as environ is.
func encode(kvs []string) []byte { return []byte(strings.Join(kvs, "\x00")) }

func decode(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}
