// The solvers' problems as Plan builds them, for the programs that benchmark the solvers on
// the problems the product plans (bench/partition, bench/schedule, bench/overshoot).

package planner

import (
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/graph/blocks"
	"github.com/onnxpart/onnxpart/partition"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// Prices are the node times of g on every device of a cluster, as Plan's price phase sets
// them without fusion: Times[d][v] is node v's time on device d in seconds, Overheads[d][v]
// its fixed part (what a batch does not scale), Table the cluster's routes and call costs.
type Prices struct {
	Times, Overheads [][]float64
	Table            *profile.CostTable
}

// Price prices g on every device of cm's cluster.
func Price(g *graph.Graph, cm *profile.CostModel) Prices {
	n := len(cm.Cluster().Devices)
	p := Prices{Times: make([][]float64, n), Overheads: make([][]float64, n), Table: cm.Costs(&graph.Graph{})}
	for d := range n {
		// Unfused pricing cannot fail.
		p.Times[d], _ = cm.KernelTimes(g, nil, d)
		p.Overheads[d], _ = cm.KernelOverheads(g, nil, d)
	}
	return p
}

// problemRun is the run Plan has when it solves g unfused on devs of c with options opt.
func problemRun(g *graph.Graph, c *profile.Cluster, pr Prices, devs []int, opt Options) (*run, error) {
	pairs, err := g.StatePairs(nil)
	if err != nil {
		return nil, err
	}
	return &run{g: g, c: c, opt: opt, work: g, times: pr.Times, overs: pr.Overheads, table: pr.Table, devs: devs,
		identical: identicalDevices(c, devs), pairs: pairs, nodeMem: workMemory(g, g, g, nil),
		stateReads: stateReads(g, g, nil, pairs), blocks: blocks.Find(g)}, nil
}

// PipelineProblem is the partition problem Plan solves for a throughput pipeline of g on the
// devices devs of c with at most k stages (0: one per device), unfused: node work from the
// prices, memory per node (weights and owned state), tensors at the slowest route's cost.
func PipelineProblem(g *graph.Graph, c *profile.Cluster, pr Prices, devs []int, k int) (*partition.Problem, error) {
	r, err := problemRun(g, c, pr, devs, Options{MaxStages: k})
	if err != nil {
		return nil, err
	}
	pp, err := r.pipelineProblem(nil)
	if err != nil {
		return nil, err
	}
	return pp.problem, nil
}

// PlacementProblem is the schedule problem Plan solves for a latency placement of g on the
// devices devs of c (granules 1), or for a batched placement of granules granules of per
// inputs each, unfused: times in seconds, every node (weight-only ones with free outputs),
// each stage's runtime call, congested transfers, capacities less the devices' reserves.
func PlacementProblem(g *graph.Graph, c *profile.Cluster, pr Prices, devs []int, granules, per int) *schedule.Problem {
	overs := pr.Overheads
	if granules <= 1 && per <= 1 {
		overs = nil // a latency placement does not scale times
	}
	p := placementProblem(placement{c: c, g: g, devs: devs, times: pr.Times, overs: overs, table: pr.Table, granules: granules, per: per})
	applyNodeMemory(p, c, devs, workMemory(g, g, g, nil))
	return p
}
