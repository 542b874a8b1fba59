package profile

import (
	"fmt"
	"math"
	"sync"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// Weight streaming and what a runtime does around its kernels, for the roofline of LLM
// decoders (issue 32): a token step multiplies one row by every weight matrix, so its time is
// the weights' bytes over the rate of the memory level they live in, plus the fixed cost of
// each kernel the runtime dispatches.

// foldable reports whether node n's outputs are known before run time once the model's
// dimensions are bound: Static nodes (constants, weight-only subgraphs), and shape arithmetic
// whose every output ingest folded (graph.Tensor.Value). Fusion rule sets absorb exactly these
// (package fusion, absorbable). Nodes with subgraphs or outside the ONNX domain are never
// foldable.
func foldable(g *graph.Graph, n *graph.Node) bool {
	if n.Subgraphs > 0 || (n.Domain != "" && n.Domain != "ai.onnx") {
		return false
	}
	return n.Static || runtimeShape(g, n)
}

// runtimeShape reports whether n is shape arithmetic on activations: not Static, but every
// output folded from shapes (Shape, Gather of a dimension, Unsqueeze, Concat of dimensions,
// Range over dimensions, …). A model exported with symbolic input dimensions (every LLM
// decoder: batch, sequence and past length vary) runs these at every call: ONNX Runtime
// cannot fold them when the session is created, since the shapes are only known at run time.
func runtimeShape(g *graph.Graph, n *graph.Node) bool {
	if n.Static || n.Subgraphs > 0 || (n.Domain != "" && n.Domain != "ai.onnx") {
		return false
	}
	outs := 0
	for _, t := range n.Outputs {
		if t < 0 {
			continue
		}
		if g.Tensors[t].Value == nil {
			return false
		}
		outs++
	}
	return outs > 0
}

// widensHalf reports whether d's runtime computes float16 in float32 (a CPU without an fp16
// rate above its fp32 one: ONNX Runtime's CPU provider has no fp16 MatMul kernel on such
// CPUs, so its InsertCastTransformer puts Casts around the node and constant folding turns
// fp16 weights into fp32 initializers when the session is created). Its kernels then stream
// fp16 weights at 4 bytes per element.
func widensHalf(d *Device) bool {
	return d.Kind == CPU && d.PeakFor(FP16).Value <= d.Peak[FP32].Value
}

// gatherOps read only the rows their indices select from their data input.
var gatherOps = map[string]bool{optype.Gather: true, optype.GatherElements: true, optype.GatherND: true, optype.GatherBlockQuantized: true}

// nodeWeights is the number of weight bytes node n reads from memory in one call on d: its
// ParamBytes, except that a gather reads only the rows it selects (at most its output's
// bytes: a token embedding or a rotary table is not read whole), and that on a device that
// widens float16 (widensHalf) the fp16 weights of arithmetic ops count twice.
func nodeWeights(d *Device, g *graph.Graph, n *graph.Node) float64 {
	w := float64(max(n.ParamBytes, 0))
	if w == 0 {
		return 0
	}
	if gatherOps[n.OpType] && len(n.Inputs) > 0 && n.Inputs[0] >= 0 && g.IsParam(n.Inputs[0]) {
		table := float64(max(g.Tensors[n.Inputs[0]].Bytes, 0))
		return w - table + min(table, float64(max(n.OutputBytes, 0)))
	}
	if rows := rotaryRows(g, n); rows > 0 {
		// Rotary caches ([positions, rotary dim / 2], cos and sin): only the rows of the
		// positions rotated are read.
		for _, t := range n.Inputs {
			if t < 0 || !g.IsParam(t) {
				continue
			}
			tn := &g.Tensors[t]
			if dims, ok := ops.Dims(g, t); ok && len(dims) == 2 && dims[0] > 0 && tn.Bytes > 0 {
				table := float64(tn.Bytes)
				w += min(table, rows*table/float64(dims[0])) - table
			}
		}
		return w
	}
	if widensHalf(d) && !dataClass(ClassOf(g, n)) {
		for _, t := range n.Inputs {
			if t >= 0 && g.IsParam(t) && (g.Tensors[t].DType == graph.Float16 || g.Tensors[t].DType == graph.BFloat16) {
				w += float64(max(g.Tensors[t].Bytes, 0))
			}
		}
	}
	return w
}

// rotaryRows is the number of positions a rotary embedding reads from its cos and sin caches
// (the new rows of every sequence: GroupQueryAttention with do_rotary, RotaryEmbedding), 0
// for other nodes or when unknown.
func rotaryRows(g *graph.Graph, n *graph.Node) float64 {
	switch {
	case n.OpType == optype.GroupQueryAttention && n.AttrInt("do_rotary", 0) != 0:
		if o, ok := ops.Dims(g, ops.Out(n, 0)); ok && len(o) == 3 {
			return float64(o[0] * o[1])
		}
	case n.OpType == optype.RotaryEmbedding:
		if p, ok := ops.Dims(g, ops.In(n, 1)); ok && len(p) > 0 {
			r := int64(1)
			for _, x := range p {
				r *= x
			}
			return float64(r)
		}
	}
	return 0
}

// dataClass: classes whose kernels move elements without arithmetic (any element type runs
// natively).
func dataClass(c OpClass) bool {
	return c == ClassData || c == ClassView || c == ClassStatic
}

// WeightRate is the rate at which d's kernels stream weights when a call reads `total` bytes
// of them. Each call reads every weight once, as a scan cycles through a working set, so with
// a measured read sweep (d.Reads) it is the sweep's rate at `total` bytes (interpolated
// between the measured sizes in log size; the smallest or largest size's rate beyond them):
// the cache's rate while the weights fit, the memory's when they are far larger, what the
// machine does in between. Without one: d.CacheBandwidth when they all fit in d.Cache (each
// weight is then still in the cache at the next call: a decoder's next token step, a
// pipeline stage's next input), else d.ReadBandwidth, else d.Bandwidth.
func WeightRate(d *Device, total float64) Figure {
	if r := d.Reads; len(r) > 0 {
		v := r[0].Rate
		for i := 1; i < len(r); i++ {
			lo, hi := float64(r[i-1].Bytes), float64(r[i].Bytes)
			if total <= lo {
				break
			}
			if total >= hi {
				v = r[i].Rate
				continue
			}
			f := math.Log(total/lo) / math.Log(hi/lo)
			v = r[i-1].Rate + f*(r[i].Rate-r[i-1].Rate)
			break
		}
		return fig(v, SourceMeasured, fmt.Sprintf("read sweep at %s of weights", FormatQuantity(total, Bytes)))
	}
	if d.Cache.Value > 0 && d.CacheBandwidth.Value > 0 && total <= d.Cache.Value {
		f := d.CacheBandwidth
		f.Note = fmt.Sprintf("%s of weights fit in the %s cache: %s", FormatQuantity(total, Bytes), FormatQuantity(d.Cache.Value, Bytes), f.Note)
		return f
	}
	if d.ReadBandwidth.Value > 0 {
		return d.ReadBandwidth
	}
	return d.Bandwidth
}

// graphInfo caches what the cost model derives from a whole graph.
type graphInfo struct {
	nodes int
	// weights[h] is the sum of nodeWeights over the nodes that run (not foldable), on a
	// device that widens float16 (h = 1) or not (h = 0).
	weights [2]float64
	// share[v] is, for shape arithmetic v (runtimeShape), 1 / the number of kernels that
	// read its result directly or through other foldable nodes: a fusion rule set copies v
	// into every group that needs it, while the runtime runs it once.
	share []float64
}

// infoCache holds the graphInfo of the last few graphs a cost model priced.
type infoCache struct {
	mu sync.Mutex
	m  map[*graph.Graph]*graphInfo
}

// maxInfo bounds the graphs whose information a cost model keeps.
const maxInfo = 16

func (c *infoCache) get(g *graph.Graph) *graphInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gi, ok := c.m[g]; ok && gi.nodes == len(g.Nodes) {
		return gi
	}
	if c.m == nil || len(c.m) >= maxInfo {
		c.m = map[*graph.Graph]*graphInfo{}
	}
	gi := newGraphInfo(g)
	c.m[g] = gi
	return gi
}

