//go:build !linux && !darwin

package roadmap

// exchange has no atomic swap here: the manifest is written with a plain
// rename after the check that nobody changed it (a narrow window).
func exchange(a, b string) error { return errNoExchange }
