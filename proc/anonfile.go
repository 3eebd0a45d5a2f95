package proc

import "os"

// tempAnonFile is a temp file in TMPDIR, unlinked at once: the open
// descriptor is all the child needs.
func tempAnonFile(name string) (*os.File, error) {
	f, err := os.CreateTemp("", name+"-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}
