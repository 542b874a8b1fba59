package measure

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/internal/stats"

	"github.com/onnxpart/onnxpart/graph"
)

// ORT profiling traces. With SessionOptions profiling on, ONNX Runtime writes a Chrome-trace
// JSON array when the session ends. Each "Session" event model_run spans one Run call; each
// "Node" event named "<node>_kernel_time" is one kernel of the *optimized* graph, with dur in
// microseconds and args.op_name the kernel's op type. (Events ending _fence_before/_after,
// written by older releases, are ignored.)

// ORTKernel is one kernel execution in a trace.
type ORTKernel struct {
	Node string  // node name in the optimized graph
	Op   string  // kernel op type (Conv, FusedConv, ReorderOutput, …)
	Dur  float64 // seconds
	TS   float64 // start, seconds since the session began
	// Gap is the idle time between the previous kernel's end (or the run's start) and this
	// kernel's start: the executor's per-kernel bookkeeping, charged to this kernel.
	Gap float64
}

// Time is the kernel's duration plus the gap before it.
func (k ORTKernel) Time() float64 { return k.Dur + k.Gap }

// ORTRun is one Run call in a trace: its span and its kernels in start order.
type ORTRun struct {
	TS, Dur float64 // seconds
	Kernels []ORTKernel
}

// ORTProfile is a parsed trace.
type ORTProfile struct {
	Runs []ORTRun
}

type ortEvent struct {
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	TS   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Args json.RawMessage `json:"args"`
}

// ParseORTProfile reads an ONNX Runtime profiling trace and groups its kernels by run.
// Kernels outside any model_run (initialisation) are dropped.
func ParseORTProfile(r io.Reader) (*ORTProfile, error) {
	var events []ortEvent
	if err := json.NewDecoder(r).Decode(&events); err != nil {
		return nil, fmt.Errorf("ONNX Runtime profile: %v", err)
	}
	var runs []ortEvent
	var kernels []ortEvent
	for _, e := range events {
		switch {
		case e.Cat == "Session" && e.Name == "model_run":
			runs = append(runs, e)
		case e.Cat == "Node" && strings.HasSuffix(e.Name, "_kernel_time"):
			kernels = append(kernels, e)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].TS < runs[j].TS })
	sort.SliceStable(kernels, func(i, j int) bool { return kernels[i].TS < kernels[j].TS })
	p := &ORTProfile{Runs: make([]ORTRun, len(runs))}
	for i, r := range runs {
		p.Runs[i].TS, p.Runs[i].Dur = r.TS*1e-6, r.Dur*1e-6
	}
	for _, k := range kernels {
		// The run whose window holds the kernel's start.
		i := sort.Search(len(runs), func(i int) bool { return runs[i].TS > k.TS }) - 1
		if i < 0 || k.TS > runs[i].TS+runs[i].Dur {
			continue
		}
		var args struct {
			Op string `json:"op_name"`
		}
		_ = json.Unmarshal(k.Args, &args)
		p.Runs[i].Kernels = append(p.Runs[i].Kernels, ORTKernel{
			Node: strings.TrimSuffix(k.Name, "_kernel_time"), Op: args.Op,
			Dur: k.Dur * 1e-6, TS: k.TS * 1e-6,
		})
	}
	if len(p.Runs) == 0 {
		return nil, fmt.Errorf("ONNX Runtime profile: no model_run events")
	}
	for i := range p.Runs {
		r := &p.Runs[i]
		end := r.TS
		for j := range r.Kernels {
			k := &r.Kernels[j]
			k.Gap = math.Max(k.TS-end, 0)
			end = math.Max(end, k.TS+k.Dur)
		}
	}
	return p, nil
}

// OptNode is a node of the graph ONNX Runtime actually ran (its optimized model): name,
// input and output tensor names.
type OptNode struct {
	Name    string
	Op      string
	Inputs  []string
	Outputs []string
}

// KernelMap says which original nodes each optimized node computes.
type KernelMap struct {
	// Nodes maps an optimized node name to original node IDs (ascending).
	Nodes map[string][]int
}

// castPrefix is what ONNX Runtime prepends to the names of nodes and tensors it moves to
// float32 when a kernel lacks a float16 implementation (InsertCastTransformer).
const castPrefix = "InsertedPrecisionFreeCast_"

