package worktree

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// ErrPushRejected is returned by PushCommit when the remote's branch is
// not an ancestor of what was pushed (someone else pushed first): the
// push changed nothing, and is never forced.
var ErrPushRejected = errors.New("push rejected: the remote's branch has commits this one lacks")

// PushCommit pushes commit to branch on remote: a fast-forward or
// nothing, never forced (no hook runs here). The commit is named by its
// id, not by a local ref, so what is pushed is what the caller read. A
// rejection because the remote moved on is ErrPushRejected; any other
// failure (the network, a credential, the remote's own hook) is the
// git error.
func (c *Client) PushCommit(ctx context.Context, remote, commit, branch string) error {
	out, err := c.remote(ctx, "-c", "core.hooksPath=/dev/null", "push", "--porcelain", "--no-verify", remote, commit+":refs/heads/"+branch)
	if err == nil {
		return nil
	}
	// --porcelain: "!\t<src>:<dst>\t[rejected] (fetch first)" when the
	// remote has commits the push lacks, "(non-fast-forward)" when git
	// knows it from the remote-tracking ref.
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, "!") && strings.Contains(line, "[rejected]") &&
			(strings.Contains(line, "fetch first") || strings.Contains(line, "non-fast-forward")) {
			return ErrPushRejected
		}
	}
	return err
}

// RemoteBranches returns which of branches remote has (one ls-remote).
func (c *Client) RemoteBranches(ctx context.Context, remote string, branches []string) ([]string, error) {
	if len(branches) == 0 {
		return nil, nil
	}
	args := []string{"-c", "core.hooksPath=/dev/null", "ls-remote", "--heads", remote}
	for _, b := range branches {
		args = append(args, "refs/heads/"+b)
	}
	out, err := c.remote(ctx, args...)
	if err != nil {
		return nil, err
	}
	var has []string
	for line := range strings.SplitSeq(out, "\n") {
		// ls-remote matches a pattern's tail: keep exact names only.
		if _, ref, ok := strings.Cut(line, "\t"); ok && slices.Contains(branches, strings.TrimPrefix(ref, "refs/heads/")) {
			has = append(has, strings.TrimPrefix(ref, "refs/heads/"))
		}
	}
	return has, nil
}

// DeleteRemoteBranches deletes branches on remote in one push (no hook
// runs here).
func (c *Client) DeleteRemoteBranches(ctx context.Context, remote string, branches []string) error {
	if len(branches) == 0 {
		return nil
	}
	args := []string{"-c", "core.hooksPath=/dev/null", "push", "--quiet", "--no-verify", remote}
	for _, b := range branches {
		args = append(args, ":refs/heads/"+b)
	}
	_, err := c.remote(ctx, args...)
	return err
}
