package schedule

import (
	"errors"
	"math"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"
)

// Problem is one heterogeneous placement instance.
//
// Latency mode (Batch ≤ 1) minimises the makespan of one input. Batched mode (Batch = L > 1)
// processes L granules (each of GranuleSize inputs) and minimises the makespan of the whole
// batch; throughput is L·GranuleSize / makespan (seed 003 §1.5: not a pipelined steady state).
type Problem struct {
	Nodes   []Node
	Edges   []Edge
	Devices []Device
	// Links[u][v] is the direct link from device u to device v (u ≠ v). A nil matrix, or a
	// zero Bandwidth, means no direct link; transfers then take the widest multi-hop path
	// (Moirai §III-C: the bottleneck bandwidth, the latencies summed). Ignored for edges with
	// explicit Time.
	Links [][]Link
	// Batch is the number of granules L of a batched-throughput problem; 0 or 1 means latency.
	Batch int
	// GranuleSize is the number of inputs in one granule (throughput counts inputs); 0 means 1.
	GranuleSize int
	// Congestion serialises transfers: a device sends one transfer at a time and receives one
	// at a time (Moirai eq. (8), per-device egress and ingress). Without it transfers overlap
	// freely (seed 003's model).
	Congestion bool
}

// Node is one task of the DAG (an operator, or a fused group of operators).
type Node struct {
	Name string
	// Time[u] is the time of one granule (in latency mode: of the input) on device u; +Inf
	// (or a negative value) means the node cannot run on u.
	Time []float64
	// BatchTime[u][p-1] is the time of one batch of p granules on device u, p = 1..Batch
	// (batched mode only). nil means p·Time[u] (no batching gain); a nil row likewise.
	BatchTime [][]float64
	// Weight is the memory resident on every device that runs the node (weights, bytes).
	Weight float64
	// Act is the memory resident per granule the device processes (activations, bytes).
	Act float64
}

// Edge is a data dependency: To consumes a tensor of From.
type Edge struct {
	From, To int
	// Bytes is the size of the tensor of one granule.
	Bytes float64
	// Time, when not nil, is the K×K matrix of transfer times of one granule (Moirai's pc
	// columns); it overrides Bytes and the links, and k granules take k·Time[u][v]. An edge
	// whose off-diagonal times are all zero is free: it creates no transfer.
	Time [][]float64
}

// Device is one processor.
type Device struct {
	Name string
	// Memory is the capacity in bytes; 0 means unlimited.
	Memory float64
	// BatchSizes are the batch sizes (in granules) the device supports in batched mode;
	// nil means every size 1..Batch.
	BatchSizes []int
	// CallCost is the fixed time of one stage call on the device (a session run, its
	// synchronisation, the hand-off through the host). A stage is a run of consecutive tasks
	// on one device that one call executes; a task opens a new stage — and its time grows by
	// CallCost — when it reads a tensor from another device, or when it is the device's first
	// task; see opensStage. In batched mode the same rule applies to a node's batch on a
	// device: it opens a stage when one of its granules reads a non-free edge from a granule
	// on another device, or when it is a source's batch and the device's first.
	CallCost float64
}

// Link is a direct connection from one device to another.
type Link struct {
	Bandwidth float64 // bytes per time unit; 0 means no direct link
	Latency   float64 // time per transfer
}

