package schedule

import (
	"fmt"
	"testing"
)

// forkJoin is a fork, two chains of n nodes and a join on two equal devices that pay a call
// of 1 per stage and a transfer of 1 per tensor: a single device takes 2n+2 plus its call,
// a plan that runs one chain on each device n+2 plus 2 transfers and 3 calls — and moving
// any single node off the device pays two transfers and a call for a node of 1.
func forkJoin(n int) *Problem {
	p := &Problem{Devices: []Device{{Name: "a", CallCost: 1}, {Name: "b", CallCost: 1}}, Congestion: true,
		Links: [][]Link{{{}, {Bandwidth: 1e9, Latency: 1}}, {{Bandwidth: 1e9, Latency: 1}, {}}}}
	add := func(name string) int {
		p.Nodes = append(p.Nodes, Node{Name: name, Time: []float64{1, 1}})
		return len(p.Nodes) - 1
	}
	fork := add("fork")
	var ends []int
	for c := range 2 {
		prev := fork
		for i := range n {
			x := add(fmt.Sprintf("c%d.%d", c, i))
			p.Edges = append(p.Edges, Edge{From: prev, To: x, Bytes: 1})
			prev = x
		}
		ends = append(ends, prev)
	}
	join := add("join")
	for _, e := range ends {
		p.Edges = append(p.Edges, Edge{From: e, To: join, Bytes: 1})
	}
	return p
}

// TestRegionMovesRunBranchesInParallel: from the single-device plan, region moves put a
// whole chain on the other device (the plan of n+7 instead of 2n+3), where no single-node
// move improves the plan.
func TestRegionMovesRunBranchesInParallel(t *testing.T) {
	const n = 10
	in, err := prepare(forkJoin(n))
	if err != nil {
		t.Fatal(err)
	}
	dev := in.bestDevice().Device
	sim := newLatSim(in)
	start := sim.eval(dev, in.bfs)
	if start != 2*n+3 {
		t.Fatalf("single-device plan %g, want %d", start, 2*n+3)
	}
	for i := range dev { // no single-node move helps
		d := append([]int(nil), dev...)
		d[i] = 1 - d[i]
		if f := sim.eval(d, in.bfs); f < start {
			t.Fatalf("moving node %d alone gives %g < %g: the instance does not test region moves", i, f, start)
		}
	}
	work := 0
	got := in.regionSearch(dev, in.bfs, stageCap{perDevice: 2}, func() bool { return false }, &work)
	if got > n+7 {
		t.Errorf("region moves reach %g (%d moves judged), want at most %d (a chain on each device)", got, work, n+7)
	}
	sc, err := in.simulate(&Placement{Device: dev})
	if err != nil || sc.Makespan > got+1e-9 {
		t.Errorf("the simulator gives %v (%v) for the plan region moves judged %g", sc, err, got)
	}
}
