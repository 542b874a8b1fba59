package schedule

import (
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/graph/dag"
)

// Placement is a solution: where every node runs, and the priorities that order the list
// schedule the simulator builds from it.
//
// The simulator is a non-preemptive list scheduler without insertion: it takes tasks in
// priority order (among those whose predecessors are done; ties by topological position,
// then device) and starts each as early as its inputs, its device and — with congestion —
// the sending device's egress and the receiving device's ingress allow. Given the start
// times of any feasible schedule as priorities it reproduces that schedule or an earlier one,
// which is how MILP solutions are checked.
type Placement struct {
	// Device[i] is the device of node i (latency mode).
	Device []int `json:"device,omitempty"`
	// Granules[i][l] is the device of granule l of node i (batched mode). The granules of a
	// node on one device form one batch, whose size must be supported there.
	Granules [][]int `json:"granules,omitempty"`
	// Order[i] is node i's priority (lower first); nil means the topological position.
	Order []float64 `json:"order,omitempty"`
	// BatchOrder[i][u] is the priority of node i's batch on device u (batched mode); nil
	// means Order.
	BatchOrder [][]float64 `json:"batch_order,omitempty"`
	// EdgeOrder[e] is the priority of edge e's transfer (it matters with congestion); nil
	// means the transfers into a task are taken just before it, earliest-ready first.
	EdgeOrder []float64 `json:"edge_order,omitempty"`
}

// Clone returns a deep copy.
func (pl *Placement) Clone() *Placement {
	if pl == nil {
		return nil
	}
	c := &Placement{
		Device:    append([]int(nil), pl.Device...),
		Order:     append([]float64(nil), pl.Order...),
		EdgeOrder: append([]float64(nil), pl.EdgeOrder...),
	}
	if pl.Device == nil {
		c.Device = nil
	}
	if pl.Order == nil {
		c.Order = nil
	}
	if pl.EdgeOrder == nil {
		c.EdgeOrder = nil
	}
	if pl.Granules != nil {
		c.Granules = make([][]int, len(pl.Granules))
		for i, g := range pl.Granules {
			c.Granules[i] = append([]int(nil), g...)
		}
	}
	if pl.BatchOrder != nil {
		c.BatchOrder = make([][]float64, len(pl.BatchOrder))
		for i, g := range pl.BatchOrder {
			c.BatchOrder[i] = append([]float64(nil), g...)
		}
	}
	return c
}

// Schedule is the simulator's evaluation of a Placement.
type Schedule struct {
	Makespan float64 `json:"makespan"`
	// Throughput is inputs per time unit: Batch·GranuleSize / Makespan (GranuleSize / Makespan
	// in latency mode); 0 when the makespan is 0.
	Throughput float64 `json:"throughput"`
	// Tasks are the batches (in latency mode: the nodes), sorted by start, device, node.
	Tasks []Task `json:"tasks"`
	// Transfers are the messages between devices, sorted by start, edge.
	Transfers []Transfer `json:"transfers"`
	// Memory[u] is the memory resident on device u (Weight once per node used, Act per granule).
	Memory []float64 `json:"memory"`
	// Busy[u] is device u's compute time, stage calls included.
	Busy []float64 `json:"busy"`
	// Stages[u] is the number of stages (runtime calls) on device u.
	Stages []int `json:"stages,omitempty"`
	// Feasible is false when some device's memory exceeds its capacity; Overflow is the total
	// excess in bytes.
	Feasible bool    `json:"feasible"`
	Overflow float64 `json:"overflow"`
}

// Task is one batch of one node on one device (in latency mode: one node).
type Task struct {
	Node     int     `json:"node"`
	Name     string  `json:"name"`
	Device   int     `json:"device"`
	Granules int     `json:"granules"`
	Start    float64 `json:"start"`
	End      float64 `json:"end"`
	// Call is the stage-call time included in [Start, End] (the device's CallCost when the
	// task opens a stage, else 0); Stage numbers the task's stage (stages in the order their
	// first task was scheduled).
	Call  float64 `json:"call,omitempty"`
	Stage int     `json:"stage"`
}

