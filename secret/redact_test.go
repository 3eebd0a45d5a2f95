package secret

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, gone string }{
		{"pushing with ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123"},
		{"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI7K7MDENGbPxRfiCYzq81KEY9", "wJalrXUtnFEMI7K7MDENGbPxRfiCYzq81KEY9"},
		{"key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"},
		{"Authorization: Bearer abc.def.ghi-123456", "abc.def.ghi-123456"},
	}
	for _, tc := range tests {
		got := Redact(tc.in)
		if strings.Contains(got, tc.gone) || !strings.Contains(got, "[redacted]") {
			t.Errorf("Redact(%q) = %q", tc.in, got)
		}
	}
	if got := Redact("just a line of output: PASSWORD=${PW}"); got != "just a line of output: PASSWORD=${PW}" {
		t.Errorf("a reference was redacted: %q", got)
	}
}
