package secret

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// redact is a Redactor that knows no values: the rules alone.
var redact = (*Redactor)(nil).String

func TestRedact(t *testing.T) {
	tests := []struct{ in, gone string }{
		{"pushing with ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123"},
		{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI7K7MDENGbPxRfiCYzq81KEY9", "wJalrXUtnFEMI7K7MDENGbPxRfiCYzq81KEY9"},
		{"key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"},
		{"Authorization: Bearer abc.def.ghi-123456", "abc.def.ghi-123456"},
		// #22 §2: stream-json lines start with {, and hold several.
		{`{"type":"user","content":"API_KEY=q8Zt2LmWx0Pv\nDB_PASS=s3cr3tP4ssw0rd"}`, "q8Zt2LmWx0Pv"},
		{`{"type":"user","content":"API_KEY=q8Zt2LmWx0Pv\nDB_PASS=s3cr3tP4ssw0rd"}`, "s3cr3tP4ssw0rd"},
		{`{"content":"{\"db\":{\"password\":\"hunter22\"}}"}`, "hunter22"},
		{"echo Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ==", "Z2hwX2FiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMzQ1Njc4OQ"},
	}
	for _, tc := range tests {
		got := redact(tc.in)
		if strings.Contains(got, tc.gone) || !strings.Contains(got, Redacted) {
			t.Errorf("redact(%q) = %q", tc.in, got)
		}
	}
	if got := redact("just a line of output: PASSWORD=${PW}"); got != "just a line of output: PASSWORD=${PW}" {
		t.Errorf("a reference was redacted: %q", got)
	}
	if got := redact("Authorization: Bearer abc.def.ghi-123456"); got != "Authorization: Bearer "+Redacted {
		t.Errorf("the scheme word went: %q", got)
	}
}

// The values of the environment's secret-named variables are redacted
// raw, URL-escaped and base64-encoded, also inside a longer base64
// string (a git credential); other variables are left alone.
func TestRedactorKnownValues(t *testing.T) {
	pw := "pa55 w/rd+Zq8&x=1" // no shape: only its value can find it
	tok := "ghp_zyxwvutsrqponmlkjihgfedcba9876543210"
	r := NewRedactor([]string{"DEPLOY_PASSWORD=" + pw, "GITHUB_TOKEN=" + tok, "HOME=/root", "EDITOR=vim-and-more", "SHORT_KEY=abc"})
	for _, text := range []string{
		pw, url.QueryEscape(pw), url.PathEscape(pw),
		base64.StdEncoding.EncodeToString([]byte(pw)),
		base64.URLEncoding.EncodeToString([]byte(pw)),
		base64.StdEncoding.EncodeToString([]byte("x-access-token:" + tok)),
		base64.StdEncoding.EncodeToString([]byte("ab" + pw + "tail")),
		base64.StdEncoding.EncodeToString([]byte("a" + tok)),
	} {
		line := "said " + text + " then"
		got := r.String(line)
		if !strings.Contains(got, Redacted) || strings.Contains(got, text) && text != "" {
			t.Errorf("%q: %q", line, got)
		}
		if got := r.Lines([]string{line}); got[0] == line {
			t.Errorf("Lines left %q", line)
		}
	}
	if got := r.String("editor vim-and-more in /root, abc"); got != "editor vim-and-more in /root, abc" {
		t.Errorf("redacted too much: %q", got)
	}
	var nilR *Redactor
	if got := nilR.String("say " + tok); got != "say "+Redacted {
		t.Errorf("nil redactor: %q", got)
	}
}

// A private key's block is redacted whole, header, body and footer
// kept as markers.
func TestRedactPrivateKeyBlock(t *testing.T) {
	in := "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6Zh8Y0Rkz7yV7cX5i2Fz7Oeg1\nqwertyuiopasdfghjklzxcvbnm0123456789QWERTYUIOPASDFGHJKLZXCVBNM01\n-----END RSA PRIVATE KEY-----\nafter"
	got := redact(in)
	if strings.Contains(got, "qwertyuiop") || strings.Contains(got, "MIIEpAIB") || !strings.HasPrefix(got, "before\n") || !strings.HasSuffix(got, "-----END RSA PRIVATE KEY-----\nafter") {
		t.Errorf("got:\n%s", got)
	}
}

// A Stream redacts whole lines as they end, whatever the pieces: a value
// cut between writes, a private key's block across writes, and a line
// too long to hold, cut before its last word, not inside it.
func TestStream(t *testing.T) {
	tok := "ghp_zyxwvutsrqponmlkjihgfedcba9876543210"
	s := NewRedactor([]string{"GITHUB_TOKEN=" + tok}).Stream()
	var out []byte
	for _, p := range []string{"a " + tok[:10], tok[10:] + " b\n-----BEGIN RSA ", "PRIVATE KEY-----\nMIIEpAIBAAKC", "AQEA3Tz2\n-----END RSA PRIVATE KEY-----\nend"} {
		out = append(out, s.Write([]byte(p))...)
	}
	out = append(out, s.Flush()...)
	want := "a [REDACTED] b\n[REDACTED]\n[REDACTED]\n-----END RSA PRIVATE KEY-----\nend"
	if string(out) != want {
		t.Errorf("got\n%q\nwant\n%q", out, want)
	}
	long := strings.Repeat("x ", maxPending/2) + tok
	out = s.Write([]byte(long[:len(long)-5]))
	out = append(out, s.Write([]byte(long[len(long)-5:]+"\n"))...)
	if strings.Contains(string(out), tok[:20]) || !strings.HasSuffix(string(out), "x [REDACTED]\n") {
		t.Errorf("a long line: ...%q", out[max(0, len(out)-80):])
	}
}
