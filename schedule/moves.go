package schedule

import (
	"math"
	"slices"
)

// Region moves: a local search over latency placements whose moves put a whole connected
// region — a path of up to maxPath nodes, or the first k nodes reached from a node, along
// edges either way (a ball) or forward only (a cone) — on one device. Moving one node of a
// branch to an idle device pays a stage call and two transfers for little work, so a search
// of single-node moves (EA, SA) finds no plan that runs a branch beside the rest; moving the
// branch at once prices its calls and transfers against the whole branch's work. The
// simulator judges every move (calls, transfers, congestion and memory priced), and a move
// is kept when it lowers the makespan (first improvement), pass after pass until a pass
// improves nothing or stop says so.

const (
	maxPath      = 10 // longest path moved at once
	pathsPerNode = 40 // paths enumerated from one node
)

// regions lists the node sets of the moves, each sorted, without duplicates.
func (in *inst) regions() [][]int {
	var sets [][]int
	seen := map[string]bool{}
	key := make([]byte, 0, 64)
	addSet := func(s []int) {
		c := append([]int(nil), s...)
		slices.Sort(c)
		key = key[:0]
		for _, x := range c {
			key = append(key, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
		}
		if seen[string(key)] {
			return
		}
		seen[string(key)] = true
		sets = append(sets, c)
	}
	path := make([]int, 0, maxPath)
	for i := range in.numNodes {
		count := 0
		var walk func()
		walk = func() {
			if count >= pathsPerNode {
				return
			}
			addSet(path)
			count++
			if len(path) >= maxPath {
				return
			}
			for _, j := range in.succs[path[len(path)-1]] {
				path = append(path, j)
				walk()
				path = path[:len(path)-1]
			}
		}
		path = append(path[:0], i)
		walk()
	}
	mark := make([]int, in.numNodes)
	for i := range mark {
		mark[i] = -1
	}
	stamp := 0
	grow := func(i, k int, back bool) []int {
		stamp++
		mark[i] = stamp
		q := []int{i}
		for h := 0; h < len(q) && len(q) < k; h++ {
			x := q[h]
			for _, nb := range [][]int{in.succs[x], in.preds[x]} {
				for _, y := range nb {
					if mark[y] != stamp && len(q) < k {
						mark[y] = stamp
						q = append(q, y)
					}
				}
				if !back {
					break
				}
			}
		}
		return q
	}
	for i := range in.numNodes {
		for _, k := range []int{4, 8, 16, 32} {
			if k > in.numNodes/2 {
				break
			}
			addSet(grow(i, k, true))
			addSet(grow(i, k, false))
		}
	}
	return sets
}

// regionSearch improves the latency placement dev (changed in place) by region moves and
// returns its makespan when the simulator takes the nodes in order (a topological order:
// the start plan's, so that a move keeps the rest of its schedule); stop is asked before
// every move. Plans over the stage cap c, or over memory, are not kept. work counts the
// moves judged.
func (in *inst) regionSearch(dev, order []int, c stageCap, stop func() bool, work *int) float64 {
	sim := newLatSim(in)
	eval := func() float64 {
		*work++
		f := sim.eval(dev, order)
		if math.IsNaN(f) || in.overflow(in.memoryLatency(dev)) > 0 {
			return math.Inf(1)
		}
		if c.total > 0 && sim.nstages > c.total {
			return math.Inf(1)
		}
		if c.perDevice > 0 {
			for _, n := range sim.perDev {
				if n > c.perDevice {
					return math.Inf(1)
				}
			}
		}
		return f
	}
	cur := eval()
	if math.IsInf(cur, 1) {
		return cur
	}
	sets := in.regions()
	old := make([]int, 0, 64)
	for {
		improved := false
		for _, s := range sets {
			for v := range in.numDevices {
				same, ok := true, true
				for _, i := range s {
					same = same && dev[i] == v
					ok = ok && in.canRun(i, v)
				}
				if same || !ok {
					continue
				}
				if stop() {
					return cur
				}
				old = old[:0]
				for _, i := range s {
					old = append(old, dev[i])
					dev[i] = v
				}
				if f := eval(); f < cur*(1-1e-12) {
					cur, improved = f, true
					continue
				}
				for x, i := range s {
					dev[i] = old[x]
				}
			}
		}
		if !improved {
			return cur
		}
	}
}

// startOrder is the topological order of a plan's schedule: nodes by start time.
func (in *inst) startOrder(sc *Schedule) []int {
	key := make([]float64, in.numNodes)
	for x := range key {
		key[x] = math.Inf(1)
	}
	for _, t := range sc.Tasks {
		key[t.Node] = math.Min(key[t.Node], t.Start)
	}
	return in.kahnOrder(key)
}
