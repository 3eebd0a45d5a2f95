package secret

// Redact returns s with every secret shape, and the value of every
// .env-style secret assignment, replaced by "[redacted]". It is for text
// shown to people (a log over the web), where a false positive costs a
// word and a miss costs a credential.
func Redact(s string) string {
	for _, sh := range Shapes {
		s = sh.Re.ReplaceAllString(s, "[redacted]")
	}
	for _, sh := range fileShapes {
		s = sh.Re.ReplaceAllString(s, "[redacted]")
	}
	if m := assignment.FindStringSubmatchIndex(s); m != nil && secretLooking(s[m[4]:m[5]]) {
		s = s[:m[4]] + "[redacted]" + s[m[5]:]
	}
	return s
}
