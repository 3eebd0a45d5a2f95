package secret

import (
	"regexp"
	"strings"
)

// Shapes are the common secret formats: the issue queue removes them from
// everything it posts or shows, and Scan refuses a landing that adds one.
var Shapes = []Shape{
	{"GitHub token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{16,}`)},                       // ghp_, gho_, ghu_, ghs_, ghr_
	{"GitHub token", regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{16,}`)},                     // fine-grained personal access tokens
	{"API key", regexp.MustCompile(`\bsk-[A-Za-z0-9][A-Za-z0-9_-]{15,}`)},                      // OpenAI/Anthropic-style keys (sk-..., sk-proj-..., sk-ant-...)
	{"AWS access key id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},                 // AWS access key ids
	{"bearer token", regexp.MustCompile(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}`)},              // Authorization: Bearer …
	{"authorization token", regexp.MustCompile(`(?i)\b(?:token|basic)\s+[A-Za-z0-9+/=]{20,}`)}, // Authorization: token …/Basic …
}

// fileShapes are found only by Scan: they are a secret in a file, while in
// a log line they are not worth redacting.
var fileShapes = []Shape{
	{"private key", regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)},
	{"Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{"Slack token", regexp.MustCompile(`\bxox[abprs]-[0-9A-Za-z-]{10,}`)},
	{"Stripe key", regexp.MustCompile(`\b[rs]k_live_[0-9A-Za-z]{16,}`)},
}

// Shape is one secret format.
type Shape struct {
	Kind string
	Re   *regexp.Regexp
}

// assignment is a .env-style line (also YAML, shell, TOML): a name that
// says secret, then = or :, then a value.
var assignment = regexp.MustCompile(`(?i)^\s*(?:export\s+)?["']?([A-Z0-9_.-]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH)[A-Z0-9_.-]*)["']?\s*[:=]\s*["']?([^\s"'#]+)`)

// secretLooking tells a real value from a placeholder or a reference: long
// enough, letters and digits mixed, no variable, URL or template.
func secretLooking(v string) bool {
	if len(v) < 12 || strings.ContainsAny(v, "$<>{}()[]") || strings.Contains(v, "://") {
		return false
	}
	var letter, digit bool
	distinct := map[rune]bool{}
	for _, r := range v {
		distinct[r] = true
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		}
	}
	low := strings.ToLower(v)
	for _, p := range []string{"changeme", "example", "placeholder", "your_", "your-", "xxxx", "dummy", "redacted", "getenv", "process.env", "os.environ"} {
		if strings.Contains(low, p) {
			return false
		}
	}
	return letter && digit && len(distinct) >= 8
}

// Line reports the kind of secret line holds, or "".
func Line(line string) string {
	for _, s := range Shapes {
		if s.Re.MatchString(line) {
			return s.Kind
		}
	}
	for _, s := range fileShapes {
		if s.Re.MatchString(line) {
			return s.Kind
		}
	}
	if m := assignment.FindStringSubmatch(line); m != nil && secretLooking(m[2]) {
		return "secret assignment (" + m[1] + ")"
	}
	return ""
}
