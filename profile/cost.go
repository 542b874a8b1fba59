package profile

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// CostOptions configure a cost model.
type CostOptions struct {
	// Measured, when set, holds per-node times to use instead of the roofline: Measured[d]
	// is for device d (nil for devices without measurements), indexed by node, in seconds;
	// NaN marks a node with no measurement. See MeasureORT and Measurement.NodeTimes.
	Measured [][]float64
}

// CostModel predicts node and transfer times on a cluster.
//
// Node time on device d (the roofline, Williams et al. 2009):
//
//	t = max(FLOPs / (peak_p · eff_c), bytes / (bandwidth · eff_m)) + overhead
//
// where p is the node's precision (PrecisionOf) for matrix classes and fp32 otherwise, eff_c
// and eff_m are the device's efficiencies for the node's op type or class (one figure for both
// unless calibration or a spec file gives the memory term its own), and overhead is the
// calibrated per-node overhead of the class or else the device's kernel-launch figure. The
// memory term is
//
//	activations read and written / bandwidth + weights read / weight rate
//
// where the weights read are the node's parameters (a gather's selected rows only; fp16
// weights at fp32 size on a CPU that computes fp16 in fp32, see nodeWeights) and the weight
// rate is that of the memory level the model's weights live in (WeightRate: the device's
// cache when every weight a call streams fits there, else its memory read rate). A
// matrix-vector product, a decoder's token step, is thereby priced as its weight bytes over
// the rate they stream at. Static nodes (folded before run time) cost nothing; view ops
// (reshape, squeeze, …) cost the overhead; shape arithmetic that only a bound dimension
// makes known (runtimeShape) costs its overhead on a CPU, whose runtime runs it at every call,
// and nothing on other devices, whose runtimes compute it on the host beside the kernels
// (ONNX Runtime places shape computations on its CPU provider) or fold it (TensorRT).
//
// Transfer time from device i to j is bytes / bandwidth + latency along the best route:
// the direct link, or, where the link matrix has no direct link (LinkNone), the path with
// the widest bottleneck (latencies added), as in Moirai §III-C.
type CostModel struct {
	c        *Cluster
	opts     CostOptions
	routeBW  [][]float64
	routeLat [][]float64
	info     infoCache
}

// NewCostModel prepares a cost model for the cluster. The cluster must not change
// afterwards.
func NewCostModel(c *Cluster, opts CostOptions) *CostModel {
	m := &CostModel{c: c, opts: opts}
	m.routeBW, m.routeLat = Routes(c.Links)
	return m
}

// Cluster returns the cluster the model was built for.
func (m *CostModel) Cluster() *Cluster { return m.c }

// Breakdown explains one node's predicted time on one device.
type Breakdown struct {
	Class     OpClass
	Precision Precision
	Compute   float64 // FLOPs / (peak · eff), s
	Memory    float64 // bytes / (bandwidth · eff), s
	Overhead  float64 // s
	Casts     float64 // s: float16 conversions the runtime adds around the node (see casts)
	Eff       Figure  // efficiency of the compute term
	MemEff    Figure  // efficiency of the memory term
	Measured  bool    // Time is a measurement, not the roofline
	Time      float64 // s
}

// NodeTime is the predicted time of node on device, in seconds.
func (m *CostModel) NodeTime(g *graph.Graph, node, device int) float64 {
	return m.Explain(g, node, device).Time
}

// Explain gives the terms of NodeTime.
func (m *CostModel) Explain(g *graph.Graph, node, device int) Breakdown {
	d := &m.c.Devices[device]
	n := &g.Nodes[node]
	b := Breakdown{Class: ClassOn(d, g, n), Precision: PrecisionOn(d, g, n)}
	if device < len(m.opts.Measured) && m.opts.Measured[device] != nil && node < len(m.opts.Measured[device]) {
		if t := m.opts.Measured[device][node]; !math.IsNaN(t) {
			b.Time, b.Measured = t, true
			return b
		}
	}
	b.Eff, b.MemEff = EfficiencyOf(d, n.OpType, b.Class)
	if b.Class == ClassStatic || d.Kind != CPU && runtimeShape(g, n) {
		return b
	}
	b.Overhead = OverheadOf(d, b.Class).Value
	body := 0.0
	if comp, mem, t, ok := cpuKernelTime(d, g, n, m.weightRate(g, d)); ok {
		b.Compute, b.Memory, body = comp, mem, t
		b.Eff, b.MemEff = cpuKernelEff(n), cpuKernelEff(n)
	} else if b.Class != ClassView {
		comp, mem := roofline(d, g, n, b.Class, b.Precision, nodeWeights(d, g, n), m.weightRate(g, d))
		b.Compute, b.Memory = comp/positive(b.Eff.Value), mem/positive(b.MemEff.Value)
		body = math.Max(b.Compute, b.Memory)
	}
	if cb, ck := casts(d, g, []int{node}); ck > 0 {
		b.Casts = castTime(d, cb, ck)
	}
	b.Time = body + b.Overhead + b.Casts
	return b
}