// inst is a validated Problem with the derived data every method needs.
type inst struct {
	problem                           *Problem
	numNodes, numDevices, numGranules int
	// granuleTime[i][u]: one granule of node i on device u; batchTime[i][u][c]: a batch of c
	// granules (c = 0..L, batchTime[..][0] = 0).
	granuleTime [][]float64
	batchTime   [][][]float64
	// sizeOK[u][c]: device u supports a batch of c granules (c = 1..L).
	sizeOK       [][]bool
	preds, succs [][]int // node adjacency (unique, sorted)
	inE, outE    [][]int // edge indices per node
	free         []bool  // free[e]: the edge never needs a transfer
	// routeBW, routeLat: the effective link u→v after routing (bw 0 = unreachable).
	routeBW, routeLat [][]float64
	topo              []int             // Kahn by index
	succCSR, predCSR  dag.CSR           // preds and succs in graph/dag's form (for its Kahn)
	bfs               []int             // breadth-first topological order (the thesis's gene order)
	topoPos           []int             // topoPos[i]: index of i in topo
	reach             *dag.Reachability // from graph/dag (a node reaches itself); see reaches
	capacity          []float64         // capacity[u]: memory of device u; +Inf when unlimited
	callCost          []float64         // callCost[u]: Devices[u].CallCost
	source            []bool            // source[i]: node i has no non-free in-edge (it reads no transfer)
	// sourceCalls: a source that is its device's first task pays the device's call (true
	// but in MILP-SPLIT's sub-problems, whose devices may have run earlier modules).
	sourceCalls bool
	// pinnedGranules[i], when not nil, is node i's fixed granule map (ghosts of batched sub-problems).
	pinnedGranules [][]int
	// chains[e], when not nil, is the chain that edge e stands for in a problem with its
	// chains contracted (bounds_chains.go; the capped module DP's only).
	chains []*chainEdge
}

func (in *inst) latency() bool { return in.numGranules <= 1 }

// opensStage reports whether node j on device v starts a new stage (one runtime call) when
// its predecessors sit on dev and first says that no task has run on v yet: it reads a
// transferred tensor from another device, or it is a source and the first task of v. A stage
// is exactly a maximal run of a device's tasks, in the order the device runs them, that starts
// at such a node, and each stage pays its device's CallCost once. The stage graph of any
// schedule is acyclic: a cross-device edge ends at the first task of its stage, which runs
// after the producer, so ordering the stages by their first task (in a topological order
// consistent with the schedule) orders every edge forward.
func (in *inst) opensStage(j, v int, dev []int, first bool) bool {
	if in.source[j] {
		return first
	}
	for _, e := range in.inE[j] {
		if !in.free[e] && dev[in.problem.Edges[e].From] != v {
			return true
		}
	}
	return false
}

// stageCall is the call node j pays on device v when opens (opensStage) says it opens a
// stage: the device's CallCost, but nothing for a source where sourceCalls is off.
func (in *inst) stageCall(j, v int, opens bool) float64 {
	if !opens || (in.source[j] && !in.sourceCalls) {
		return 0
	}
	return in.callCost[v]
}

// hasCalls reports whether some device has a stage-call cost.
func (in *inst) hasCalls() bool {
	for _, c := range in.callCost {
		if c > 0 {
			return true
		}
	}
	return false
}

// comm is the transfer time of edge e for c granules from device u to device v
// (0 when u == v or the edge is free, +Inf when no route exists).
func (in *inst) comm(e, u, v, c int) float64 {
	if u == v || in.free[e] {
		return 0
	}
	ed := &in.problem.Edges[e]
	if ed.Time != nil {
		return float64(c) * ed.Time[u][v]
	}
	bw := in.routeBW[u][v]
	if bw <= 0 {
		return math.Inf(1)
	}
	return in.routeLat[u][v] + float64(c)*ed.Bytes/bw
}

// canRun reports whether node i may run (some batch) on device u.
func (in *inst) canRun(i, u int) bool { return !math.IsInf(in.granuleTime[i][u], 1) }

// devicesOf lists the devices node c can run on; c < 0 (no node: a block without an entry or
// exit cut) gives the one pseudo-device -1.
func (in *inst) devicesOf(c int) []int {
	if c < 0 {
		return []int{-1}
	}
	var d []int
	for u := range in.numDevices {
		if in.canRun(c, u) {
			d = append(d, u)
		}
	}
	return d
}

// invalid reports what is wrong with a Problem or a Placement: a *diag.Error of kind input,
// "schedule: …".
func invalid(format string, args ...any) error {
	return diag.Input("schedule: "+format, args...)
}

// CycleError reports that the edges do not form a DAG; Nodes are the names of the nodes of a
// cycle in dependency order (graph/dag's one cycle error).
type CycleError = dag.CycleError

// Validate checks the problem: shapes of the arrays, finite non-negative numbers, a DAG,
// every node runnable somewhere, every batch splittable.
func (p *Problem) Validate() error {
	_, err := prepare(p)
	return err
}

