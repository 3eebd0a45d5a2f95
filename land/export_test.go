package land

// Unexported checks, for tests that feed them what a repository in trouble
// gives.
var (
	OutOfScope = (*Owner).outOfScope
	Changes    = (*Owner).changes
	Markers    = (*Owner).markers
)

// OwnMove moves the base ref to sha as the merge owner does, with ok the
// success the owner saw (false: the update-ref reported an error).
func OwnMove(o *Owner, move func(), sha string, ok bool) {
	o.base.writing(sha)
	move()
	o.base.wrote(sha, ok)
}

// HoldBaseRead calls hold with every value CheckBase reads, between its
// read and its judgement of it.
func HoldBaseRead(o *Owner, hold func(string)) { o.baseRead = hold }