// weightRate is WeightRate of d for the weights a call of g streams.
func (m *CostModel) weightRate(g *graph.Graph, d *Device) float64 {
	return WeightRate(d, m.info.get(g).streamed(d)).Value
}

func positive(x float64) float64 { return math.Max(x, 1e-9) }

// roofline returns the compute and memory terms of node n on d at full efficiency:
// FLOPs / peak (the precision's peak for matrix classes, fp32 otherwise; output channels
// rounded up to the vector width, see lanePadding) and bytes moved: the activations read and
// written at the device's bandwidth, and `weights` bytes of weights at wrate (the device's
// bandwidth when 0).
func roofline(d *Device, g *graph.Graph, n *graph.Node, c OpClass, p Precision, weights, wrate float64) (compute, memory float64) {
	peak := peakOf(d, c, p)
	if n.FLOPs > 0 && peak > 0 {
		compute = float64(n.FLOPs) * lanePadding(g, n, c, d.VectorWidth) / peak
	}
	if bw := d.Bandwidth.Value; bw > 0 {
		if wrate <= 0 {
			wrate = bw
		}
		memory = float64(max(n.InputBytes, 0)+max(n.OutputBytes, 0))/bw + weights/wrate
	}
	return compute, memory
}

// lanePadding is the factor by which vector lanes left idle inflate the work of a
// convolution or matrix product on a device whose kernels block output channels (or output
// columns) by width: ceil(C/width)·width / C. A 4-channel convolution on AVX-512 (16 lanes)
// costs like a 16-channel one. 1 when width ≤ 1 or the shape is unknown.
func lanePadding(g *graph.Graph, n *graph.Node, c OpClass, width int) float64 {
	if width <= 1 {
		return 1
	}
	var ch int64
	switch c {
	case ClassConv, ClassDepthwise:
		if n.OpType == optype.ConvTranspose {
			// Weight [Cin, Cout/group, k…]: output channels are dimension 1 × group.
			if len(n.Inputs) > 1 && n.Inputs[1] >= 0 {
				if w := g.Tensors[n.Inputs[1]].Shape; len(w) >= 2 && w[1].Known() {
					ch = w[1].Value * n.AttrInt("group", 1)
				}
			}
			break
		}
		if len(n.Inputs) > 1 && n.Inputs[1] >= 0 {
			if w := g.Tensors[n.Inputs[1]].Shape; len(w) >= 1 && w[0].Known() {
				ch = w[0].Value
			}
		}
	case ClassMatMul:
		if len(n.Outputs) > 0 && n.Outputs[0] >= 0 {
			if s := g.Tensors[n.Outputs[0]].Shape; len(s) >= 1 && s[len(s)-1].Known() {
				ch = s[len(s)-1].Value
			}
		}
	}
	if ch <= 0 {
		return 1
	}
	w := int64(width)
	return float64((ch+w-1)/w*w) / float64(ch)
}

// EfficiencyOf returns the roofline efficiencies of an op type or class on d for the compute
// and the memory term: the device's entry for the op type, else for the class, else the
// default of the device kind for the op type (defaultOpEfficiency) or the class (one value
// for both terms unless MemEfficiency or defaultMemEfficiency has an entry; a device's
// compute entry replaces the kind's memory default too).
func EfficiencyOf(d *Device, opType string, c OpClass) (compute, memory Figure) {
	compute = fig(defaultEff(d.Kind, c), SourceDefault, effNote)
	memory = Figure{}
	if v, ok := defaultMemEfficiency[d.Kind][c]; ok {
		memory = fig(v, SourceDefault, memEffNoteOf(c))
	}
	if v, ok := defaultOpEfficiency[d.Kind][opType]; ok && c == ClassData {
		compute, memory = fig(v, SourceDefault, opEffNote), Figure{}
	}
	for _, key := range []string{string(c), opType} { // the op type, looked up last, wins
		if f, ok := d.Efficiency[key]; ok {
			compute, memory = f, Figure{}
		}
		if f, ok := d.MemEfficiency[key]; ok {
			memory = f
		}
	}
	if !memory.Known() {
		memory = compute
	}
	return compute, memory
}

// OverheadOf is the per-node overhead of class c on d: the calibrated overhead of the class
// when there is one, else the device's launch figure.
func OverheadOf(d *Device, c OpClass) Figure {
	if f, ok := d.Overhead[string(c)]; ok {
		return f
	}
	return d.Launch
}