// Transfer is one message of an edge's tensor between two devices.
type Transfer struct {
	Edge     int     `json:"edge"`
	From     int     `json:"from"` // producing node
	To       int     `json:"to"`   // consuming node
	Src      int     `json:"src"`  // sending device
	Dst      int     `json:"dst"`  // receiving device
	Granules int     `json:"granules"`
	Start    float64 `json:"start"`
	End      float64 `json:"end"`
}

// Simulate evaluates a placement of p. It returns an error when the placement is malformed
// (lengths, device indices), puts a node where it cannot run, uses an unsupported batch size,
// or needs a transfer between devices with no route. A placement that overflows memory is
// evaluated and reported with Feasible = false.
func Simulate(p *Problem, pl *Placement) (*Schedule, error) {
	in, err := prepare(p)
	if err != nil {
		return nil, err
	}
	return in.simulate(pl)
}

func (in *inst) simulate(pl *Placement) (*Schedule, error) {
	if pl == nil {
		return nil, invalid("nil placement")
	}
	if err := in.checkPlacement(pl); err != nil {
		return nil, err
	}
	if in.latency() {
		return in.simulateLatency(pl)
	}
	return in.simulateBatched(pl)
}

func (in *inst) checkPlacement(pl *Placement) error {
	if pl.Order != nil && len(pl.Order) != in.numNodes {
		return invalid("placement has %d priorities for %d nodes", len(pl.Order), in.numNodes)
	}
	if pl.EdgeOrder != nil && len(pl.EdgeOrder) != len(in.problem.Edges) {
		return invalid("placement has %d edge priorities for %d edges", len(pl.EdgeOrder), len(in.problem.Edges))
	}
	for _, x := range pl.Order {
		if math.IsNaN(x) {
			return invalid("placement has a NaN priority")
		}
	}
	if in.latency() {
		if len(pl.Device) != in.numNodes {
			return invalid("placement has %d devices for %d nodes", len(pl.Device), in.numNodes)
		}
		for i, u := range pl.Device {
			if u < 0 || u >= in.numDevices {
				return invalid("node %d (%s) is on device %d of %d", i, in.problem.Nodes[i].Name, u, in.numDevices)
			}
			if !in.canRun(i, u) {
				return invalid("node %d (%s) cannot run on device %d (%s)", i, in.problem.Nodes[i].Name, u, in.problem.Devices[u].Name)
			}
		}
		for e := range in.problem.Edges {
			ed := &in.problem.Edges[e]
			if math.IsInf(in.comm(e, pl.Device[ed.From], pl.Device[ed.To], 1), 1) {
				return invalid("edge %d (%s→%s) needs a transfer from device %d to %d, which are not connected",
					e, in.problem.Nodes[ed.From].Name, in.problem.Nodes[ed.To].Name, pl.Device[ed.From], pl.Device[ed.To])
			}
		}
		return nil
	}
	if len(pl.Granules) != in.numNodes {
		return invalid("placement has granule maps for %d nodes, not %d", len(pl.Granules), in.numNodes)
	}
	if pl.BatchOrder != nil && len(pl.BatchOrder) != in.numNodes {
		return invalid("placement has batch priorities for %d nodes, not %d", len(pl.BatchOrder), in.numNodes)
	}
	cnt := make([]int, in.numDevices)
	for i, g := range pl.Granules {
		if len(g) != in.numGranules {
			return invalid("node %d (%s) has %d granules, not %d", i, in.problem.Nodes[i].Name, len(g), in.numGranules)
		}
		if pl.BatchOrder != nil && len(pl.BatchOrder[i]) != in.numDevices {
			return invalid("node %d (%s) has %d batch priorities, not %d", i, in.problem.Nodes[i].Name, len(pl.BatchOrder[i]), in.numDevices)
		}
		clear(cnt)
		for _, u := range g {
			if u < 0 || u >= in.numDevices {
				return invalid("a granule of node %d (%s) is on device %d of %d", i, in.problem.Nodes[i].Name, u, in.numDevices)
			}
			cnt[u]++
		}
		for u, c := range cnt {
			if c == 0 {
				continue
			}
			if !in.sizeOK[u][c] {
				return invalid("node %d (%s) has a batch of %d on device %d (%s), which does not support that size", i, in.problem.Nodes[i].Name, c, u, in.problem.Devices[u].Name)
			}
			if math.IsInf(in.batchTime[i][u][c], 1) {
				return invalid("node %d (%s) cannot run on device %d (%s)", i, in.problem.Nodes[i].Name, u, in.problem.Devices[u].Name)
			}
		}
	}
	for e := range in.problem.Edges {
		ed := &in.problem.Edges[e]
		for l := range in.numGranules {
			u, v := pl.Granules[ed.From][l], pl.Granules[ed.To][l]
			if math.IsInf(in.comm(e, u, v, 1), 1) {
				return invalid("edge %d (%s→%s) needs a transfer from device %d to %d, which are not connected",
					e, in.problem.Nodes[ed.From].Name, in.problem.Nodes[ed.To].Name, u, v)
			}
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------
// Latency mode.

// latSim is the state of a latency-mode list schedule; heuristics drive it node by node.
type latSim struct {
	in                      *inst
	devFree, egFree, inFree []float64
	dev                     []int
	start, end              []float64
	trS, trE                []float64 // per edge (NaN: no transfer)
	busy                    []float64
	call                    []float64 // per node: the stage-call time it paid
	stage                   []int     // per node: its stage (-1: none)
	cur                     []int     // per device: its current stage (-1: none yet)
	perDev                  []int     // per device: its number of stages
	nstages                 int
	makespan                float64
	eg                      []float64 // scratch
	rem                     []int     // scratch
}

func newLatSim(in *inst) *latSim {
	s := &latSim{in: in,
		devFree: make([]float64, in.numDevices), egFree: make([]float64, in.numDevices), inFree: make([]float64, in.numDevices),
		dev: make([]int, in.numNodes), start: make([]float64, in.numNodes), end: make([]float64, in.numNodes),
		trS: make([]float64, len(in.problem.Edges)), trE: make([]float64, len(in.problem.Edges)),
		busy: make([]float64, in.numDevices), eg: make([]float64, in.numDevices),
		call: make([]float64, in.numNodes), stage: make([]int, in.numNodes), cur: make([]int, in.numDevices), perDev: make([]int, in.numDevices),
	}
	s.reset()
	return s
}

func (s *latSim) reset() {
	clear(s.devFree)
	clear(s.egFree)
	clear(s.inFree)
	clear(s.busy)
	for i := range s.dev {
		s.dev[i] = -1
		s.stage[i] = -1
	}
	for u := range s.cur {
		s.cur[u] = -1
	}
	clear(s.perDev)
	s.nstages = 0
	for e := range s.trS {
		s.trS[e], s.trE[e] = math.NaN(), math.NaN()
	}
	s.makespan = 0
}

// place puts node j on device v after all its predecessors have been placed, taking its
// remote input transfers first (earliest-ready first), and returns its finish time. With
// commit false nothing changes.
func (s *latSim) place(j, v int, commit bool) float64 {
	in := s.in
	ready := 0.0
	s.rem = s.rem[:0]
	for _, e := range in.inE[j] {
		i := in.problem.Edges[e].From
		if s.dev[i] == v || in.free[e] {
			ready = math.Max(ready, s.end[i])
			continue
		}
		s.rem = append(s.rem, e)
	}
	if len(s.rem) > 1 {
		sort.Slice(s.rem, func(a, b int) bool {
			ea, eb := s.rem[a], s.rem[b]
			fa, fb := s.end[in.problem.Edges[ea].From], s.end[in.problem.Edges[eb].From]
			if fa != fb {
				return fa < fb
			}
			return ea < eb
		})
	}
	congest := in.problem.Congestion
	if congest && len(s.rem) > 0 {
		copy(s.eg, s.egFree)
	}
	ingress := s.inFree[v]
	for _, e := range s.rem {
		i := in.problem.Edges[e].From
		u := s.dev[i]
		d := in.comm(e, u, v, 1)
		st := s.end[i]
		if congest && d > 0 {
			st = math.Max(st, math.Max(s.eg[u], ingress))
			s.eg[u] = st + d
			ingress = st + d
		}
		if commit {
			s.trS[e], s.trE[e] = st, st+d
		}
		ready = math.Max(ready, st+d)
	}
	opens := in.opensStage(j, v, s.dev, s.cur[v] < 0)
	call := in.stageCall(j, v, opens)
	dur := in.granuleTime[j][v] + call
	st := ready
	if dur > 0 {
		st = math.Max(st, s.devFree[v])
	}
	fin := st + dur
	if commit {
		s.openStage(j, v, opens, call)
		if congest && len(s.rem) > 0 {
			copy(s.egFree, s.eg)
			s.inFree[v] = ingress
		}
		if dur > 0 {
			s.devFree[v] = fin
			s.busy[v] += dur
		}
		s.dev[j], s.start[j], s.end[j] = v, st, fin
		s.makespan = math.Max(s.makespan, fin)
	}
	return fin
}

// openStage records node j's stage on device v: a new one when it opens one.
func (s *latSim) openStage(j, v int, opens bool, call float64) {
	if opens {
		s.cur[v] = s.nstages
		s.nstages++
		s.perDev[v]++
	}
	s.stage[j], s.call[j] = s.cur[v], call
}

// evalLatency returns the makespan of dev scheduled in the given node order (a topological
// order), reusing s.
func (s *latSim) eval(dev []int, order []int) float64 {
	s.reset()
	for _, j := range order {
		s.place(j, dev[j], true)
	}
	return s.makespan
}

// kahnOrder returns a topological order taking among ready nodes the smallest key, ties by
// topological position. A nil key gives the topological order.
func (in *inst) kahnOrder(key []float64) []int {
	if key == nil {
		return append([]int(nil), in.topo...)
	}
	var kahn dag.Kahn
	order := kahn.SortFunc(in.succCSR, in.predCSR, func(a, b int32) bool {
		if key[a] != key[b] {
			return key[a] < key[b]
		}
		return in.topoPos[a] < in.topoPos[b]
	}, make([]int32, 0, in.numNodes))
	return int32sToInts(order)
}

func int32sToInts(o []int32) []int {
	out := make([]int, len(o))
	for x, v := range o {
		out[x] = int(v)
	}
	return out
}

func (in *inst) simulateLatency(pl *Placement) (*Schedule, error) {
	s := newLatSim(in)
	if pl.EdgeOrder == nil || !in.problem.Congestion {
		s.eval(pl.Device, in.kahnOrder(pl.Order))
	} else {
		s.evalWithEdgeOrder(pl)
	}
	sc := &Schedule{Makespan: s.makespan, Busy: append([]float64(nil), s.busy...)}
	for i := range in.numNodes {
		sc.Tasks = append(sc.Tasks, Task{Node: i, Name: in.problem.Nodes[i].Name, Device: s.dev[i], Granules: 1, Start: s.start[i], End: s.end[i],
			Call: s.call[i], Stage: s.stage[i]})
	}
	sc.Stages = append([]int(nil), s.perDev...)
	for e, ed := range in.problem.Edges {
		if math.IsNaN(s.trS[e]) {
			continue
		}
		sc.Transfers = append(sc.Transfers, Transfer{Edge: e, From: ed.From, To: ed.To, Src: s.dev[ed.From], Dst: s.dev[ed.To], Granules: 1, Start: s.trS[e], End: s.trE[e]})
	}
	sc.Memory = in.memoryLatency(pl.Device)
	in.finish(sc)
	return sc, nil
}

// evalWithEdgeOrder runs the list schedule over the augmented graph (nodes and transfers)
// with explicit transfer priorities (Moirai's communication nodes).
func (s *latSim) evalWithEdgeOrder(pl *Placement) {
	in := s.in
	s.reset()
	dev := pl.Device
	nE := len(in.problem.Edges)
	// Tasks 0..n-1 are nodes, n+e is edge e's transfer (only when remote).
	remote := make([]bool, nE)
	for e, ed := range in.problem.Edges {
		remote[e] = dev[ed.From] != dev[ed.To] && !in.free[e]
	}
	key := func(t int) float64 {
		if t < in.numNodes {
			if pl.Order == nil {
				return float64(in.topoPos[t])
			}
			return pl.Order[t]
		}
		return pl.EdgeOrder[t-in.numNodes]
	}
	tie := func(t int) int {
		if t < in.numNodes {
			return in.topoPos[t]
		}
		return in.topoPos[in.problem.Edges[t-in.numNodes].To]
	}
	// The augmented graph: a remote edge runs From → its transfer → To, any other edge From →
	// To; the transfer tasks of the other edges stay isolated and are skipped below (being
	// isolated, they change nothing in the order of the others).
	adj := make([][]int, in.numNodes+nE)
	for e, ed := range in.problem.Edges {
		if remote[e] {
			adj[ed.From] = append(adj[ed.From], in.numNodes+e)
			adj[in.numNodes+e] = append(adj[in.numNodes+e], ed.To)
		} else {
			adj[ed.From] = append(adj[ed.From], ed.To)
		}
	}
	succ := dag.FromLists(adj)
	var kahn dag.Kahn
	order := kahn.SortFunc(succ, succ.Reverse(), func(a32, b32 int32) bool {
		a, b := int(a32), int(b32)
		ka, kb := key(a), key(b)
		if ka != kb {
			return ka < kb
		}
		if ta, tb := tie(a), tie(b); ta != tb {
			return ta < tb
		}
		return a < b
	}, nil)
	congest := in.problem.Congestion
	for _, t32 := range order {
		t := int(t32)
		if t >= in.numNodes && !remote[t-in.numNodes] {
			continue
		}
		if t >= in.numNodes {
			e := t - in.numNodes
			ed := &in.problem.Edges[e]
			u, v := dev[ed.From], dev[ed.To]
			d := in.comm(e, u, v, 1)
			st := s.end[ed.From]
			if congest && d > 0 {
				st = math.Max(st, math.Max(s.egFree[u], s.inFree[v]))
				s.egFree[u], s.inFree[v] = st+d, st+d
			}
			s.trS[e], s.trE[e] = st, st+d
			continue
		}
		j := t
		v := dev[j]
		ready := 0.0
		for _, e := range in.inE[j] {
			if remote[e] {
				ready = math.Max(ready, s.trE[e])
			} else {
				ready = math.Max(ready, s.end[in.problem.Edges[e].From])
			}
		}
		opens := in.opensStage(j, v, dev, s.cur[v] < 0)
		call := in.stageCall(j, v, opens)
		s.openStage(j, v, opens, call)
		dur := in.granuleTime[j][v] + call
		st := ready
		if dur > 0 {
			st = math.Max(st, s.devFree[v])
			s.devFree[v] = st + dur
			s.busy[v] += dur
		}
		s.dev[j], s.start[j], s.end[j] = v, st, st+dur
		s.makespan = math.Max(s.makespan, st+dur)
	}
}

func (in *inst) memoryLatency(dev []int) []float64 {
	mem := make([]float64, in.numDevices)
	for i, u := range dev {
		mem[u] += in.problem.Nodes[i].Weight + in.problem.Nodes[i].Act
	}
	return mem
}

// overflow is the total memory above capacity.
func (in *inst) overflow(mem []float64) float64 {
	o := 0.0
	for u, m := range mem {
		if m > in.capacity[u] {
			o += m - in.capacity[u]
		}
	}
	return o
}

func (in *inst) finish(sc *Schedule) {
	sc.Overflow = in.overflow(sc.Memory)
	sc.Feasible = sc.Overflow == 0
	if sc.Makespan > 0 {
		sc.Throughput = float64(in.numGranules*max(in.problem.GranuleSize, 1)) / sc.Makespan
	}
	sort.SliceStable(sc.Tasks, func(a, b int) bool {
		x, y := sc.Tasks[a], sc.Tasks[b]
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		if x.Device != y.Device {
			return x.Device < y.Device
		}
		return in.topoPos[x.Node] < in.topoPos[y.Node]
	})
	sort.SliceStable(sc.Transfers, func(a, b int) bool {
		x, y := sc.Transfers[a], sc.Transfers[b]
		if x.Start != y.Start {
			return x.Start < y.Start
		}
		if x.Edge != y.Edge {
			return x.Edge < y.Edge
		}
		return x.Src < y.Src
	})
	if sc.Tasks == nil {
		sc.Tasks = []Task{}
	}
	if sc.Transfers == nil {
		sc.Transfers = []Transfer{}
	}
}

// ---------------------------------------------------------------------------------------
// Batched mode.

// batchSim is the state of a batched list schedule. A batch is (node, device); its id is
// node·K + device.
type batchSim struct {
	in                      *inst
	devFree, egFree, inFree []float64
	g                       [][]int   // granule → device, per node (nil: not placed yet)
	cnt                     []int     // per batch id
	bStart, bEnd            []float64 // per batch id
	busy                    []float64
	call                    []float64 // per batch id: the stage-call time it paid
	stage                   []int     // per batch id: its stage (-1: none)
	cur                     []int     // per device: its current stage (-1: none yet)
	perDev                  []int     // per device: its number of stages
	nstages                 int
	makespan                float64
	pair                    []int // scratch K×K pair counts
	eg                      []float64
	msgs                    []msg
	record                  bool
	transfers               []Transfer
}

type msg struct {
	e, u, c int
	ready   float64
}

func newBatchSim(in *inst) *batchSim {
	k := in.numDevices
	s := &batchSim{in: in,
		devFree: make([]float64, k), egFree: make([]float64, k), inFree: make([]float64, k),
		g: make([][]int, in.numNodes), cnt: make([]int, in.numNodes*k), bStart: make([]float64, in.numNodes*k), bEnd: make([]float64, in.numNodes*k),
		busy: make([]float64, k), pair: make([]int, k*k), eg: make([]float64, k),
		call: make([]float64, in.numNodes*k), stage: make([]int, in.numNodes*k), cur: make([]int, k), perDev: make([]int, k),
	}
	return s
}

func (s *batchSim) reset() {
	clear(s.devFree)
	clear(s.egFree)
	clear(s.inFree)
	clear(s.busy)
	clear(s.cnt)
	for i := range s.g {
		s.g[i] = nil
	}
	s.makespan = 0
	s.transfers = s.transfers[:0]
	for b := range s.stage {
		s.stage[b], s.call[b] = -1, 0
	}
	for u := range s.cur {
		s.cur[u] = -1
	}
	clear(s.perDev)
	s.nstages = 0
}

// setNode records node j's granule map (which must stay valid while j is in use).
func (s *batchSim) setNode(j int, g []int) {
	k := s.in.numDevices
	s.g[j] = g
	base := j * k
	for u := range k {
		s.cnt[base+u] = 0
	}
	for _, u := range g {
		s.cnt[base+u]++
	}
}

// placeBatch schedules node j's batch on device v (setNode(j, …) done, predecessors placed)
// and returns its finish time; with commit false nothing changes but the scratch.
func (s *batchSim) placeBatch(j, v int, commit bool) float64 {
	in := s.in
	k := in.numDevices
	c := s.cnt[j*k+v]
	if c == 0 {
		return 0
	}
	gj := s.g[j]
	ready := 0.0
	s.msgs = s.msgs[:0]
	congest := in.problem.Congestion
	// The batch opens a stage (one runtime call) when one of its granules reads a non-free
	// edge from a batch on another device, or, for a source, when it is v's first batch: the
	// latency rule (opensStage) applied to batches.
	opens := in.source[j] && s.cur[v] < 0
	for _, e := range in.inE[j] {
		i := in.problem.Edges[e].From
		gi := s.g[i]
		// Granules of this batch, by the device that produced them.
		clear(s.pair[:k])
		for l, dv := range gj {
			if dv == v {
				s.pair[gi[l]]++
			}
		}
		for u := range k {
			if s.pair[u] == 0 {
				continue
			}
			end := s.bEnd[i*k+u]
			if u == v || in.free[e] {
				ready = math.Max(ready, end)
				continue
			}
			opens = true
			if !congest {
				// Seed 003's model: each granule moves on its own, all concurrently (F4a).
				d := in.comm(e, u, v, 1)
				ready = math.Max(ready, end+d)
				if commit && s.record {
					s.transfers = append(s.transfers, Transfer{Edge: e, From: i, To: j, Src: u, Dst: v, Granules: s.pair[u], Start: end, End: end + d})
				}
				continue
			}
			s.msgs = append(s.msgs, msg{e: e, u: u, c: s.pair[u], ready: end})
		}
	}
	ingress := s.inFree[v]
	if len(s.msgs) > 0 {
		sort.Slice(s.msgs, func(a, b int) bool {
			x, y := s.msgs[a], s.msgs[b]
			if x.ready != y.ready {
				return x.ready < y.ready
			}
			if x.e != y.e {
				return x.e < y.e
			}
			return x.u < y.u
		})
		copy(s.eg, s.egFree)
		for _, m := range s.msgs {
			d := in.comm(m.e, m.u, v, m.c)
			st := m.ready
			if d > 0 {
				st = math.Max(st, math.Max(s.eg[m.u], ingress))
				s.eg[m.u] = st + d
				ingress = st + d
			}
			ready = math.Max(ready, st+d)
			if commit && s.record {
				ed := &in.problem.Edges[m.e]
				s.transfers = append(s.transfers, Transfer{Edge: m.e, From: ed.From, To: ed.To, Src: m.u, Dst: v, Granules: m.c, Start: st, End: st + d})
			}
		}
	}
	call := in.stageCall(j, v, opens)
	dur := in.batchTime[j][v][c] + call
	st := ready
	if dur > 0 {
		st = math.Max(st, s.devFree[v])
	}
	fin := st + dur
	if commit {
		b := j*k + v
		if opens {
			s.cur[v] = s.nstages
			s.nstages++
			s.perDev[v]++
		}
		s.stage[b], s.call[b] = s.cur[v], call
		if len(s.msgs) > 0 {
			copy(s.egFree, s.eg)
			s.inFree[v] = ingress
		}
		if dur > 0 {
			s.devFree[v] = fin
			s.busy[v] += dur
		}
		s.bStart[j*k+v], s.bEnd[j*k+v] = st, fin
		s.makespan = math.Max(s.makespan, fin)
	}
	return fin
}

// placeNode schedules all batches of node j (granule map g) in device order; it returns the
// node's finish time. With commit false the state is left unchanged (g is still recorded).
func (s *batchSim) placeNode(j int, g []int, commit bool) float64 {
	s.setNode(j, g)
	k := s.in.numDevices
	if commit {
		fin := 0.0
		for v := range k {
			if s.cnt[j*k+v] > 0 {
				fin = math.Max(fin, s.placeBatch(j, v, true))
			}
		}
		return fin
	}
	// A trial must see its own earlier batches' port use; save and restore the small state.
	saveDev := append([]float64(nil), s.devFree...)
	saveEg := append([]float64(nil), s.egFree...)
	saveIn := append([]float64(nil), s.inFree...)
	saveBusy := append([]float64(nil), s.busy...)
	saveCur := append([]int(nil), s.cur...)
	savePer := append([]int(nil), s.perDev...)
	saveN := s.nstages
	saveMk := s.makespan
	rec := s.record
	s.record = false
	fin := 0.0
	for v := range k {
		if s.cnt[j*k+v] > 0 {
			fin = math.Max(fin, s.placeBatch(j, v, true))
		}
	}
	copy(s.devFree, saveDev)
	copy(s.egFree, saveEg)
	copy(s.inFree, saveIn)
	copy(s.busy, saveBusy)
	copy(s.cur, saveCur)
	copy(s.perDev, savePer)
	s.nstages = saveN
	s.makespan = saveMk
	s.record = rec
	return fin
}

// eval returns the makespan of the granule maps g scheduled node by node in order.
func (s *batchSim) eval(g [][]int, order []int) float64 {
	s.reset()
	for _, j := range order {
		s.placeNode(j, g[j], true)
	}
	return s.makespan
}

func (in *inst) simulateBatched(pl *Placement) (*Schedule, error) {
	s := newBatchSim(in)
	s.reset()
	s.record = true
	k := in.numDevices
	for j := range in.numNodes {
		s.setNode(j, pl.Granules[j])
	}
	if pl.BatchOrder == nil {
		for _, j := range in.kahnOrder(pl.Order) {
			for v := range k {
				if s.cnt[j*k+v] > 0 {
					s.placeBatch(j, v, true)
				}
			}
		}
	} else {
		for _, b := range in.batchOrder(pl, s.cnt) {
			s.placeBatch(b/k, b%k, true)
		}
	}
	sc := &Schedule{Makespan: s.makespan, Busy: append([]float64(nil), s.busy...)}
	for j := range in.numNodes {
		for v := range k {
			if c := s.cnt[j*k+v]; c > 0 {
				sc.Tasks = append(sc.Tasks, Task{Node: j, Name: in.problem.Nodes[j].Name, Device: v, Granules: c, Start: s.bStart[j*k+v], End: s.bEnd[j*k+v],
					Call: s.call[j*k+v], Stage: s.stage[j*k+v]})
			}
		}
	}
	sc.Stages = append([]int(nil), s.perDev...)
	sc.Transfers = append(sc.Transfers, s.transfers...)
	sc.Memory = in.memoryBatched(pl.Granules)
	in.finish(sc)
	return sc, nil
}

// batchOrder is a Kahn order of the batches by BatchOrder, where batch (j,v) waits for every
// batch (i,u) of a predecessor i that holds one of its granules. The empty batches (cnt 0)
// take part as isolated nodes, which cannot change the order of the others, and are dropped.
func (in *inst) batchOrder(pl *Placement, cnt []int) []int {
	k := in.numDevices
	nb := in.numNodes * k
	deps := make([][]int, nb) // successors
	for _, ed := range in.problem.Edges {
		gi, gj := pl.Granules[ed.From], pl.Granules[ed.To]
		seen := map[[2]int]bool{}
		for l := range gi {
			a, b := ed.From*k+gi[l], ed.To*k+gj[l]
			if !seen[[2]int{a, b}] {
				seen[[2]int{a, b}] = true
				deps[a] = append(deps[a], b)
			}
		}
	}
	key := func(b int32) float64 { return pl.BatchOrder[int(b)/k][int(b)%k] }
	succ := dag.FromLists(deps)
	var kahn dag.Kahn
	all := kahn.SortFunc(succ, succ.Reverse(), func(a, b int32) bool {
		if ka, kb := key(a), key(b); ka != kb {
			return ka < kb
		}
		if pa, pb := in.topoPos[int(a)/k], in.topoPos[int(b)/k]; pa != pb {
			return pa < pb
		}
		return a < b
	}, nil)
	var order []int
	for _, b := range all {
		if cnt[b] > 0 {
			order = append(order, int(b))
		}
	}
	return order
}

func (in *inst) memoryBatched(g [][]int) []float64 {
	mem := make([]float64, in.numDevices)
	cnt := make([]int, in.numDevices)
	for i, gi := range g {
		clear(cnt)
		for _, u := range gi {
			cnt[u]++
		}
		for u, c := range cnt {
			if c > 0 {
				mem[u] += in.problem.Nodes[i].Weight + float64(c)*in.problem.Nodes[i].Act
			}
		}
	}
	return mem
}
