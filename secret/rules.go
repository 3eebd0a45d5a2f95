package secret

import (
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/claudopilot/claudopilot/internal/lazy"
)

// hit is one secret in a line: its rule, a detail (the name it is
// assigned to, "base64") and where its bytes are, for redaction.
type hit struct {
	rule, detail string
	start, end   int
}

// The rules beside the shapes.
const (
	ruleAssignment  = "secret-assignment" // NAME=value: a secret name, a value that looks like one
	ruleField       = "secret-field"      // "password": "hunter22": a key naming a secret, a literal value
	ruleHighEntropy = "high-entropy"      // a random-looking value under a secret-looking name
	rulePrivateKey  = "private-key"
	ruleURLPassword = "url-password" // scheme://user:password@host
)

// Rules are the names a hit carries, for allow comments and docs.
// (The shapes' first, in Shapes' order.)
var Rules = sync.OnceValue(rules)

func rules() []string {
	var out []string
	for _, s := range Shapes() {
		if !slices.Contains(out, s.Rule) {
			out = append(out, s.Rule)
		}
	}
	return append(out, ruleURLPassword, ruleAssignment, ruleField, ruleHighEntropy, ruleKnown)
}

// valueRule says which rule, if any, value assigned to name breaks.
// literal: the value is a literal (quoted, or a YAML/.env line's), not
// an expression of code.
func valueRule(name, value string, literal bool) string {
	switch {
	case !secretName(name):
		return ""
	case secretLooking(value):
		return ruleAssignment
	case literal && strongName(name) && literalLooking(value):
		return ruleField
	case literal && highEntropy(value):
		return ruleHighEntropy
	}
	return ""
}

// secretWords are what a name says when it names a secret.
var secretWords = []string{"secret", "password", "passwd", "passphrase", "token", "apikey", "api_key", "api-key", "accesskey", "access_key", "privatekey", "private_key", "credential"}

// words splits a name at _ . - and camelCase humps, in lower case.
func words(name string) []string {
	var out []string
	cur := []rune{}
	prev := rune(0)
	for _, r := range name {
		switch {
		case r == '_' || r == '.' || r == '-':
			if len(cur) > 0 {
				out = append(out, string(cur))
			}
			cur = cur[:0]
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			out = append(out, string(cur))
			cur = append(cur[:0], unicode.ToLower(r))
		default:
			cur = append(cur, unicode.ToLower(r))
		}
		prev = r
	}
	if len(cur) > 0 {
		out = append(out, string(cur))
	}
	return out
}

// secretName: the name holds a secret word (AWS_SECRET_ACCESS_KEY,
// apiToken, DBPASSWORD), is the word auth, or ends in PASS, PWD, KEY or
// SECRET (DB_PASS, CACHE_KEY: whose value must then look like a secret).
func secretName(name string) bool {
	low := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	ws := words(name)
	if len(ws) == 0 {
		return false
	}
	last := ws[len(ws)-1]
	if slices.Contains(ws, "auth") || last == "pass" || last == "pwd" || last == "key" || last == "secret" {
		return true
	}
	// An all-caps compound: DBPASS, OLDPWD, MASTERKEY.
	if name == strings.ToUpper(name) {
		for _, suf := range []string{"PASS", "PWD", "KEY", "SECRET"} {
			if strings.HasSuffix(name, suf) {
				return true
			}
		}
	}
	return false
}

// strongName: the name's last word says secret (password, db_pass,
// apiToken, client_secret, API_KEY), so a weaker value test will do. A
// name that only holds the word (PASSWORD_MIN_LENGTH, token_url) or
// ends in a bare key (sortKey) is not strong.
func strongName(name string) bool {
	ws := words(name)
	if len(ws) == 0 {
		return false
	}
	last := ws[len(ws)-1]
	switch last {
	case "password", "passwd", "passphrase", "pass", "pwd", "secret", "token", "apikey", "credentials", "credential", "privatekey", "accesskey", "secretkey":
		return true
	case "key":
		if len(ws) > 1 {
			switch ws[len(ws)-2] {
			case "api", "access", "private", "secret", "client", "signing", "encryption", "master", "auth":
				return true
			}
		}
	}
	if strings.HasSuffix(last, "password") || strings.HasSuffix(last, "token") || strings.HasSuffix(last, "secret") {
		return true // DBPASSWORD, AUTHTOKEN
	}
	return false
}

