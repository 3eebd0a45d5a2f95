// Package web serves a running driver's state, events, logs and controls
// as a JSON API under /api/v1, and a page embedded in the binary that
// draws the graph and follows the run live. It only reads: the state comes
// from the scheduler's event stream (Model), and the controls are handed
// to an Actions implementation the composition provides (the same switch
// files the `pause`/`resume`/`drain`/`retry` commands write), so there is
// one home for each rule.
//
// Every request needs the token the driver writes to
// .claudopilot/state/web-token, as a bearer header or as the cookie that a
// one-time login URL sets; POSTs from a browser must come from the page's
// own origin.
package web
