//go:build race

package manifest

// raceEnabled lets the heaviest property tests sample more sparsely under
// the race detector, which slows memory-bound loops by an order of magnitude.
const raceEnabled = true