// TransferTime is the time to move bytes from device from to device to, in seconds (0 on
// the same device, +Inf when no route exists).
func (m *CostModel) TransferTime(bytes int64, from, to int) float64 {
	return transfer(float64(bytes), m.routeBW[from][to], m.routeLat[from][to], from == to)
}

func transfer(b, bw, lat float64, same bool) float64 {
	if same || b <= 0 {
		return 0
	}
	if bw <= 0 {
		return math.Inf(1)
	}
	return b/bw + lat
}

// Routes computes, for every ordered pair, the widest path's bottleneck bandwidth and its
// summed latency (Floyd–Warshall on the max-min semiring, ties broken by lower latency).
func Routes(links [][]Link) (bw, lat [][]float64) {
	n := len(links)
	bw = make([][]float64, n)
	lat = make([][]float64, n)
	for i := range n {
		bw[i] = make([]float64, n)
		lat[i] = make([]float64, n)
		for j := range n {
			if i == j {
				bw[i][j] = math.Inf(1)
				continue
			}
			if j < len(links[i]) && links[i][j].Kind != LinkNone && links[i][j].Bandwidth.Value > 0 {
				bw[i][j] = links[i][j].Bandwidth.Value
				lat[i][j] = links[i][j].Latency.Value
			}
		}
	}
	for k := range n {
		for i := range n {
			if i == k || bw[i][k] <= 0 {
				continue
			}
			for j := range n {
				if j == i || j == k || bw[k][j] <= 0 {
					continue
				}
				b := math.Min(bw[i][k], bw[k][j])
				l := lat[i][k] + lat[k][j]
				if b > bw[i][j] || b == bw[i][j] && l < lat[i][j] {
					bw[i][j], lat[i][j] = b, l
				}
			}
		}
	}
	return bw, lat
}

// CostTable is the cost model in plain arrays, for solvers.
type CostTable struct {
	// Devices are the device names, in cluster order.
	Devices []string
	// Node[d][v] is the time of node v on device d, seconds.
	Node [][]float64
	// Bandwidth[i][j] (bytes/s) and Latency[i][j] (s) describe the route from device i to j;
	// a transfer of b bytes takes b/Bandwidth + Latency. The diagonal is +Inf and 0: free.
	// Bandwidth 0 means unreachable.
	Bandwidth [][]float64
	Latency   [][]float64
	// Memory[d] is the capacity of device d in bytes (+Inf when unknown).
	Memory []float64
	// RunOverhead[d] is the fixed cost of one inference call on device d, seconds: a stage
	// placed on d pays it once per input.
	RunOverhead []float64
	// IOPerByte[d] is what a stage on device d pays per byte of its inputs and outputs for
	// the call's binding, seconds (1/IOBandwidth; 0 when free).
	IOPerByte []float64
}

// Stage is a first-order stage time from the table: the nodes' times, the run overhead and
// ioBytes of inputs and outputs (CostModel.StageTime also prices broken fusions and layout
// conversions).
func (t *CostTable) Stage(d int, nodes []int, ioBytes float64) float64 {
	s := t.RunOverhead[d] + ioBytes*t.IOPerByte[d]
	for _, v := range nodes {
		s += t.Node[d][v]
	}
	return s
}

// Transfer is the time to move bytes from device i to j.
func (t *CostTable) Transfer(bytes float64, i, j int) float64 {
	return transfer(bytes, t.Bandwidth[i][j], t.Latency[i][j], i == j)
}

// Costs evaluates NodeTime for every node and device of g.
func (m *CostModel) Costs(g *graph.Graph) *CostTable {
	k := len(m.c.Devices)
	t := &CostTable{
		Devices:     make([]string, k),
		Node:        make([][]float64, k),
		Bandwidth:   copyMatrix(m.routeBW),
		Latency:     copyMatrix(m.routeLat),
		Memory:      m.c.Capacities(),
		RunOverhead: make([]float64, k),
		IOPerByte:   make([]float64, k),
	}
	for d := range k {
		t.Devices[d] = m.c.Devices[d].Name
		t.RunOverhead[d] = m.c.Devices[d].RunOverhead.Value
		t.IOPerByte[d] = ioPerByte(&m.c.Devices[d])
		row := make([]float64, len(g.Nodes))
		for v := range g.Nodes {
			row[v] = m.NodeTime(g, v, d)
		}
		t.Node[d] = row
	}
	return t
}

func copyMatrix(a [][]float64) [][]float64 {
	out := make([][]float64, len(a))
	for i := range a {
		out[i] = append([]float64(nil), a[i]...)
	}
	return out
}

func ioPerByte(d *Device) float64 {
	if d.IOBandwidth.Value > 0 {
		return 1 / d.IOBandwidth.Value
	}
	return 0
}

