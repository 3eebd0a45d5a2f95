package roadmap

import (
	"strings"
	"time"

	"github.com/claudopilot/claudopilot/manifest"
)

// The graph algorithms here are linear in phases plus deps. The graph
// library's PreventCycles and TopologicalSort took 22 s and 8 s at 10k
// phases on our machines, so they are never called.

// cycles finds every strongly connected component with more than one phase
// (Tarjan, iterative so 10k-deep chains cannot overflow the stack) and
// returns one concrete cycle from each, starting at its first phase in file
// order and following "depends on" edges.
func (r *Roadmap) cycles() [][]*Node {
	n := len(r.Nodes)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]*Node
	next := 0
	type frame struct{ v, e int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			deps := r.Nodes[f.v].deps
			if f.e < len(deps) {
				w := deps[f.e]
				f.e++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				if low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != index[v] {
				continue
			}
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				out = append(out, r.cycleIn(comp))
			}
		}
	}
	// Report cycles in file order of their first phase.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j][0].Index < out[j-1][0].Index; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// cycleErrors is cycles as errors, with the line of each cycle's first
// phase.
func (r *Roadmap) cycleErrors() (errs []*CycleError, lines []int) {
	for _, c := range r.cycles() {
		ids := make([]string, len(c))
		for i, n := range c {
			ids[i] = n.ID
		}
		errs, lines = append(errs, &CycleError{Path: ids}), append(lines, c[0].Line)
	}
	return errs, lines
}

// Cycles is the roadmap's cycle check over any graph: ids in order, and
// each one's deps (a dep that names no id is ignored). It returns one
// cycle per strongly connected component, in the order of the ids, worded
// as for a manifest. The issue queue checks its graph of issues and
// phases with it.
func Cycles(ids []string, deps func(id string) []string) []*CycleError {
	r := &Roadmap{Nodes: make([]*Node, len(ids))}
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		r.Nodes[i] = &Node{Phase: manifest.Phase{ID: id}, Index: i}
		at[id] = i
	}
	for i, id := range ids {
		for _, d := range deps(id) {
			if j, ok := at[d]; ok {
				r.edge(r.Nodes[i], r.Nodes[j])
			}
		}
	}
	errs, _ := r.cycleErrors()
	return errs
}

