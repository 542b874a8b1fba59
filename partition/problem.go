package partition

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"
)

// Tensor is one value produced by a node and read by other nodes. Each tensor is charged
// separately (seed 000 Eq. (1)): a stage pays Size/B for it once, however many of its
// consumers the stage holds, when the stage holds some but not all of {Producer} ∪ Consumers.
type Tensor struct {
	Name      string // optional, for reports
	Producer  int    // node index
	Consumers []int  // node indices; repetitions and the producer itself are ignored
	Size      float64
	// Unordered makes the tensor a cost-only value: it is charged as above when cut, but it
	// does not order its producer before its consumers. The backward edges of a training graph
	// (Tarnawski et al. 2020, whose gradient flows against the pipeline) are such tensors;
	// their stage order comes from the forward graph alone.
	Unordered bool
}

// Device is one kind of pipeline stage in a heterogeneous pipeline. Zero fields inherit the
// Problem's value.
type Device struct {
	Name string
	// Count is how many stages of this device the pipeline may use (unused ones stay empty).
	Count int
	// Work is the per-node running time on this device (len = number of nodes); nil: Problem.Work.
	Work []float64
	// Bandwidth B of the device's link: a stage on it pays Size/B per cut tensor and
	// overflow/B for streamed parameters. 0: Problem.Bandwidth; +Inf: communication is free.
	Bandwidth float64
	// FastMemory M for parameters (Eq. (2)); 0: Problem.FastMemory.
	FastMemory float64
	// MemoryCap is a hard cap on the parameter bytes of one stage; 0: Problem.MemoryCap.
	MemoryCap float64
}

// Problem is an instance of the max-throughput partitioning problem (MTPP, seed 000 §2) on
// plain cost arrays. Nodes are 0..len(Work)-1.
type Problem struct {
	Name string
	// NodeNames are optional labels (len 0 or number of nodes).
	NodeNames []string
	// Work is the running time of each node on the default device.
	Work []float64
	// Params are the parameter bytes of each node (size_param); nil means zero.
	Params []float64
	// Tensors are the values flowing between nodes. Edges of the DAG are producer → consumer.
	Tensors []Tensor
	// K is the number of stages (blocks) for a homogeneous pipeline. With Devices set, K must
	// be 0 or the sum of the device counts.
	K int
	// Bandwidth is B (bytes per unit of time); it must be positive (+Inf: free communication).
	Bandwidth float64
	// FastMemory is M, the fast memory per stage for parameters; 0 means unlimited (no
	// overflow term).
	FastMemory float64
	// MemoryCap is a hard cap on parameter bytes per stage; 0 means none.
	MemoryCap float64
	// Colocate lists groups of nodes that must share a stage.
	Colocate [][]int
	// Devices, when non-empty, makes the pipeline heterogeneous: Σ Count stages, each on one
	// device, in an order the solver chooses.
	Devices []Device
}

// NumNodes is the number of nodes.
func (p *Problem) NumNodes() int { return len(p.Work) }

// NumStages is the number of pipeline stages (K, or the sum of the device counts).
func (p *Problem) NumStages() int {
	if len(p.Devices) == 0 {
		return p.K
	}
	s := 0
	for _, d := range p.Devices {
		s += d.Count
	}
	return s
}

// devices returns the effective device list (one device of count K when homogeneous) with
// every inherited field resolved.
func (p *Problem) devices() []Device {
	if len(p.Devices) == 0 {
		return []Device{{Name: "stage", Count: p.K, Work: p.Work, Bandwidth: p.Bandwidth,
			FastMemory: p.FastMemory, MemoryCap: p.MemoryCap}}
	}
	out := make([]Device, len(p.Devices))
	for i, d := range p.Devices {
		if d.Work == nil {
			d.Work = p.Work
		}
		if d.Bandwidth == 0 {
			d.Bandwidth = p.Bandwidth
		}
		if d.FastMemory == 0 {
			d.FastMemory = p.FastMemory
		}
		if d.MemoryCap == 0 {
			d.MemoryCap = p.MemoryCap
		}
		if d.Name == "" {
			d.Name = fmt.Sprintf("device%d", i)
		}
		out[i] = d
	}
	return out
}