// MapKernels relates the optimized graph's nodes to the original graph g. An optimized node
// stands for:
//
//   - the original node of the same name (ORT keeps names of nodes it fuses into), or, for
//     NCHWc kernels named "<tensor>_nchwc", the producer of that tensor (names and tensors
//     may carry ORT's "InsertedPrecisionFreeCast_" prefix);
//   - the producers of its outputs that exist in g;
//   - transitively, the producers of tensors that vanished from the optimized graph and are
//     read by nodes already included (what a fusion swallowed: Conv+BatchNorm+Relu), except
//     nodes that another optimized node stands for by the two rules above (tensors also
//     vanish when a layout change renames them);
//   - failing all that (layout conversions such as ReorderInput), the producers of its
//     inputs, without the transitive step; or, for a conversion of graph inputs, the nodes
//     the kernels reading its outputs stand for by name.
//
// Nodes that no optimized node stands for were removed (constant folding, Identity
// elimination): they cost nothing at run time.
func MapKernels(g *graph.Graph, opt []OptNode) *KernelMap {
	inOpt := map[string]bool{}
	for _, n := range opt {
		for _, t := range n.Inputs {
			inOpt[t] = true
		}
		for _, t := range n.Outputs {
			inOpt[t] = true
		}
	}
	producer := func(name string) int {
		if id, ok := g.TensorByName(name); ok {
			return g.Tensors[id].Producer
		}
		if id, ok := g.TensorByName(strings.TrimPrefix(name, castPrefix)); ok {
			return g.Tensors[id].Producer
		}
		return -1
	}
	byName := map[string]int{}
	for i := range g.Nodes {
		if nm := g.Nodes[i].Name; nm != "" {
			if _, dup := byName[nm]; !dup {
				byName[nm] = i
			}
		}
	}
	// Phase 1: the nodes each optimized node names directly.
	seeds := make([]map[int]bool, len(opt))
	claimed := map[int]bool{}
	for i, n := range opt {
		set := map[int]bool{}
		name := strings.TrimPrefix(n.Name, castPrefix)
		if v, ok := byName[name]; ok {
			set[v] = true
		} else if t, ok := strings.CutSuffix(name, "_nchwc"); ok {
			if p := producer(t); p >= 0 {
				set[p] = true
			}
		}
		for _, t := range n.Outputs {
			if p := producer(t); p >= 0 {
				set[p] = true
			}
		}
		for v := range set {
			claimed[v] = true
		}
		seeds[i] = set
	}
	// Phase 2: what each swallowed. A tensor can vanish because a fusion consumed it or
	// because a layout change renamed it; the closure stops at nodes another optimized node
	// names, so that only the former is followed.
	km := &KernelMap{Nodes: map[string][]int{}}
	var pending []int
	for i, n := range opt {
		set := seeds[i]
		if len(set) > 0 {
			stack := make([]int, 0, len(set))
			for v := range set {
				stack = append(stack, v)
			}
			for len(stack) > 0 {
				v := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				for _, t := range g.Nodes[v].Deps() {
					tn := &g.Tensors[t]
					p := tn.Producer
					if p < 0 || inOpt[tn.Name] || inOpt[castPrefix+tn.Name] || set[p] || claimed[p] {
						continue
					}
					set[p] = true
					stack = append(stack, p)
				}
			}
		} else {
			for _, t := range n.Inputs {
				if p := producer(t); p >= 0 {
					set[p] = true
				}
			}
		}
		if len(set) == 0 {
			pending = append(pending, i)
			continue
		}
		ids := make([]int, 0, len(set))
		for v := range set {
			ids = append(ids, v)
		}
		sort.Ints(ids)
		km.Nodes[n.Name] = append(km.Nodes[n.Name], ids...)
	}
	// Phase 3: a conversion of graph inputs (ReorderInput, a cast) is charged to what the
	// kernels reading its outputs stand for.
	for _, i := range pending {
		outs := map[string]bool{}
		for _, t := range opt[i].Outputs {
			outs[t] = true
		}
		set := map[int]bool{}
		for _, o := range opt {
			for _, t := range o.Inputs {
				if outs[t] {
					for _, v := range km.Nodes[o.Name] {
						set[v] = true
					}
				}
			}
		}
		if len(set) == 0 {
			continue
		}
		ids := make([]int, 0, len(set))
		for v := range set {
			ids = append(ids, v)
		}
		sort.Ints(ids)
		km.Nodes[opt[i].Name] = ids
	}
	return km
}

// Shares of a kernel's time. A kernel that stands for several original nodes (a fusion)
// shares its time in proportion to their FLOPs when any has FLOPs — a fused Relu or bias add
// costs little next to the convolution it follows — and otherwise to the bytes they move.
// A small constant gives nodes without work a sliver; static nodes get nothing.
func shareWeights(g *graph.Graph, ids []int, out []float64) {
	anyFLOPs := false
	for _, v := range ids {
		anyFLOPs = anyFLOPs || (g.Nodes[v].FLOPs > 0 && !g.Nodes[v].Static)
	}
	for i, v := range ids {
		n := &g.Nodes[v]
		switch {
		case n.Static:
			out[i] = 0
		case anyFLOPs:
			out[i] = float64(n.FLOPs)/100e9 + 1e-9
		default:
			out[i] = nominalWeight(n)
		}
	}
}

// nominalWeight is a node's roofline time on a nominal CPU (100 GFLOP/s, 20 GB/s) plus a
// small constant; 0 for static nodes. It spreads time that no kernel accounts for.
func nominalWeight(n *graph.Node) float64 {
	if n.Static {
		return 0
	}
	b := float64(max(n.InputBytes, 0) + max(n.ParamBytes, 0) + max(n.OutputBytes, 0))
	return math.Max(float64(n.FLOPs)/100e9, b/20e9) + 1e-9
}

// attribute spreads one run's kernel times (with the gaps before them) over the original
// nodes (see shareWeights); kernels that map to nothing are returned as unmapped time.
func attribute(g *graph.Graph, km *KernelMap, run ORTRun, out []float64) (unmapped float64) {
	var w []float64
	for _, k := range run.Kernels {
		ids := km.Nodes[k.Node]
		if len(ids) == 0 {
			unmapped += k.Time()
			continue
		}
		w = append(w[:0], make([]float64, len(ids))...)
		shareWeights(g, ids, w)
		var sum float64
		for _, x := range w {
			sum += x
		}
		for i, v := range ids {
			if sum > 0 {
				out[v] += k.Time() * w[i] / sum
			} else {
				out[v] += k.Time() / float64(len(ids))
			}
		}
	}
	return unmapped
}

// spread distributes t over all non-static nodes in proportion to nominalWeight.
func spread(g *graph.Graph, t float64, out []float64) {
	if t <= 0 {
		return
	}
	var sum float64
	for i := range g.Nodes {
		sum += nominalWeight(&g.Nodes[i])
	}
	if sum <= 0 {
		return
	}
	for i := range g.Nodes {
		out[i] += t * nominalWeight(&g.Nodes[i]) / sum
	}
}

func median(v []float64) float64 { return stats.Median(v) }
