package worktree

import "github.com/claudopilot/claudopilot/protect"

// Protected declares the files git itself reads from the tree, for the
// landing's check (package protect): .gitattributes names filters and
// diff and merge drivers that the driver's own git would run (at any
// depth), .gitmodules the submodules a checkout fetches.
func Protected() []protect.Rule {
	return []protect.Rule{
		{Glob: "**/.gitattributes", Why: "read by git: attributes name the filters and merge drivers its checkouts and merges run"},
		{Glob: ".gitmodules", Why: "read by git: the submodules a checkout fetches"},
	}
}
