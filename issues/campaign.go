package issues

import (
	"context"
	"fmt"
	"strings"

	"github.com/claudopilot/claudopilot/internal/lazy"
	"github.com/claudopilot/claudopilot/protect"
	"github.com/claudopilot/claudopilot/scheduler"
)

// CampaignDir holds the campaigns' goal files, committed:
// claudopilot/campaigns/<name>.md.
const CampaignDir = "claudopilot/campaigns"

// DefaultCampaignPrefix is CAMPAIGN_LABEL_PREFIX's default.
const DefaultCampaignPrefix = "campaign:"

// campaignName is a campaign's name as a goal file may be named after it.
var campaignName = lazy.Regexp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CampaignProtected declares the goal files for the landing's check
// (package protect): they steer the agents of a campaign's issues.
func CampaignProtected() []protect.Rule {
	return []protect.Rule{{Glob: CampaignDir + "/**", Why: "a campaign's goal file, given to its issues' agents"}}
}

// campaignOf is the campaign an issue's label names ("" none): the first
// label with CAMPAIGN_LABEL_PREFIX.
func (c *Config) campaignOf(is *Issue) string {
	prefix := c.CampaignPrefix
	if prefix == "" {
		prefix = DefaultCampaignPrefix
	}
	for _, l := range is.Labels {
		if len(l) > len(prefix) && strings.EqualFold(l[:len(prefix)], prefix) {
			return strings.TrimSpace(l[len(prefix):])
		}
	}
	return ""
}

// campaign marks nd, issue is's node, as its campaign's: it goes before
// any other ready issue (the scheduler's Priority), and its agents get the
// campaign's goal file, as the base on the remote has it committed
// (never a file on a branch), after the issue's body.
func (q *Queue) campaign(ctx context.Context, is *Issue, nd *scheduler.OutsideNode) {
	name := q.cfg.campaignOf(is)
	if name == "" {
		return
	}
	nd.Priority, nd.Campaign = 1, name
	if !campaignName().MatchString(name) {
		q.logIssue(is.Number, "campaign %q: no goal file is read for a name that is not letters, digits, '.', '-', '_'", name)
		return
	}
	rev := "refs/remotes/" + q.cfg.Remote + "/" + q.cfg.Base
	goal, has, err := q.git.ReadFile(ctx, rev, CampaignDir+"/"+name+".md")
	switch {
	case err != nil:
		q.logIssue(is.Number, "campaign %s: reading its goal file: %v", name, err)
	case has:
		nd.Work.Doc = append(nd.Work.Doc, fmt.Sprintf("\n## The campaign: %s\n\nThis issue is part of the campaign %q. Its goal (%s/%s.md):\n\n%s\n", name, name, CampaignDir, name, strings.TrimSpace(string(goal)))...)
	}
}
