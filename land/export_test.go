package land

// Unexported checks, for tests that feed them what a repository in trouble
// gives.
var (
	OutOfScope = (*Owner).outOfScope
	Markers    = (*Owner).markers
)
