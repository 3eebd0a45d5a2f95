package issues

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v84/github"
)

// CreateIssue opens an issue with title, body (both scrubbed) and labels,
// exactly once: the body carries a hidden nonce, and before a retry the
// newest open issues with the first label are read to see whether a
// timed-out try went through after all. It returns the issue's number.
func (g *GitHub) CreateIssue(ctx context.Context, title, body string, labels []string) (int, error) {
	nonce := randomHex(8)
	body = g.scrub.Scrub(body) + "\n<!-- claudopilot:nonce " + nonce + " -->"
	req := &github.IssueRequest{Title: github.Ptr(g.scrub.Scrub(title)), Body: github.Ptr(body), Labels: &labels}
	n := 0
	err := g.do(ctx, "open an issue", func(ctx context.Context) (*github.Response, error) {
		is, r, err := g.c.Issues.Create(ctx, g.owner, g.repo, req)
		if err == nil {
			n = is.GetNumber()
			g.learnSelf(is.GetUser().GetLogin())
		}
		return r, err
	}, func(ctx context.Context) (bool, error) {
		label := ""
		if len(labels) > 0 {
			label = labels[0]
		}
		open, err := g.OpenIssues(ctx, label, true, 20)
		if err != nil {
			return false, nil // try again; the next try re-checks
		}
		for _, is := range open {
			if strings.Contains(is.Body, "claudopilot:nonce "+nonce) {
				n = is.Number
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("open an issue: GitHub gave no number")
	}
	return n, nil
}

// SetPRBody replaces pull request n's body (scrubbed).
func (g *GitHub) SetPRBody(ctx context.Context, n int, body string) error {
	body = g.scrub.Scrub(body)
	return g.do(ctx, fmt.Sprintf("update the body of #%d", n), func(ctx context.Context) (*github.Response, error) {
		_, r, err := g.c.PullRequests.Edit(ctx, g.owner, g.repo, n, &github.PullRequest{Body: github.Ptr(body)})
		return r, err
	}, nil)
}