// cycleIn walks one cycle inside a strongly connected component.
func (r *Roadmap) cycleIn(comp []int) []*Node {
	in := make(map[int]bool, len(comp))
	start := comp[0]
	for _, v := range comp {
		in[v] = true
		if v < start {
			start = v
		}
	}
	// BFS from start over deps inside the component until an edge returns
	// to start; parents give the shortest such cycle.
	parent := map[int]int{start: -1}
	queue := []int{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range r.Nodes[v].deps {
			if !in[w] {
				continue
			}
			if w == start {
				var rev []*Node
				for x := v; x != -1; x = parent[x] {
					rev = append(rev, r.Nodes[x])
				}
				path := make([]*Node, len(rev))
				for i, nd := range rev {
					path[len(rev)-1-i] = nd
				}
				return path
			}
			if _, ok := parent[w]; !ok {
				parent[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []*Node{r.Nodes[start]} // unreachable for a real component
}

// Order returns the phases in a topological order (deps first), ties in
// file order among phases whose deps are all placed.
func (r *Roadmap) Order() []*Node {
	indeg := make([]int, len(r.Nodes))
	for _, n := range r.Nodes {
		indeg[n.Index] = len(n.deps)
	}
	out := make([]*Node, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		if indeg[n.Index] == 0 {
			out = append(out, n)
		}
	}
	for i := 0; i < len(out); i++ {
		for _, d := range out[i].dependents {
			indeg[d]--
			if indeg[d] == 0 {
				out = append(out, r.Nodes[d])
			}
		}
	}
	return out
}

// Levels returns the work left in waves: wave k holds the unmerged phases
// whose longest chain of unmerged deps has k phases. Every phase in a wave
// can run together once the waves before it are merged. Merged phases are
// done and belong to no wave.
func (r *Roadmap) Levels(state func(*Node) manifest.State) [][]*Node {
	level := make([]int, len(r.Nodes))
	var waves [][]*Node
	for _, n := range r.Order() {
		if state(n) == manifest.Merged {
			level[n.Index] = -1
			continue
		}
		l := 0
		for _, d := range n.deps {
			if level[d]+1 > l {
				l = level[d] + 1
			}
		}
		level[n.Index] = l
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], n)
	}
	for _, w := range waves {
		sortByIndex(w)
	}
	return waves
}

func sortByIndex(ns []*Node) {
	for i := 1; i < len(ns); i++ {
		for j := i; j > 0 && ns[j].Index < ns[j-1].Index; j-- {
			ns[j], ns[j-1] = ns[j-1], ns[j]
		}
	}
}

// CriticalPath returns the heaviest chain of work left, deps first, and its
// weight: estimates when the roadmap has any (weighted true), else the
// number of phases. Merged phases are done and are not on it.
func (r *Roadmap) CriticalPath(state func(*Node) manifest.State) (path []*Node, total time.Duration, weighted bool) {
	w, weighted := r.weights()
	dist := make([]time.Duration, len(r.Nodes))
	prev := make([]int, len(r.Nodes))
	best := -1
	for _, n := range r.Order() {
		prev[n.Index] = -1
		if state(n) == manifest.Merged {
			continue
		}
		for _, d := range n.deps {
			if dist[d] > dist[n.Index] {
				dist[n.Index] = dist[d]
				prev[n.Index] = d
			}
		}
		dist[n.Index] += w[n.Index]
		if best < 0 || dist[n.Index] > dist[best] {
			best = n.Index
		}
	}
	if best < 0 {
		return nil, 0, weighted
	}
	for v := best; v >= 0; v = prev[v] {
		path = append(path, r.Nodes[v])
	}
	for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
		path[i], path[j] = path[j], path[i]
	}
	return path, dist[best], weighted
}

// Remaining returns, for each phase by file index, the weight of the
// heaviest chain of unmerged work that starts with it: the scheduling
// priority. Merged phases weigh nothing.
func (r *Roadmap) Remaining(state func(*Node) manifest.State) []time.Duration {
	w, _ := r.weights()
	rem := make([]time.Duration, len(r.Nodes))
	order := r.Order()
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		var tail time.Duration
		for _, d := range n.dependents {
			if rem[d] > tail {
				tail = rem[d]
			}
		}
		if state(n) != manifest.Merged {
			tail += w[n.Index]
		}
		rem[n.Index] = tail
	}
	return rem
}

// FileState reads a phase's state as the manifest gives it.
func FileState(n *Node) manifest.State { return n.State }

// Counts returns how many phases are in each state.
func (r *Roadmap) Counts() map[manifest.State]int {
	c := make(map[manifest.State]int, len(manifest.States))
	for _, n := range r.Nodes {
		c[n.State]++
	}
	return c
}

// Overlap reports whether two declared scopes share a path: one names a
// path equal to, or a folder above, a path of the other.
func Overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if scopeCovers(x, y) || scopeCovers(y, x) {
				return true
			}
		}
	}
	return false
}

func scopeCovers(dir, p string) bool {
	dir = strings.TrimSuffix(strings.TrimPrefix(dir, "./"), "/")
	p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// ScopeClashes returns pairs of phases whose declared scopes overlap and
// that could run at the same time (neither depends on the other, directly
// or not). The scheduler keeps them apart, but the roadmap author should
// know they will be serialized.
func (r *Roadmap) ScopeClashes() [][2]*Node {
	var owned []*Node
	for _, n := range r.Nodes {
		if len(n.Owns) > 0 {
			owned = append(owned, n)
		}
	}
	if len(owned) < 2 || len(owned) > 2000 {
		return nil
	}
	var out [][2]*Node
	for i, a := range owned {
		var reach map[int]bool
		for _, b := range owned[i+1:] {
			if !Overlap(a.Owns, b.Owns) {
				continue
			}
			if reach == nil {
				reach = r.reachable(a)
			}
			if reach[b.Index] || r.reachable(b)[a.Index] {
				continue
			}
			out = append(out, [2]*Node{a, b})
		}
	}
	return out
}

// reachable returns every phase that depends on n, directly or not.
func (r *Roadmap) reachable(n *Node) map[int]bool {
	seen := map[int]bool{}
	stack := append([]int(nil), n.dependents...)
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[v] {
			continue
		}
		seen[v] = true
		stack = append(stack, r.Nodes[v].dependents...)
	}
	return seen
}
