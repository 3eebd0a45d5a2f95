package worktree

import (
	"context"
	"fmt"
	"strings"
)

// BranchTip is a local branch and the commit it points at.
type BranchTip struct {
	Name string // short name, e.g. "auto/p1"
	Tip  string
}

// BranchTips lists the local branches whose short names start with
// prefix (e.g. "auto/"), in ref order.
func (c *Client) BranchTips(ctx context.Context, prefix string) ([]BranchTip, error) {
	out, err := c.run(ctx, "", nil, nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/"+prefix)
	if err != nil {
		return nil, fmt.Errorf("list branches %s*: %w", prefix, err)
	}
	var tips []BranchTip
	for line := range strings.SplitSeq(trimNL(out), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		tips = append(tips, BranchTip{Name: strings.TrimPrefix(ref, "refs/heads/"), Tip: sha})
	}
	return tips, nil
}
