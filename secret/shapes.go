package secret

import (
	"regexp"
	"strings"
	"sync"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// Shape is one secret format: a token, a key, a private key block.
type Shape struct {
	Rule string // the rule's name, as a hit and an allow comment name it
	Re   *regexp.Regexp
	// Hints: a line holding none of these cannot match, and is not
	// matched against Re at all. Fold: Re ignores case, and so do they
	// (written in lower case).
	Hints []string
	Fold  bool
	// Scheme: the match starts with a scheme word ("Bearer ", "token ")
	// that stays readable when the rest is redacted.
	Scheme bool
}

// Shapes are the common secret formats. The scan refuses a landing that
// adds one; the Redactor removes them from whatever the driver writes.
var Shapes = sync.OnceValue(func() []Shape {
	return []Shape{
		{Rule: "github-token", Re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{16,}`), Hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
		{Rule: "github-token", Re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{16,}`), Hints: []string{"github_pat_"}}, // fine-grained personal access tokens
		{Rule: "gitlab-token", Re: regexp.MustCompile(`\bgl(?:pat|dt|ptt|rt)-[0-9A-Za-z_-]{20,}`), Hints: []string{"glpat-", "gldt-", "glptt-", "glrt-"}},
		{Rule: "api-key", Re: regexp.MustCompile(`\bsk-[A-Za-z0-9][A-Za-z0-9_-]{15,}`), Hints: []string{"sk-"}}, // OpenAI/Anthropic-style keys (sk-..., sk-proj-..., sk-ant-...)
		{Rule: "aws-access-key-id", Re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Hints: []string{"AKIA", "ASIA"}},
		{Rule: "google-api-key", Re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`), Hints: []string{"AIza"}},
		{Rule: "slack-token", Re: regexp.MustCompile(`\bxox[abprs]-[0-9A-Za-z-]{10,}`), Hints: []string{"xox"}},
		{Rule: "slack-webhook", Re: regexp.MustCompile(`hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_-]{20,}`), Hints: []string{"hooks.slack.com"}},
		{Rule: "stripe-key", Re: regexp.MustCompile(`\b[rs]k_live_[0-9A-Za-z]{16,}`), Hints: []string{"k_live_"}},
		{Rule: "npm-token", Re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), Hints: []string{"npm_"}},
		{Rule: "pypi-token", Re: regexp.MustCompile(`\bpypi-AgE[A-Za-z0-9_-]{50,}`), Hints: []string{"pypi-AgE"}},
		{Rule: "docker-token", Re: regexp.MustCompile(`\bdckr_pat_[A-Za-z0-9_-]{20,}`), Hints: []string{"dckr_pat_"}},
		{Rule: "huggingface-token", Re: regexp.MustCompile(`\bhf_[A-Za-z]{34}\b`), Hints: []string{"hf_"}},
		{Rule: "sendgrid-key", Re: regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`), Hints: []string{"SG."}},
		{Rule: "digitalocean-token", Re: regexp.MustCompile(`\bdo[opr]_v1_[a-f0-9]{64}\b`), Hints: []string{"_v1_"}},
		{Rule: "shopify-token", Re: regexp.MustCompile(`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`), Hints: []string{"shp"}},
		{Rule: "twilio-key", Re: regexp.MustCompile(`\bSK[0-9a-f]{32}\b`), Hints: []string{"SK"}},
		{Rule: "jwt", Re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`), Hints: []string{"eyJ"}},
		// A private key's header, and its block up to the footer when the
		// line holds it (JSON keeps a PEM block on one line, with \n).
		{Rule: "private-key", Re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?`), Hints: []string{"PRIVATE KEY"}},
		{Rule: "private-key", Re: regexp.MustCompile(`PuTTY-User-Key-File-\d+:`), Hints: []string{"PuTTY-User-Key-File-"}},
		{Rule: "bearer-token", Re: regexp.MustCompile(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}`), Hints: []string{"bearer"}, Fold: true, Scheme: true},                      // Authorization: Bearer …
		{Rule: "authorization-token", Re: regexp.MustCompile(`(?i)\b(?:token|basic)\s+[A-Za-z0-9+/=]{20,}`), Hints: []string{"token", "basic"}, Fold: true, Scheme: true}, // Authorization: token …/Basic …
	}
})

// urlCreds is a URL carrying a password (scheme://user:password@host).
var urlCreds = lazy.Regexp(`\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@"']+:([^\s/:@"']+)@`)

// shapeHits finds every shape in line, and every password in a URL;
// mask is line's hintMask.
func shapeHits(line string, mask uint64, out []hit) []hit {
	low := ""
	for i, sh := range Shapes() {
		if mask&(1<<i) == 0 {
			continue
		}
		in := line
		if sh.Fold {
			if low == "" {
				low = strings.ToLower(line)
			}
			in = low
		}
		if !hinted(in, sh.Hints) {
			continue
		}
		for _, m := range sh.Re.FindAllStringIndex(line, -1) {
			start := m[0]
			if sh.Scheme {
				// Keep the scheme word readable: "Bearer [REDACTED]".
				if i := strings.IndexAny(line[m[0]:m[1]], " \t"); i > 0 {
					start = m[0] + i + 1
				}
			}
			out = append(out, hit{rule: sh.Rule, start: start, end: m[1]})
		}
	}
	if mask&urlBit != 0 && strings.Contains(line, "://") {
		for _, m := range urlCreds().FindAllStringSubmatchIndex(line, -1) {
			if v := line[m[2]:m[3]]; literalLooking(v) || secretLooking(v) {
				out = append(out, hit{rule: ruleURLPassword, start: m[2], end: m[3]})
			}
		}
	}
	return out
}

// hinted: s holds one of hints.
func hinted(s string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}
