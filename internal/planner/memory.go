package planner

import (
	"fmt"
	"math"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/units"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// StageMemory is the whole memory one stage holds on its device while it runs, in bytes,
// part by part (issue 28, item 3). The parts do not overlap: a tensor counts in one of them.
type StageMemory struct {
	// Weights: the initializers and Constant-node tensors the stage's nodes read, each once,
	// and the weights inside its control-flow subgraphs.
	Weights int64
	// Activations: the peak of the tensors produced and consumed inside the stage that are
	// live at once when its nodes run in the emitted (topological) order.
	Activations int64
	// Buffers: the stage's input and output tensors that other stages produce or read.
	Buffers int64
	// State: the graph inputs the stage reads and the graph outputs it produces (a decoder's
	// past_key_values.* and present.* KV cache among them), sized at the memory graph's dims.
	// Messages call it "inputs/outputs": it is not only the state a decoder carries.
	State int64
	// Reserve: the device's workspace reserve (profile.Device.Reserve).
	Reserve int64
}

// Total is the sum of the parts.
func (m StageMemory) Total() int64 {
	return m.Weights + m.Activations + m.Buffers + m.State + m.Reserve
}

// Parts writes the sum part by part: "weights X + activations Y + buffers Z +
// inputs/outputs S + reserve R = T".
func (m StageMemory) Parts() string {
	return fmt.Sprintf("weights %s + activations %s + buffers %s + inputs/outputs %s + reserve %s = %s",
		human(float64(m.Weights)), human(float64(m.Activations)), human(float64(m.Buffers)),
		human(float64(m.State)), human(float64(m.Reserve)), human(float64(m.Total())))
}

// StageMemories computes the whole memory of every stage label of a: g is the model's graph
// sized at the dims the memory is checked at (the bound dims, or Options.MemoryGraph's), a.Stage[v] the
// label of node v and a.Devices[label] its device, looked up by name in c for the reserve
// (no reserve when the device is not in c). The result is indexed by label.
func StageMemories(g *graph.Graph, a *emit.Assignment, c *profile.Cluster) []StageMemory {
	labels := 0
	for _, s := range a.Stage {
		labels = max(labels, s+1)
	}
	labels = max(labels, len(a.Devices))
	out := make([]StageMemory, labels)
	for s := range out {
		if s < len(a.Devices) && c != nil {
			if d := c.Index(a.Devices[s].Name); d >= 0 {
				out[s].Reserve = int64(c.Devices[d].Reserve())
			}
		}
	}
	size := func(t int) int64 { return max(g.Tensors[t].Bytes, 0) }
	// Weights and the subgraphs' weights.
	seen := make(map[[2]int]bool)
	for v := range g.Nodes {
		s := a.Stage[v]
		out[s].Weights += max(g.Nodes[v].SubgraphParamBytes, 0)
		for _, t := range g.Nodes[v].Deps() {
			if g.IsParam(t) && !seen[[2]int{s, t}] {
				seen[[2]int{s, t}] = true
				out[s].Weights += size(t)
			}
		}
	}
	// State and buffers: every tensor that crosses the stage's boundary, each once per stage.
	for t := range g.Tensors {
		tn := &g.Tensors[t]
		if g.IsParam(t) {
			continue
		}
		readers := map[int]bool{}
		for _, v := range tn.Consumers {
			readers[a.Stage[v]] = true
		}
		prod := -1
		if tn.Producer >= 0 {
			prod = a.Stage[tn.Producer]
		}
		switch {
		case tn.Kind == graph.Input:
			for s := range readers {
				out[s].State += size(t)
			}
		case tn.Producer < 0:
			// an initializer that is not a weight cannot occur; nothing else has no producer
		default:
			if tn.IsOutput {
				out[prod].State += size(t)
			}
			other := false
			for s := range readers {
				if s != prod {
					out[s].Buffers += size(t)
					other = true
				}
			}
			if other && !tn.IsOutput {
				out[prod].Buffers += size(t)
			}
		}
	}
	// Activations: walk each stage's nodes in topological order (the order emit writes them).
	nodes := make([][]int, labels)
	for _, v := range g.TopoOrder() {
		nodes[a.Stage[v]] = append(nodes[a.Stage[v]], v)
	}
	for s := range nodes {
		out[s].Activations = PeakActivations(g, nodes[s], a.Stage)
	}
	return out
}

// PeakActivations walks nodes (one stage's, in execution order) and returns the largest sum
// of the bytes of the internal tensors live at once: a tensor produced by one of the nodes is
// live from its producer's run to its last consumer among the nodes, its producer's inputs
// still being live while the outputs are written. Tensors that leave the stage (read by
// another stage, or graph outputs) are buffers or state, not activations; weights are not
// activations either.
func PeakActivations(g *graph.Graph, nodes []int, stage []int) int64 {
	if len(nodes) == 0 {
		return 0
	}
	s := stage[nodes[0]]
	pos := make(map[int]int, len(nodes))
	for i, v := range nodes {
		pos[v] = i
	}
	internal := func(t int) (last int, ok bool) {
		tn := &g.Tensors[t]
		if tn.Producer < 0 || tn.IsOutput || g.IsParam(t) {
			return 0, false
		}
		last = pos[tn.Producer]
		for _, c := range tn.Consumers {
			if stage[c] != s {
				return 0, false
			}
			if p, in := pos[c]; in && p > last {
				last = p
			}
		}
		return last, true
	}
	free := make([][]int, len(nodes)) // tensors whose last reader is nodes[i]
	var live, peak int64
	for i, v := range nodes {
		for _, t := range g.Nodes[v].Outputs {
			if t < 0 {
				continue
			}
			if last, ok := internal(t); ok {
				live += max(g.Tensors[t].Bytes, 0)
				free[last] = append(free[last], t)
			}
		}
		peak = max(peak, live)
		for _, t := range free[i] {
			live -= max(g.Tensors[t].Bytes, 0)
		}
	}
	return peak
}

// nodeMemory is what the solvers see of a node's memory, per node of g, in bytes: its
// weights (Node.ParamBytes) and the state it owns, which add up over a stage's nodes
// (activations and buffers do not, and are checked after planning). A graph input read by
// several nodes counts at its first reader only, so that no stage is charged more than it
// holds; the check after planning counts it in every stage that reads it. sized is the
// graph sized at the memory dims (same nodes as g), or g.
func nodeMemory(g, sized *graph.Graph) []float64 {
	out := make([]float64, len(g.Nodes))
	for v := range g.Nodes {
		out[v] = float64(max(g.Nodes[v].ParamBytes, 0))
	}
	for t := range sized.Tensors {
		tn := &sized.Tensors[t]
		b := float64(max(tn.Bytes, 0))
		switch {
		case tn.Kind == graph.Input && len(tn.Consumers) > 0:
			out[tn.Consumers[0]] += b
		case tn.IsOutput && tn.Producer >= 0 && !sized.IsParam(t):
			out[tn.Producer] += b
		}
	}
	return out
}

// checkStageMemory checks the plan's stages against their devices' capacities after
// planning. A stage that does not fit fails the run: with an infeasible *diag.Error when one node's
// weights and state with the smallest reserve exceed every device's capacity (no plan can
// place that node), else with a no-plan one (the plan found does not fit; another might).
func checkStageMemory(g *graph.Graph, a *emit.Assignment, c *profile.Cluster, devs []int, mem []StageMemory, solverMem []float64) error {
	var short []string
	for s, m := range mem {
		if s >= len(a.Devices) {
			continue
		}
		d := c.Index(a.Devices[s].Name)
		if d < 0 {
			continue
		}
		cp := c.Devices[d].Capacity()
		if math.IsInf(cp, 1) || float64(m.Total()) <= cp {
			continue
		}
		short = append(short, fmt.Sprintf("stage %d on %s: %s > capacity %s (%s short)",
			s, DeviceLabel(c, a.Devices[s].Name), m.Parts(), human(cp), human(float64(m.Total())-cp)))
	}
	if len(short) == 0 {
		return nil
	}
	// A proof: some node cannot fit on any device even alone.
	for v := range solverMem {
		fits := false
		for _, d := range devs {
			dev := &c.Devices[d]
			if solverMem[v]+dev.Reserve() <= dev.Capacity() {
				fits = true
				break
			}
		}
		if !fits {
			return diag.Infeasible("node %s needs %s of weights and state, which with the workspace reserve fits no device; %s",
				g.Nodes[v].Label(), human(solverMem[v]), strings.Join(short, "; ")).About(diag.Node, g.Nodes[v].Label())
		}
	}
	return diag.NoPlan("the plan found does not fit its devices' memory; no plan found within the limits: %s", strings.Join(short, "; "))
}

// memoryGraph is the graph the memory is sized at: Options.MemoryGraph when it matches g
// node for node, else g.
func memoryGraph(g *graph.Graph, opt *Options) (*graph.Graph, error) {
	mg := opt.MemoryGraph
	if mg == nil {
		return g, nil
	}
	if len(mg.Nodes) != len(g.Nodes) || len(mg.Tensors) != len(g.Tensors) {
		return nil, diag.Usage("the graph sized at %s has %d nodes and %d tensors, the model %d and %d: the dims change the graph",
			opt.name("MemoryGraph"), len(mg.Nodes), len(mg.Tensors), len(g.Nodes), len(g.Tensors)).About(diag.Option, opt.name("MemoryGraph"))
	}
	return mg, nil
}

// workMemory is nodeMemory on the graph the solvers see (work, a coarsening of g when
// coarse is not nil): a group's memory is its members' state plus the group's own weights
// (fusion sums its members' ParamBytes, absorbed constants included).
func workMemory(g, mg *graph.Graph, work *graph.Graph, coarse *fusion.Grouping) []float64 {
	fine := nodeMemory(g, mg)
	if coarse == nil {
		return fine
	}
	out := make([]float64, len(work.Nodes))
	for w := range work.Nodes {
		out[w] = float64(max(work.Nodes[w].ParamBytes, 0))
	}
	for v := range g.Nodes {
		state := fine[v] - float64(max(g.Nodes[v].ParamBytes, 0))
		if w := coarse.GroupOf[v]; w >= 0 && w < len(out) && state > 0 {
			out[w] += state
		}
	}
	return out
}

// usableCap is what the solvers may place on device d: its capacity less its workspace
// reserve; 0 when unlimited (the solvers' convention), and 1 byte when the reserve takes it
// all (0 would read as unlimited).
func usableCap(dev *profile.Device) float64 {
	cp := dev.Capacity()
	if math.IsInf(cp, 1) {
		return 0
	}
	return math.Max(cp-dev.Reserve(), 1)
}

// applyNodeMemory gives a placement problem the nodes' additive memory (weights and owned
// state, nodeMem) and the devices' capacities less their reserves.
func applyNodeMemory(p *schedule.Problem, c *profile.Cluster, devs []int, nodeMem []float64) {
	for i, d := range devs {
		if i < len(p.Devices) {
			p.Devices[i].Memory = usableCap(&c.Devices[d])
		}
	}
	if len(nodeMem) == len(p.Nodes) {
		for v := range p.Nodes {
			p.Nodes[v].Weight = nodeMem[v]
		}
	}
}

// checkMemoryFits refuses, before planning, a model whose weights and state exceed what the
// devices offer in all, each its capacity less its workspace reserve (exit 3): every plan
// holds each weight and each state tensor at least once, and a device it uses holds its
// reserve too (a device whose reserve exceeds its capacity offers nothing).
func checkMemoryFits(g, mg *graph.Graph, c *profile.Cluster, devs []int) error {
	total, reserve, usable := 0.0, 0.0, 0.0
	for _, d := range devs {
		dev := &c.Devices[d]
		total += dev.Capacity()
		reserve += dev.Reserve()
		usable += math.Max(dev.Capacity()-dev.Reserve(), 0)
	}
	weights := float64(g.ParamBytes())
	state := 0.0
	for t := range mg.Tensors {
		tn := &mg.Tensors[t]
		if (tn.Kind == graph.Input && len(tn.Consumers) > 0) || (tn.IsOutput && tn.Producer >= 0 && !mg.IsParam(t)) {
			state += float64(max(tn.Bytes, 0))
		}
	}
	if need := weights + state; need > usable {
		return diag.Infeasible("the model does not fit the devices' memory: weights %s + model inputs/outputs %s = %s > %s in all (capacities %s less reserves %s; %s short)",
			human(weights), human(state), human(need), human(usable), human(total), human(reserve), human(need-usable))
	}
	return nil
}

// checkMemory computes the whole memory of the plan's stages (r.Stages[i].Memory, and
// r.Memory by label) and fails when a stage does not fit its device.
func (r *Result) checkMemory(g, mg *graph.Graph) error {
	var err error
	r.memGraph = mg
	check := func(a *emit.Assignment) ([]StageMemory, error) {
		mem := StageMemories(mg, a, r.Cluster)
		return mem, checkStageMemory(g, a, r.Cluster, r.Devices, mem, nodeMemory(g, mg))
	}
	if r.Memory, err = check(r.Assignment); err != nil {
		return err
	}
	for i := range r.Stages {
		if l := r.Stages[i].Stage; l < len(r.Memory) {
			r.Stages[i].Memory = r.Memory[l]
		}
	}
	if r.Batch != nil {
		for i := 1; i < len(r.Batch.Routes); i++ {
			if _, err := check(r.Batch.Routes[i].Assignment); err != nil {
				return fmt.Errorf("route %d: %w", i, err)
			}
		}
	}
	return nil
}

// manifestMemory is the manifest's memory object of a stage.
func manifestMemory(m StageMemory) *emit.StageMemory {
	return &emit.StageMemory{WeightsBytes: m.Weights, ActivationsBytes: m.Activations, BuffersBytes: m.Buffers,
		StateBytes: m.State, ReserveBytes: m.Reserve, TotalBytes: m.Total()}
}

// stageMemoryOf is the manifest memory of label l of assignment a (route 0's or another
// route's); nil when the plan has no memory graph (a Result not from Plan).
func stageMemoryOf(r *Result, a *emit.Assignment, l int) *emit.StageMemory {
	if r.memGraph == nil {
		return nil
	}
	mem := r.Memory
	if a != r.Assignment {
		mem = StageMemories(r.memGraph, a, r.Cluster)
	}
	if l < 0 || l >= len(mem) {
		return nil
	}
	return manifestMemory(mem[l])
}

// human prints a byte figure of the memory model (float64 in the solver's units).
func human(b float64) string { return units.Bytes(int64(math.Round(b))) }