// placeholders are values that stand for a secret.
var placeholders = []string{"changeme", "example", "placeholder", "your_", "your-", "yourpass", "xxxx", "dummy", "redacted", "getenv", "process.env", "os.environ", "sample", "<", ">"}

func placeholder(low string) bool {
	for _, p := range placeholders {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// reference: the value names another (a variable, a template, a URL).
func reference(v string) bool {
	return strings.ContainsAny(v, "$<>{}()[]") || strings.Contains(v, "://") || strings.Contains(v, "%(")
}

// secretLooking tells a real value from a placeholder or a reference: long
// enough, letters and digits mixed, no variable, URL or template.
func secretLooking(v string) bool {
	if len(v) < 12 || reference(v) {
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
	return letter && digit && len(distinct) >= 8 && !placeholder(strings.ToLower(v))
}

// envName is a value that is a variable's name (GITHUB_TOKEN).
var envName = lazy.Regexp(`^[A-Z][A-Z0-9_]*$`)

// pathLike is a value that is a file's path.
var pathLike = lazy.Regexp(`^(?:~|\.{1,2})?/|^[a-z0-9_.-]+(?:/[a-z0-9_.-]+)+$`)

// literalLooking is the weaker test for a literal under a strong name
// ("password": "hunter22"): 8 characters or more, three letters or more,
// two of lower case, upper case and digits, no space, and not a
// reference, a placeholder, a variable's name or a path.
func literalLooking(v string) bool {
	if len(v) < 8 || strings.ContainsAny(v, " \t") || reference(v) || envName().MatchString(v) || pathLike().MatchString(v) {
		return false
	}
	low := strings.ToLower(v)
	if placeholder(low) || mayRepeatName(low) {
		return false
	}
	var lower, upper, digit, letters int
	for _, r := range v {
		switch {
		case unicode.IsLower(r):
			lower, letters = 1, letters+1
		case unicode.IsUpper(r):
			upper, letters = 1, letters+1
		case unicode.IsDigit(r):
			digit = 1
		}
	}
	return letters >= 3 && lower+upper+digit >= 2
}

// mayRepeatName: a value saying password or token is about one, not one
// ("my-password", "accessToken").
func mayRepeatName(low string) bool {
	for _, w := range []string{"password", "passwd", "secret", "token", "apikey", "api_key"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// identifier is a value made of words (camelCase, snake_case,
// kebab-case): a name in code, not a random string.
var identifier = lazy.Regexp(`^(?:[a-z]+(?:[A-Z][a-z]+)+|[A-Z]?[a-z]+(?:[_.-][A-Za-z][a-z]+)+|[A-Z]+(?:_[A-Z]+)+)$`)

// highEntropy is a long random-looking string: 16 characters or more of
// base64, hex or token characters, at least 3.5 bits per character, and
// not made of words.
func highEntropy(v string) bool {
	if len(v) < 16 || reference(v) || identifier().MatchString(v) || pathLike().MatchString(v) {
		return false
	}
	for _, r := range v {
		if r > unicode.MaxASCII || !tokenChar(byte(r)) {
			return false
		}
	}
	if placeholder(strings.ToLower(v)) {
		return false
	}
	return entropy(v) >= 3.5
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// tokenChar is a byte of a token, base64 or hex string.
func tokenChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("+/=_-.~", b) >= 0
}

// lineHits finds every secret in one line: the shapes, secret
// assignments and fields, and base64 that decodes to one. Hits may
// overlap (a token in an assignment is both): each rule is its own.
func lineHits(line string) []hit {
	mask := hintMask(line)
	out := shapeHits(line, mask, nil)
	out = assignHits(line, mask, out)
	return base64Hits(line, out)
}