func newGraphInfo(g *graph.Graph) *graphInfo {
	gi := &graphInfo{nodes: len(g.Nodes), share: make([]float64, len(g.Nodes))}
	plain, wide := &Device{Kind: GPU}, &Device{Kind: CPU}
	for v := range g.Nodes {
		n := &g.Nodes[v]
		if foldable(g, n) {
			continue
		}
		gi.weights[0] += nodeWeights(plain, g, n)
		gi.weights[1] += nodeWeights(wide, g, n)
	}
	// readers[v]: the nodes that run and read v's result, directly or through foldable
	// nodes (sets, in reverse topological order).
	readers := make([]map[int]bool, len(g.Nodes))
	topo := g.TopoOrder()
	for i := len(topo) - 1; i >= 0; i-- {
		v := topo[i]
		if !foldable(g, &g.Nodes[v]) {
			continue
		}
		r := map[int]bool{}
		for _, s := range g.Succs(v) {
			if foldable(g, &g.Nodes[s]) {
				for x := range readers[s] {
					r[x] = true
				}
				continue
			}
			r[s] = true
		}
		readers[v] = r
		if runtimeShape(g, &g.Nodes[v]) {
			gi.share[v] = 1 / float64(max(len(r), 1))
		}
	}
	return gi
}

// streamed is the weight bytes a call of g reads on d.
func (gi *graphInfo) streamed(d *Device) float64 {
	if widensHalf(d) {
		return gi.weights[1]
	}
	return gi.weights[0]
}