// StageTime is the time of one call of a pipeline stage holding nodes of g on device:
//
//   - the nodes' times, except that an epilogue node (a bias, residual add or activation that
//     the runtime fuses into the convolution or matrix product before it) that is fused in
//     the whole graph but cannot be in the stage costs what it costs alone, as an elementwise
//     node (see layoutCtx.fused: its producer, or a residual input, lies outside the stage);
//   - the device's run overhead;
//   - the stage's input and output bytes (tensors crossing the stage's boundary, graph inputs
//     and outputs included; weights and values known before run time excluded) at the
//     device's IOBandwidth;
//   - the bytes of every tensor the stage must convert between the runtime's blocked layout
//     for convolution and pooling (ONNX Runtime's NCHWc on CPUs) and the plain one and the
//     whole graph need not, at the device's LayoutBandwidth.
func (m *CostModel) StageTime(g *graph.Graph, nodes []int, device int) float64 {
	d := &m.c.Devices[device]
	in := make(map[int]bool, len(nodes))
	for _, v := range nodes {
		in[v] = true
	}
	stage := newLayoutCtx(g, in, d)
	whole := newLayoutCtx(g, nil, d)
	t := d.RunOverhead.Value
	for _, v := range nodes {
		n := &g.Nodes[v]
		if ClassOf(g, n) == ClassEpilogue && whole.fused(v) && !stage.fused(v) {
			t += m.timeAs(g, v, device, ClassElementwise)
			continue
		}
		t += m.NodeTime(g, v, device)
	}
	io, layout := boundary(g, nodes, in, stage, whole)
	t += float64(io) * ioPerByte(d)
	if d.LayoutBandwidth.Value > 0 {
		t += float64(layout) / d.LayoutBandwidth.Value
	}
	return t
}

// CutTimes gives, for every tensor of g, what StageTime charges a stage on device at either
// end of a cut through it (its producer in one stage, consumers in others), in seconds: the
// tensor's bytes through the call's binding (IOBandwidth) and, when its producer writes the
// blocked layout and the whole graph keeps it blocked (no plain reader, not a graph output),
// its bytes at LayoutBandwidth: the producer's stage then converts it out, and a stage that
// reads it with a blocked kernel (a convolution the device runs blocked, pooling) converts it
// back in. A stage whose only readers of the tensor are epilogues fused in the whole graph (a
// residual Add) does not convert it but runs those epilogues unfused, which StageTime prices
// and a per-tensor cost cannot; CutTimes charges the conversion there too. Weights and
// tensors known before run time cost 0 (they never cross).
func (m *CostModel) CutTimes(g *graph.Graph, device int) []float64 {
	d := &m.c.Devices[device]
	whole := newLayoutCtx(g, nil, d)
	per := ioPerByte(d)
	out := make([]float64, len(g.Tensors))
	for t := range g.Tensors {
		tn := &g.Tensors[t]
		if tn.Kind == graph.Initializer || tn.Producer >= 0 && g.Nodes[tn.Producer].Static {
			continue
		}
		b := float64(max(tn.Bytes, 0))
		out[t] = b * per
		if d.LayoutBandwidth.Value > 0 && tn.Producer >= 0 && whole.isBlocked(tn.Producer) && !whole.convertsOut(t) {
			out[t] += b / d.LayoutBandwidth.Value
		}
	}
	return out
}

// IOTime is what a stage on device pays for bytes of graph inputs read or graph outputs
// written through the call's binding (StageTime's I/O term), seconds.
func (m *CostModel) IOTime(bytes int64, device int) float64 {
	return float64(max(bytes, 0)) * ioPerByte(&m.c.Devices[device])
}

// layoutCtx answers, for a set of nodes run in one session (nil: the whole graph), which
// nodes work in the blocked layout on device d and which epilogues fuse.
type layoutCtx struct {
	g       *graph.Graph
	d       *Device
	in      map[int]bool
	blocked map[int]bool
	fusedM  map[int]bool
}

func newLayoutCtx(g *graph.Graph, in map[int]bool, d *Device) *layoutCtx {
	return &layoutCtx{g: g, d: d, in: in, blocked: map[int]bool{}, fusedM: map[int]bool{}}
}

func (c *layoutCtx) inCtx(v int) bool { return v >= 0 && (c.in == nil || c.in[v]) }

// isBlocked: pooling nodes, convolutions the device runs blocked (Device.Blocked), and
// epilogues fused into them.
func (c *layoutCtx) isBlocked(v int) bool {
	if b, ok := c.blocked[v]; ok {
		return b
	}
	c.blocked[v] = false // cycles cannot occur in a DAG; this guards recursion depth
	var b bool
	switch ClassOf(c.g, &c.g.Nodes[v]) {
	case ClassConv, ClassDepthwise:
		b = c.d == nil || c.d.Blocked(c.g, &c.g.Nodes[v])
	case ClassPool:
		b = true
	case ClassEpilogue:
		b = c.fused(v)
	}
	c.blocked[v] = b
	return b
}

