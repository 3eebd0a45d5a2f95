package worktree

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// FilesIn returns the names of the files (blobs, symlinks included) directly
// in folder dir of rev, in one git call: dir is slash-separated from the
// repository's top ("" or "." for the top). Checking a thousand phase docs
// one `git cat-file` each took seconds to minutes before the first launch.
func (c *Client) FilesIn(ctx context.Context, rev, dir string) (map[string]bool, error) {
	args := []string{"--literal-pathspecs", "ls-tree", "-z", "--full-tree", "--end-of-options", rev}
	dir = strings.TrimSuffix(path.Clean(dir), "/")
	if dir != "." && dir != "" {
		args = append(args, "--", dir+"/")
	}
	out, err := c.run(ctx, "", nil, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s:%s: %w", rev, dir, err)
	}
	files := make(map[string]bool)
	for _, e := range splitNUL(out) {
		// "<mode> <type> <oid>\t<path>"
		meta, p, ok := strings.Cut(e, "\t")
		if !ok {
			return nil, fmt.Errorf("list %s:%s: unexpected %q", rev, dir, e)
		}
		if f := strings.Fields(meta); len(f) == 3 && f[1] == "blob" {
			files[path.Base(p)] = true
		}
	}
	return files, nil
}