// Heterogeneous reports whether the problem has more than one kind of stage.
func (p *Problem) Heterogeneous() bool { return len(p.Devices) > 1 }

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// Validate checks the instance: sizes, non-negative finite costs, node indices in range,
// and that the producer → consumer relation is acyclic. It returns the first problem found.
func (p *Problem) Validate() error {
	n := len(p.Work)
	if n == 0 {
		return errors.New("partition: the problem has no nodes")
	}
	if len(p.NodeNames) != 0 && len(p.NodeNames) != n {
		return fmt.Errorf("partition: %d node names for %d nodes", len(p.NodeNames), n)
	}
	if p.Params != nil && len(p.Params) != n {
		return fmt.Errorf("partition: %d parameter sizes for %d nodes", len(p.Params), n)
	}
	if len(p.Devices) > 0 && p.K != 0 && p.K != p.NumStages() {
		return fmt.Errorf("partition: K = %d but the devices provide %d stages", p.K, p.NumStages())
	}
	if p.NumStages() < 1 {
		return fmt.Errorf("partition: the pipeline needs at least one stage (K = %d)", p.NumStages())
	}
	if p.FastMemory < 0 || math.IsNaN(p.FastMemory) || p.MemoryCap < 0 || math.IsNaN(p.MemoryCap) {
		return errors.New("partition: fast memory and memory cap must be non-negative")
	}
	for i, d := range p.devices() {
		if d.Count < 0 {
			return fmt.Errorf("partition: device %s has a negative count", d.Name)
		}
		if len(d.Work) != n {
			return fmt.Errorf("partition: device %s has %d work values for %d nodes", d.Name, len(d.Work), n)
		}
		for v, w := range d.Work {
			if !finiteNonNeg(w) {
				return fmt.Errorf("partition: work of node %s on device %s is %v; it must be finite and ≥ 0", p.label(v), d.Name, w)
			}
		}
		if !(d.Bandwidth > 0) || math.IsNaN(d.Bandwidth) {
			return fmt.Errorf("partition: bandwidth of device %d (%s) is %v; it must be positive", i, d.Name, d.Bandwidth)
		}
	}
	for v, s := range p.Params {
		if !finiteNonNeg(s) {
			return fmt.Errorf("partition: parameter size of node %s is %v", p.label(v), s)
		}
	}
	for i, t := range p.Tensors {
		if t.Producer < 0 || t.Producer >= n {
			return fmt.Errorf("partition: tensor %d (%s) has producer %d out of range", i, t.Name, t.Producer)
		}
		if !finiteNonNeg(t.Size) {
			return fmt.Errorf("partition: tensor %d (%s) has size %v", i, t.Name, t.Size)
		}
		for _, c := range t.Consumers {
			if c < 0 || c >= n {
				return fmt.Errorf("partition: tensor %d (%s) has consumer %d out of range", i, t.Name, c)
			}
		}
	}
	for gi, grp := range p.Colocate {
		for _, v := range grp {
			if v < 0 || v >= n {
				return fmt.Errorf("partition: colocation group %d names node %d out of range", gi, v)
			}
		}
	}
	if cyc := p.findCycle(); cyc != nil {
		return dag.NewCycleError("partition: the graph", cyc, p.label)
	}
	return nil
}

// CycleError reports that the tensors of a Problem do not form a DAG (graph/dag's one
// cycle error).
type CycleError = dag.CycleError

func (p *Problem) label(v int) string {
	if v >= 0 && v < len(p.NodeNames) && p.NodeNames[v] != "" {
		return p.NodeNames[v]
	}
	return fmt.Sprintf("#%d", v)
}

// succs returns the distinct consumer nodes of each node (self-loops dropped), ascending.
func (p *Problem) succs() [][]int {
	n := len(p.Work)
	out := make([][]int, n)
	for _, t := range p.Tensors {
		if t.Unordered {
			continue
		}
		for _, c := range t.Consumers {
			if c != t.Producer {
				out[t.Producer] = append(out[t.Producer], c)
			}
		}
	}
	for v := range out {
		out[v] = dag.SortedUnique(out[v])
	}
	return out
}

// findCycle returns the nodes of one cycle of the producer → consumer relation of the
// ordered tensors, or nil.
func (p *Problem) findCycle() []int { return dag.FindCycle(dag.FromLists(p.succs())) }

// StageCost is the cost breakdown of one stage, Eq. (3): Work + Comm + Overflow = Total.
type StageCost struct {
	Work     float64 `json:"work"`
	Comm     float64 `json:"comm"`     // input and output tensors, once per tensor, /B
	Overflow float64 `json:"overflow"` // (params − M)^+ / B, Eq. (2)
	Total    float64 `json:"total"`
	Params   float64 `json:"params"` // parameter bytes held by the stage
}

// infeasible says why an assignment is not a valid plan, or (from Solve, with a proof) why no
// plan is: a *diag.Error of kind infeasible, "partition: infeasible plan: …".
func infeasible(format string, args ...any) *diag.Error {
	return diag.Infeasible("partition: infeasible plan: "+format, args...)
}