// fused reports whether epilogue node v fuses into its producing kernel here: its main
// input comes from a convolution, a matrix product or a fused epilogue in the same session,
// and every other input it reads at run time comes from a blocked node in the session (a
// residual in the blocked layout); an input from outside the session arrives plain.
func (c *layoutCtx) fused(v int) bool {
	if f, ok := c.fusedM[v]; ok {
		return f
	}
	c.fusedM[v] = false
	g := c.g
	main := false
	ok := true
	for _, t := range g.Nodes[v].Inputs {
		if t < 0 {
			continue
		}
		tn := &g.Tensors[t]
		if tn.Kind == graph.Initializer || tn.Producer >= 0 && g.Nodes[tn.Producer].Static {
			continue
		}
		p := tn.Producer
		if !c.inCtx(p) {
			ok = false
			break
		}
		switch ClassOf(g, &g.Nodes[p]) {
		case ClassConv, ClassDepthwise, ClassMatMul:
			if !main {
				main = true
				continue
			}
			ok = ok && c.isBlocked(p)
		case ClassEpilogue:
			if !main && c.fused(p) {
				main = true
				continue
			}
			ok = ok && c.isBlocked(p)
		default:
			ok = ok && c.isBlocked(p)
		}
	}
	f := main && ok
	c.fusedM[v] = f
	return f
}

// convertsOut: the producer of t, in the session, writes the blocked layout and t is needed
// plain (by a consumer outside the session or not blocked, or as a graph output).
func (c *layoutCtx) convertsOut(t int) bool {
	tn := &c.g.Tensors[t]
	if !c.inCtx(tn.Producer) || !c.isBlocked(tn.Producer) {
		return false
	}
	if tn.IsOutput {
		return true
	}
	for _, k := range tn.Consumers {
		if !c.inCtx(k) || !c.isBlocked(k) {
			return true
		}
	}
	return false
}

// convertsIn: a blocked consumer in the session reads t, which arrives plain.
func (c *layoutCtx) convertsIn(t int) bool {
	tn := &c.g.Tensors[t]
	if c.inCtx(tn.Producer) && c.isBlocked(tn.Producer) {
		return false
	}
	for _, k := range tn.Consumers {
		if c.inCtx(k) && c.isBlocked(k) && !c.fusedReads(k, t) {
			return true
		}
	}
	return false
}

// fusedReads: k is an epilogue whose main input is t (read inside the fused kernel).
func (c *layoutCtx) fusedReads(k, t int) bool {
	n := &c.g.Nodes[k]
	return ClassOf(c.g, n) == ClassEpilogue && c.fused(k) && len(n.Inputs) > 0 && c.g.Tensors[t].Producer >= 0
}

// boundary returns the bytes of the tensors crossing a stage's boundary (read by the stage
// and produced outside it, or produced by it and read outside it or a graph output), and the
// bytes the stage converts between layouts beyond what the whole graph converts. Tensors
// known before run time (weights, static nodes' outputs) do not cross.
func boundary(g *graph.Graph, nodes []int, in map[int]bool, stage, whole *layoutCtx) (io, layout int64) {
	seenIO := map[int]bool{}
	seenOut := map[int]bool{}
	seenIn := map[int]bool{}
	for _, v := range nodes {
		n := &g.Nodes[v]
		if n.Static {
			continue
		}
		for _, t := range n.Deps() {
			tn := &g.Tensors[t]
			if tn.Kind == graph.Initializer || tn.Producer >= 0 && g.Nodes[tn.Producer].Static {
				continue
			}
			b := max(tn.Bytes, 0)
			if !(tn.Producer >= 0 && in[tn.Producer]) && !seenIO[t] {
				seenIO[t] = true
				io += b
			}
			if !seenIn[t] {
				seenIn[t] = true
				if stage.convertsIn(t) && !whole.convertsIn(t) {
					layout += b
				}
			}
		}
		for _, t := range n.Outputs {
			if t < 0 || seenOut[t] {
				continue
			}
			seenOut[t] = true
			tn := &g.Tensors[t]
			b := max(tn.Bytes, 0)
			out := tn.IsOutput
			for _, k := range tn.Consumers {
				out = out || !in[k]
			}
			if out && !seenIO[t] {
				seenIO[t] = true
				io += b
			}
			if stage.convertsOut(t) && !whole.convertsOut(t) {
				layout += b
			}
		}
	}
	return io, layout
}