func isHalf(dt graph.DType) bool { return dt == graph.Float16 || dt == graph.BFloat16 }

// widened reports whether node n computes float16 in float32 on d (widensHalf): an arithmetic
// node (not data movement, not a Cast, not folded) with a float16 activation among its inputs
// or outputs.
func widened(d *Device, g *graph.Graph, n *graph.Node) bool {
	if !widensHalf(d) || n.OpType == optype.Cast || n.OpType == optype.CastLike || foldable(g, n) || dataClass(ClassOf(g, n)) {
		return false
	}
	for _, list := range [][]int{n.Inputs, n.Outputs} {
		for _, t := range list {
			if t >= 0 && isHalf(g.Tensors[t].DType) && !g.IsParam(t) {
				return true
			}
		}
	}
	return false
}

// castBytesPerHalf is the traffic a widening Cast causes per byte of the float16 tensor: the
// Cast reads it (1) and writes it as float32 (2), and the node reads the float32 copy (2)
// where it would have read the float16 tensor (1): 1 + 2 + 2 − 1.
const castBytesPerHalf = 4

// casts is the traffic, in bytes, and the number of the Casts that d's runtime puts around
// the widened members of a group (members; a single node for NodeTime): one on every float16
// activation a widened member reads that comes neither from inside the group nor from another
// widened node, and one on every float16 output of a widened member read by a node that is
// not widened or outside the group, or that is a graph output. ONNX Runtime's
// InsertCastTransformer does this for nodes without a float16 kernel, and removes the pairs
// that cancel between two such nodes.
func casts(d *Device, g *graph.Graph, members []int) (bytes, kernels float64) {
	if !widensHalf(d) {
		return 0, 0
	}
	in := make(map[int]bool, len(members))
	for _, v := range members {
		in[v] = true
	}
	seen := map[int]bool{}
	for _, v := range members {
		n := &g.Nodes[v]
		if !widened(d, g, n) {
			continue
		}
		for _, t := range n.Inputs {
			if t < 0 || seen[t] || g.IsParam(t) || !isHalf(g.Tensors[t].DType) {
				continue
			}
			if p := g.Tensors[t].Producer; p >= 0 && (in[p] || widened(d, g, &g.Nodes[p])) {
				continue
			}
			seen[t] = true
			bytes += castBytesPerHalf * float64(max(g.Tensors[t].Bytes, 0))
			kernels++
		}
		for _, t := range n.Outputs {
			if t < 0 || seen[t] || !isHalf(g.Tensors[t].DType) {
				continue
			}
			tn := &g.Tensors[t]
			need := tn.IsOutput
			for _, c := range tn.Consumers {
				need = need || !in[c] && !widened(d, g, &g.Nodes[c])
			}
			if need {
				seen[t] = true
				bytes += castBytesPerHalf * float64(max(tn.Bytes, 0))
				kernels++
			}
		}
	}
	return bytes, kernels
}

// castTime is the time of the Casts of casts on d: their traffic at the device's bandwidth
// with the elementwise class's memory efficiency, and each one's overhead.
func castTime(d *Device, bytes, kernels float64) float64 {
	if kernels == 0 {
		return 0
	}
	_, memEff := EfficiencyOf(d, optype.Cast, ClassElementwise)
	t := kernels * OverheadOf(d, ClassElementwise).Value
	if bw := d.Bandwidth.Value; bw > 0 {
		t += bytes / bw / positive(memEff.Value)
	}
	return t
}
