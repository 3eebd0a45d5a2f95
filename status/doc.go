// Package status is what the manifest, the run journal and the state
// folder say about a roadmap, read without changing anything: the model
// behind `status`, `explain` and the web page's first state. It folds the
// journal's history into one row per node, the manifest's phases and the
// nodes from outside the manifest (issues, "#12") that only the journal
// knows; callers render it.
package status