// timeAs is the roofline time of node v priced as op class c. (A measured time of a fused
// node is its share of the fused kernel, not what it costs alone.)
func (m *CostModel) timeAs(g *graph.Graph, v, device int, c OpClass) float64 {
	d := &m.c.Devices[device]
	n := &g.Nodes[v]
	eff, memEff := EfficiencyOf(d, n.OpType, c)
	comp, mem := roofline(d, g, n, c, PrecisionOn(d, g, n), nodeWeights(d, g, n), m.weightRate(g, d))
	return math.Max(comp/positive(eff.Value), mem/positive(memEff.Value)) + OverheadOf(d, c).Value
}

// KernelTime prices a fused kernel on device: kernel carries the group's cost fields (as
// fusion.Grouping builds them: FLOPs of the members, bytes entering and leaving the group) and
// members are the original nodes of g it stands for. The roofline uses the op class and
// precision of the member with the most FLOPs (the first non-view member when none has any),
// the kernel's activation bytes and its members' weights (nodeWeights, at the weight rate of
// the model: see CostModel), and one overhead for the kernel; a group whose members are all
// folded before run time (static, or shape arithmetic: foldable) is free.
//
// On a CPU, whose runtime (ONNX Runtime's CPU provider) dispatches every node it does not
// fuse, the group also pays the overhead of each view it folded in (Reshape, Unsqueeze, …:
// cheap, but a kernel each) and a share of each piece of shape arithmetic it recomputes
// (runtimeShape: the runtime runs it once, the rule set copies it into every group that
// needs it, so each copy pays 1 / copies). And an attention group (two products of
// activations around a Softmax: Q·Kᵀ and P·V) costs what its members cost one after another,
// the scores written and read back: ONNX Runtime's CPU kernels materialise them, whether the
// runtime fused the block into its Attention op or, as on a raw decoder export, did not. On
// other devices such a group is one fused kernel, one memory-bound pass over Q, K, V, mask and
// output at decode (a flash-attention kernel: TensorRT's MHA fusion, ONNX Runtime's CUDA
// attention ops).
//
// With measured times for the device (CostOptions.Measured), a group costs the sum of its
// members' measured times: each member carries its share of the kernel ONNX Runtime ran
// (MeasureORT attributes a fused kernel's time to the nodes it stands for, and 0 to nodes
// the runtime removed), so the sum is the measured time of the runtime's kernels for the
// group. Members without a measurement (NaN) are priced by NodeTime's roofline.
func (m *CostModel) KernelTime(g *graph.Graph, members []int, kernel *graph.Node, device int) float64 {
	return m.KernelExplain(g, members, kernel, device).Time
}

// KernelKind says what dominates a fused kernel's time, for breakdowns of a model's time.
type KernelKind string

// Kernel kinds.
const (
	KindWeights     KernelKind = "weights"     // matrix products with a weight operand: GEMM, or GEMV streaming its weights
	KindAttention   KernelKind = "attention"   // products of two activations (Q·Kᵀ, P·V over the KV cache), attention groups
	KindElementwise KernelKind = "elementwise" // arithmetic, activations, normalisation, softmax
	KindData        KernelKind = "data"        // copies, gathers, concatenations, views
	KindOther       KernelKind = "other"       // convolutions, pooling, control flow, unknown ops
)

// KernelKinds lists the kinds in a fixed order.
func KernelKinds() []KernelKind {
	return []KernelKind{KindWeights, KindAttention, KindElementwise, KindData, KindOther}
}

// KernelBreakdown explains a fused kernel's predicted time.
type KernelBreakdown struct {
	Kind KernelKind
	// Lead is the member whose class prices the kernel (-1: every member is folded).
	Lead int
	// Compute and Memory are the roofline terms (s, efficiencies applied), Weights the
	// weight bytes streamed and WeightRate their rate (bytes/s).
	Compute, Memory     float64
	Weights, WeightRate float64
	// Overhead is the fixed time: the kernel's, plus on a CPU the views and shape arithmetic
	// the runtime dispatches besides it (Dispatched of them, shares counted as fractions).
	Overhead   float64
	Dispatched float64
	// Casts is the time of the float16 conversions the runtime adds around the group on a
	// CPU that computes float16 in float32 (see casts), their overheads included.
	Casts float64
	// Unfused marks an attention group priced as its members one after another (CPU).
	Unfused  bool
	Measured bool
	Time     float64 // s
}

