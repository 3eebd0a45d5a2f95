package lazy

import (
	"testing"
)

// The expression is compiled at the first call, once; a bad one panics
// there, not when the package is loaded.
func TestRegexp(t *testing.T) {
	re := Regexp(`^a+$`)
	if first := re(); !first.MatchString("aaa") || re() != first {
		t.Fatal("not one compiled expression")
	}
	bad := Regexp(`(`) // no panic yet
	defer func() {
		if recover() == nil {
			t.Fatal("a bad expression did not panic at its first use")
		}
	}()
	bad()
}