// Evaluate is the single judge of a plan: stage[v] ∈ [0, NumStages) is the pipeline position
// of node v and device[s] the device index (into Devices; 0 when homogeneous) of position s.
// It checks that every tensor flows forward (acyclic quotient in stage order, seed 000 §2),
// colocation, device counts and memory caps, and returns each stage's cost by Eq. (3)
// computed from scratch, and the objective max_s f(P_s) (Eq. (4)).
func (p *Problem) Evaluate(stage, device []int) ([]StageCost, float64, error) {
	n := len(p.Work)
	K := p.NumStages()
	devs := p.devices()
	if len(stage) != n {
		return nil, 0, infeasible("%d stage entries for %d nodes", len(stage), n)
	}
	if device == nil && len(devs) == 1 {
		device = make([]int, K)
	}
	if len(device) != K {
		return nil, 0, infeasible("%d stage devices for %d stages", len(device), K)
	}
	used := make([]int, len(devs))
	for s, d := range device {
		if d < 0 || d >= len(devs) {
			return nil, 0, infeasible("stage %d has device %d out of range", s, d).About(diag.Stage, strconv.Itoa(s))
		}
		used[d]++
	}
	for d := range devs {
		if used[d] > devs[d].Count {
			return nil, 0, infeasible("device %s is used by %d stages but has count %d", devs[d].Name, used[d], devs[d].Count).About(diag.Device, devs[d].Name)
		}
	}
	for v, s := range stage {
		if s < 0 || s >= K {
			return nil, 0, infeasible("node %s has stage %d out of range", p.label(v), s).About(diag.Node, p.label(v))
		}
	}
	for _, t := range p.Tensors {
		if t.Unordered {
			continue
		}
		for _, c := range t.Consumers {
			if stage[c] < stage[t.Producer] {
				return nil, 0, infeasible("tensor %q flows backwards from stage %d (node %s) to stage %d (node %s)",
					t.Name, stage[t.Producer], p.label(t.Producer), stage[c], p.label(c)).About(diag.Tensor, t.Name)
			}
		}
	}
	for gi, grp := range p.Colocate {
		for _, v := range grp {
			if stage[v] != stage[grp[0]] {
				return nil, 0, infeasible("colocation group %d is split (nodes %s and %s)", gi, p.label(grp[0]), p.label(v))
			}
		}
	}
	costs := make([]StageCost, K)
	for v := 0; v < n; v++ {
		s := stage[v]
		costs[s].Work += devs[device[s]].Work[v]
		if p.Params != nil {
			costs[s].Params += p.Params[v]
		}
	}
	// Eq. (1) per tensor: the tensor is charged to every stage that holds some but not all of
	// T = {producer} ∪ consumers; the producer's stage pays it as output, consumer stages as input.
	comm := make([]float64, K)
	var members []int
	for _, t := range p.Tensors {
		members = append(members[:0], stage[t.Producer])
		for _, c := range t.Consumers {
			members = append(members, stage[c])
		}
		sort.Ints(members)
		if members[0] == members[len(members)-1] {
			continue
		}
		for i, s := range members {
			if i == 0 || s != members[i-1] {
				comm[s] += t.Size
			}
		}
	}
	obj := 0.0
	for s := range costs {
		d := devs[device[s]]
		c := &costs[s]
		if !math.IsInf(d.Bandwidth, 1) {
			c.Comm = comm[s] / d.Bandwidth
			if d.FastMemory > 0 && c.Params > d.FastMemory {
				c.Overflow = (c.Params - d.FastMemory) / d.Bandwidth
			}
		}
		if d.MemoryCap > 0 && c.Params > d.MemoryCap*(1+1e-12) {
			return nil, 0, infeasible("stage %d holds %.6g parameter bytes, above the cap %.6g of device %s", s, c.Params, d.MemoryCap, d.Name).About(diag.Stage, strconv.Itoa(s))
		}
		c.Total = c.Work + c.Comm + c.Overflow
		if c.Total > obj {
			obj = c.Total
		}
	}
	return costs, obj, nil
}

// BlockCost is f(S) of Eq. (3) for the node set S on device d, computed from scratch (used by
// tests as the oracle of the sweep). S must not contain repetitions.
func (p *Problem) BlockCost(S []int, d int) float64 {
	devs := p.devices()
	dev := devs[d]
	in := make(map[int]bool, len(S))
	work, params := 0.0, 0.0
	for _, v := range S {
		in[v] = true
		work += dev.Work[v]
		if p.Params != nil {
			params += p.Params[v]
		}
	}
	if math.IsInf(dev.Bandwidth, 1) {
		return work
	}
	comm := 0.0
	for _, t := range p.Tensors {
		some, all := in[t.Producer], in[t.Producer]
		for _, c := range t.Consumers {
			if in[c] {
				some = true
			} else {
				all = false
			}
		}
		if some && !all {
			comm += t.Size
		}
	}
	ovf := 0.0
	if dev.FastMemory > 0 && params > dev.FastMemory {
		ovf = (params - dev.FastMemory) / dev.Bandwidth
	}
	return work + comm/dev.Bandwidth + ovf
}