func prepare(p *Problem) (*inst, error) {
	if p == nil {
		return nil, errors.New("schedule: nil problem")
	}
	n, k := len(p.Nodes), len(p.Devices)
	if n == 0 {
		return nil, invalid("the problem has no nodes")
	}
	if k == 0 {
		return nil, invalid("the problem has no devices")
	}
	l := max(p.Batch, 1)
	in := &inst{problem: p, numNodes: n, numDevices: k, numGranules: l, sourceCalls: true}
	in.capacity = make([]float64, k)
	for u, d := range p.Devices {
		if d.Memory < 0 || math.IsNaN(d.Memory) {
			return nil, invalid("device %d (%s) has memory %v", u, d.Name, d.Memory)
		}
		in.capacity[u] = d.Memory
		if d.Memory == 0 {
			in.capacity[u] = math.Inf(1)
		}
		if d.CallCost < 0 || math.IsNaN(d.CallCost) || math.IsInf(d.CallCost, 0) {
			return nil, invalid("device %d (%s) has call cost %v", u, d.Name, d.CallCost)
		}
		in.callCost = append(in.callCost, d.CallCost)
	}
	in.sizeOK = make([][]bool, k)
	for u, d := range p.Devices {
		in.sizeOK[u] = make([]bool, l+1)
		if d.BatchSizes == nil {
			for c := 1; c <= l; c++ {
				in.sizeOK[u][c] = true
			}
			continue
		}
		for _, c := range d.BatchSizes {
			if c < 1 || c > l {
				return nil, invalid("device %d (%s) supports batch size %d outside 1..%d", u, d.Name, c, l)
			}
			in.sizeOK[u][c] = true
		}
	}
	if p.GranuleSize < 0 {
		return nil, invalid("granule size %d is negative", p.GranuleSize)
	}
	in.granuleTime = make([][]float64, n)
	in.batchTime = make([][][]float64, n)
	for i := range p.Nodes {
		nd := &p.Nodes[i]
		if len(nd.Time) != k {
			return nil, invalid("node %d (%s) has %d times for %d devices", i, nd.Name, len(nd.Time), k)
		}
		if nd.Weight < 0 || nd.Act < 0 || math.IsNaN(nd.Weight) || math.IsNaN(nd.Act) || math.IsInf(nd.Weight, 0) || math.IsInf(nd.Act, 0) {
			return nil, invalid("node %d (%s) has memory weight %v, act %v", i, nd.Name, nd.Weight, nd.Act)
		}
		in.granuleTime[i] = make([]float64, k)
		in.batchTime[i] = make([][]float64, k)
		if nd.BatchTime != nil && len(nd.BatchTime) != k {
			return nil, invalid("node %d (%s) has batch times for %d devices, not %d", i, nd.Name, len(nd.BatchTime), k)
		}
		runnable := false
		for u := range k {
			x := nd.Time[u]
			if math.IsNaN(x) {
				return nil, invalid("node %d (%s) has time NaN on device %d", i, nd.Name, u)
			}
			if x < 0 || math.IsInf(x, 1) {
				x = math.Inf(1)
			} else {
				runnable = true
			}
			in.granuleTime[i][u] = x
			row := make([]float64, l+1)
			var given []float64
			if nd.BatchTime != nil {
				given = nd.BatchTime[u]
			}
			if given != nil && len(given) != l {
				return nil, invalid("node %d (%s) has %d batch times on device %d, not %d", i, nd.Name, len(given), u, l)
			}
			for c := 1; c <= l; c++ {
				y := float64(c) * x
				if given != nil {
					y = given[c-1]
					if math.IsNaN(y) {
						return nil, invalid("node %d (%s) has batch time NaN on device %d", i, nd.Name, u)
					}
					if y < 0 || math.IsInf(x, 1) {
						y = math.Inf(1)
					}
				}
				row[c] = y
			}
			in.batchTime[i][u] = row
		}
		if !runnable {
			return nil, invalid("node %d (%s) cannot run on any device", i, nd.Name)
		}
	}
	if err := in.prepareLinks(); err != nil {
		return nil, err
	}
	in.preds = make([][]int, n)
	in.succs = make([][]int, n)
	in.inE = make([][]int, n)
	in.outE = make([][]int, n)
	in.free = make([]bool, len(p.Edges))
	for e := range p.Edges {
		ed := &p.Edges[e]
		if ed.From < 0 || ed.From >= n || ed.To < 0 || ed.To >= n {
			return nil, invalid("edge %d refers to node %d→%d of %d", e, ed.From, ed.To, n)
		}
		if ed.From == ed.To {
			return nil, invalid("edge %d is a self-loop on node %d (%s)", e, ed.From, p.Nodes[ed.From].Name)
		}
		if ed.Bytes < 0 || math.IsNaN(ed.Bytes) || math.IsInf(ed.Bytes, 0) {
			return nil, invalid("edge %d has %v bytes", e, ed.Bytes)
		}
		if ed.Time != nil {
			if len(ed.Time) != k {
				return nil, invalid("edge %d has a %d-row transfer-time matrix for %d devices", e, len(ed.Time), k)
			}
			allZero := true
			for u := range k {
				if len(ed.Time[u]) != k {
					return nil, invalid("edge %d has a transfer-time row of %d for %d devices", e, len(ed.Time[u]), k)
				}
				for v := range k {
					x := ed.Time[u][v]
					if u != v && (x < 0 || math.IsNaN(x)) {
						return nil, invalid("edge %d has transfer time %v from device %d to %d", e, x, u, v)
					}
					if u != v && x != 0 {
						allZero = false
					}
				}
			}
			in.free[e] = allZero
		}
		in.inE[ed.To] = append(in.inE[ed.To], e)
		in.outE[ed.From] = append(in.outE[ed.From], e)
		in.preds[ed.To] = append(in.preds[ed.To], ed.From)
		in.succs[ed.From] = append(in.succs[ed.From], ed.To)
	}
	for i := range n {
		in.preds[i] = sortedUnique(in.preds[i])
		in.succs[i] = sortedUnique(in.succs[i])
	}
	in.source = make([]bool, n)
	for i := range n {
		in.source[i] = true
		for _, e := range in.inE[i] {
			in.source[i] = in.source[i] && in.free[e]
		}
	}
	if err := in.orders(); err != nil {
		return nil, err
	}
	in.reach = dag.Reach(in.succCSR, in.topo)
	if l > 1 {
		if err := in.checkSplits(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// prepareLinks computes the routed link of every ordered device pair: the widest path
// (largest bottleneck bandwidth), and among those the smallest summed latency.
func (in *inst) prepareLinks() error {
	p, k := in.problem, in.numDevices
	if p.Links != nil && len(p.Links) != k {
		return invalid("link matrix has %d rows for %d devices", len(p.Links), k)
	}
	bw := make([][]float64, k)
	lat := make([][]float64, k)
	for u := range k {
		bw[u] = make([]float64, k)
		lat[u] = make([]float64, k)
		if p.Links == nil {
			continue
		}
		if len(p.Links[u]) != k {
			return invalid("link matrix row %d has %d entries for %d devices", u, len(p.Links[u]), k)
		}
		for v := range k {
			lk := p.Links[u][v]
			if lk.Bandwidth < 0 || lk.Latency < 0 || math.IsNaN(lk.Bandwidth) || math.IsNaN(lk.Latency) || math.IsInf(lk.Latency, 0) {
				return invalid("link %d→%d has bandwidth %v, latency %v", u, v, lk.Bandwidth, lk.Latency)
			}
			if u != v {
				bw[u][v], lat[u][v] = lk.Bandwidth, lk.Latency
			}
		}
	}
	// Widest path (max–min) by Floyd–Warshall.
	wide := make([][]float64, k)
	for u := range k {
		wide[u] = append([]float64(nil), bw[u]...)
		wide[u][u] = math.Inf(1)
	}
	for w := range k {
		for u := range k {
			for v := range k {
				if b := math.Min(wide[u][w], wide[w][v]); b > wide[u][v] {
					wide[u][v] = b
				}
			}
		}
	}
	in.routeBW = make([][]float64, k)
	in.routeLat = make([][]float64, k)
	for u := range k {
		in.routeBW[u] = make([]float64, k)
		in.routeLat[u] = make([]float64, k)
		// Among links of bandwidth ≥ wide[u][v], shortest latency (Bellman–Ford on K nodes).
		for v := range k {
			if u == v || wide[u][v] <= 0 {
				continue
			}
			need := wide[u][v]
			dist := make([]float64, k)
			for x := range dist {
				dist[x] = math.Inf(1)
			}
			dist[u] = 0
			for range k {
				for a := range k {
					for b := range k {
						if a != b && bw[a][b] >= need && dist[a]+lat[a][b] < dist[b] {
							dist[b] = dist[a] + lat[a][b]
						}
					}
				}
			}
			in.routeBW[u][v] = need
			in.routeLat[u][v] = dist[v]
		}
	}
	return nil
}

// orders computes the index-stable Kahn order and the BFS (FIFO Kahn) order, or a CycleError.
func (in *inst) orders() error {
	n := in.numNodes
	indeg := make([]int, n)
	for i := range n {
		indeg[i] = len(in.preds[i])
	}
	// Kahn with the smallest index first.
	succ := dag.FromLists(in.succs)
	in.succCSR, in.predCSR = succ, dag.FromLists(in.preds)
	order, cyc := dag.Topological(succ)
	if cyc != nil {
		return diag.Wrap(diag.KindInput, dag.NewCycleError("schedule: the graph", cyc, func(i int) string { return in.problem.Nodes[i].Name }))
	}
	in.topo = order
	in.topoPos = make([]int, n)
	for x, i := range in.topo {
		in.topoPos[i] = x
	}
	// Breadth-first: a FIFO queue seeded with the sources in index order.
	deg := append([]int(nil), indeg...)
	queue := make([]int, 0, n)
	for i := range n {
		if deg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for x := 0; x < len(queue); x++ {
		for _, j := range in.succs[queue[x]] {
			if deg[j]--; deg[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	in.bfs = queue
	return nil
}

// checkSplits makes sure every node has at least one split of the L granules into supported
// batch sizes on devices where it can run.
func (in *inst) checkSplits() error {
	for i := range in.numNodes {
		if len(in.splitsOf(i, 1)) == 0 {
			return invalid("node %d (%s): no split of %d granules into the supported batch sizes of the devices it can run on", i, in.problem.Nodes[i].Name, in.numGranules)
		}
	}
	return nil
}

// splitsOf enumerates the count vectors (granules per device) of node i, at most limit of
// them (0: no limit), in lexicographic order of the counts.
func (in *inst) splitsOf(i, limit int) [][]int {
	var out [][]int
	cur := make([]int, in.numDevices)
	var rec func(u, left int) bool
	rec = func(u, left int) bool {
		if u == in.numDevices {
			if left == 0 {
				out = append(out, append([]int(nil), cur...))
				if limit > 0 && len(out) >= limit {
					return false
				}
			}
			return true
		}
		for c := left; c >= 0; c-- {
			if c > 0 && (!in.sizeOK[u][c] || math.IsInf(in.batchTime[i][u][c], 1)) {
				continue
			}
			cur[u] = c
			if !rec(u+1, left-c) {
				return false
			}
		}
		cur[u] = 0
		return true
	}
	rec(0, in.numGranules)
	return out
}

// NodeDevices lists, for convenience, the devices where node i can run.
func (p *Problem) NodeDevices(i int) []int {
	var out []int
	for u, x := range p.Nodes[i].Time {
		if x >= 0 && !math.IsInf(x, 1) && !math.IsNaN(x) {
			out = append(out, u)
		}
	}
	return out
}

func sortedUnique(s []int) []int { return dag.SortedUnique(s) }

// bitset is a fixed-size set of node indices.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i>>6] |= 1 << uint(i&63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<uint(i&63)) != 0 }
func (b bitset) or(c bitset) {
	for x := range b {
		b[x] |= c[x]
	}
}

// reaches reports whether j is reachable from i by a non-empty path (i never reaches itself:
// the graph is acyclic).
func (in *inst) reaches(i, j int) bool { return i != j && in.reach.Reaches(i, j) }

// comparable reports whether i and j are ordered by a path.
func (in *inst) comparable(i, j int) bool { return in.reaches(i, j) || in.reaches(j, i) }
