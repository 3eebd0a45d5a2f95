//go:build !linux

package proc

import "os"

// anonFile returns a new file that has no name: elsewhere than Linux, a
// temp file unlinked at once.
func anonFile(name string) (*os.File, error) { return tempAnonFile(name) }