// KernelExplain gives the terms of KernelTime.
func (m *CostModel) KernelExplain(g *graph.Graph, members []int, kernel *graph.Node, device int) KernelBreakdown {
	d := &m.c.Devices[device]
	lead := kernelLead(d, g, members)
	b := KernelBreakdown{Lead: lead, Kind: KindOther}
	attention := attentionGroup(g, members)
	if lead >= 0 {
		b.Kind = kindOf(g, &g.Nodes[lead])
		if attention {
			b.Kind = KindAttention
		}
		if c, _, ok := GroupKernel(d, g, members, lead); ok && c == ClassMatMulInt8 {
			b.Kind = KindWeights
		}
	}
	if t, ok := m.measuredSum(g, members, device); ok {
		b.Time, b.Measured = t, true
		return b
	}
	if lead < 0 {
		return b
	}
	b.WeightRate = m.weightRate(g, d)
	if d.Kind == CPU {
		b.Overhead, b.Dispatched = m.dispatched(g, members, lead, d)
		if attention {
			// The members one after another (each with its own casts); views are in
			// Dispatched already.
			b.Unfused = true
			b.Time = b.Overhead
			for _, v := range members {
				n := &g.Nodes[v]
				if foldable(g, n) || ClassOf(g, n) == ClassView {
					continue
				}
				x := m.Explain(g, v, device)
				b.Compute += x.Compute
				b.Memory += x.Memory
				b.Overhead += x.Overhead
				b.Casts += x.Casts
				b.Time += x.Time
				b.Weights += nodeWeights(d, g, n)
			}
			return b
		}
		if cb, ck := casts(d, g, members); ck > 0 {
			b.Casts = castTime(d, cb, ck)
		}
	}
	ln := &g.Nodes[lead]
	c, p := ClassOn(d, g, ln), PrecisionOn(d, g, ln)
	qc, qw, int8Group := GroupKernel(d, g, members, lead)
	if int8Group {
		c, p = qc, INT8
	}
	eff, memEff := EfficiencyOf(d, ln.OpType, c)
	b.Overhead += OverheadOf(d, c).Value
	b.Time = b.Overhead + b.Casts
	if comp, mem, t, ok := cpuKernelTime(d, g, ln, b.WeightRate); ok {
		// The lead as ONNX Runtime's CPU kernel runs it, and the group's other kernels
		// (epilogues it does not fuse) one after another.
		b.Compute, b.Memory = comp, mem
		b.Weights = nodeWeights(d, g, ln)
		b.Time += t
		for _, v := range members {
			if n := &g.Nodes[v]; v != lead && !foldable(g, n) && ClassOf(g, n) != ClassView {
				x := m.Explain(g, v, device)
				b.Compute += x.Compute
				b.Memory += x.Memory
				b.Weights += nodeWeights(d, g, n)
				b.Time += x.Time - x.Overhead - x.Casts
			}
		}
		return b
	}
	if c == ClassView && kernel.FLOPs == 0 {
		return b
	}
	for _, v := range members {
		if !foldable(g, &g.Nodes[v]) {
			b.Weights += nodeWeights(d, g, &g.Nodes[v])
		}
	}
	b.Weights += qw
	comp, mem := roofline(d, g, kernel, c, p, b.Weights, b.WeightRate)
	// The lane padding of the lead node applies to the group's FLOPs.
	if kernel.FLOPs > 0 && ln.FLOPs > 0 {
		comp *= lanePadding(g, ln, c, d.VectorWidth) / lanePadding(g, kernel, c, d.VectorWidth)
	}
	b.Compute, b.Memory = comp/positive(eff.Value), mem/positive(memEff.Value)
	b.Time = math.Max(b.Compute, b.Memory) + b.Overhead + b.Casts
	return b
}

// kindOf is the kernel kind of a node.
func kindOf(g *graph.Graph, n *graph.Node) KernelKind {
	switch ClassOf(g, n) {
	case ClassMatMul:
		if n.ParamBytes > 0 {
			return KindWeights
		}
		return KindAttention
	case ClassElementwise, ClassEpilogue, ClassNorm:
		return KindElementwise
	case ClassData, ClassView, ClassStatic:
		return KindData
	}
	return KindOther
}

// measuredSum is the sum of the members' times when the device has measured times for any of
// them (roofline NodeTime for the others); ok is false without measurements.
func (m *CostModel) measuredSum(g *graph.Graph, members []int, device int) (t float64, ok bool) {
	if device >= len(m.opts.Measured) || m.opts.Measured[device] == nil {
		return 0, false
	}
	meas := m.opts.Measured[device]
	for _, v := range members {
		if v < len(meas) && !math.IsNaN(meas[v]) {
			ok = true
			break
		}
	}
	if !ok {
		return 0, false
	}
	for _, v := range members {
		if v < len(meas) && !math.IsNaN(meas[v]) {
			t += meas[v]
			continue
		}
		t += m.NodeTime(g, v, device)
	}
	return t, true
}

