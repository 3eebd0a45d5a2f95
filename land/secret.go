package land

import (
	"context"

	"github.com/claudopilot/claudopilot/secret"
)

// secrets scans what landing commit on base adds for secrets (unless
// SECRET_SCAN=0). A scan that cannot run is an error: the merge stops.
func (o *Owner) secrets(ctx context.Context, base, commit string) ([]secret.Finding, error) {
	if o.NoSecretScan {
		return nil, nil
	}
	return secret.Landing(ctx, o.Git, base, commit)
}
