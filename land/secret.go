package land

import (
	"context"

	"github.com/claudopilot/claudopilot/secret"
	"github.com/claudopilot/claudopilot/worktree"
)

// secrets scans everything landing commit on base brings into history for
// secrets (unless SECRET_SCAN=0): the rules, SECRET_ALLOW and the
// driver's own secret values (the funnel's). A scan that cannot run is an
// error: the merge stops. tree, when set, reads the diff of commit against
// base the scan reads (secret.Scanner.Tree).
func (o *Owner) secrets(ctx context.Context, base, commit string, tree *worktree.ChangeReader) (secret.Report, error) {
	if o.NoSecretScan {
		return secret.Report{}, nil
	}
	s := secret.Scanner{Allow: o.SecretAllow, Known: o.Redact, Tree: tree}
	return s.Landing(ctx, o.Git, base, commit)
}