// kernelLead is the member of a fused group whose op class and precision price the kernel:
// the one with the most FLOPs, the first non-view member when none has any, among the members
// that are not folded before run time (foldable); -1 when every member is (on a CPU, whose
// runtime runs shape arithmetic, only when every member is static).
func kernelLead(d *Device, g *graph.Graph, members []int) int {
	pick := func(skip func(n *graph.Node) bool) int {
		lead := -1
		for _, v := range members {
			n := &g.Nodes[v]
			if skip(n) {
				continue
			}
			c := ClassOn(d, g, n)
			if lead < 0 || n.FLOPs > g.Nodes[lead].FLOPs || ClassOf(g, &g.Nodes[lead]) == ClassView && c != ClassView {
				lead = v
			}
		}
		return lead
	}
	// Shape arithmetic a group recomputes is not its kernel; a group of nothing else runs it
	// on a CPU only (see NodeTime).
	if lead := pick(func(n *graph.Node) bool { return foldable(g, n) }); lead >= 0 || d.Kind != CPU {
		return lead
	}
	return pick(func(n *graph.Node) bool { return n.Static })
}

// KernelOverhead is the fixed part of KernelTime (the lead member's class overhead, and on a
// CPU the other kernels the runtime dispatches for the group): what a kernel costs once
// however many inputs it processes together (0 for a group folded before run time).
func (m *CostModel) KernelOverhead(g *graph.Graph, members []int, device int) float64 {
	d := &m.c.Devices[device]
	lead := kernelLead(d, g, members)
	if lead < 0 {
		return 0
	}
	if d.Kind != CPU || len(members) == 1 {
		return OverheadOf(d, ClassOn(d, g, &g.Nodes[lead])).Value
	}
	// As KernelExplain on a CPU: the views and shape arithmetic dispatched besides the
	// kernel, and an attention group's members one after another.
	t, _ := m.dispatched(g, members, lead, d)
	if !attentionGroup(g, members) {
		return t + OverheadOf(d, ClassOn(d, g, &g.Nodes[lead])).Value
	}
	for _, v := range members {
		if n := &g.Nodes[v]; !foldable(g, n) && ClassOf(g, n) != ClassView {
			t += OverheadOf(d, ClassOn(d, g, n)).Value
		}
	}
	return t
}

// NodeOverhead is the fixed part of node v's time on device (its class overhead; 0 for a
// static node).
func (m *CostModel) NodeOverhead(g *graph.Graph, v, device int) float64 {
	return m.KernelOverhead(g, []int{v}, device)
}

// ClassTimes sums the predicted times of g's nodes per op class (ClassOn) on device d.
func (m *CostModel) ClassTimes(g *graph.Graph, d int) map[OpClass]float64 {
	out := map[OpClass]float64{}
	for v := range g.Nodes {
		out[ClassOn(&m.c.Devices[d], g, &g.Nodes[v])] += m.NodeTime(g, v, d)
	}
	return out
}

// String summarises a breakdown for debugging output.
func (b Breakdown) String() string {
	return fmt.Sprintf("%s/%s compute %s memory %s overhead %s eff %.3g/%.3g → %s", b.Class, b.Precision,
		FormatQuantity(b.Compute, Seconds), FormatQuantity(b.Memory, Seconds),
		FormatQuantity(b.Overhead, Seconds), b.Eff.Value, b.MemEff.Value, FormatQuantity(b.Time, Seconds))
}

// dispatched is what a CPU's runtime spends dispatching the members of a group besides its
// kernel: the overhead of every view member other than the lead, and each piece of shape
// arithmetic's overhead times its share (graphInfo.share); with the number of such kernels
// (shares as fractions).
func (m *CostModel) dispatched(g *graph.Graph, members []int, lead int, d *Device) (t, kernels float64) {
	gi := m.info.get(g)
	for _, v := range members {
		n := &g.Nodes[v]
		switch {
		case v == lead || n.Static:
		case runtimeShape(g, n):
			t += gi.share[v] * OverheadOf(d, ClassOf(g, n)).Value
			kernels += gi.share[v]
		case !foldable(g, n) && ClassOf(g, n) == ClassView:
			t += OverheadOf(d, ClassView).Value
			kernels++
		}
	}
	return t, kernels
}

// attentionGroup reports whether members hold an attention block: a Softmax and two matrix
// products of activations (no weight operand), Q·Kᵀ and P·V.
func attentionGroup(g *graph.Graph, members []int) bool {
	softmax, products := false, 0
	for _, v := range members {
		n := &g.Nodes[v]
		if n.Static {
			continue
		}
		switch {
		case n.OpType == optype.Softmax:
			softmax = true
		case ClassOf(g, n) == ClassMatMul && n.ParamBytes == 0:
			products++
		}
	}
	return softmax && products >= 2
}
