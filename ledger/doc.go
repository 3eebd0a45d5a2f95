// Package ledger reads what an agent run cost from the agent's own output
// and adds attempts up. Claude Code's stream-json ends with a "result"
// event carrying total_cost_usd, token usage, turns, duration and the
// session id; Codex's --json reports token usage per turn and a thread id.
// A figure the output does not give stays unknown — it is never taken as
// zero, because a zero would make a budget look unspent.
package ledger
