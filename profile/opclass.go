package profile

import (
	"math"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// OpClass groups ONNX op types that behave alike under the roofline: one efficiency (and,
// after calibration, one per-node overhead) per class and device. Each op's class is its
// entry's in the op registry (internal/ops); ClassOf refines it by the node's context.
type OpClass string

// Op classes.
const (
	ClassMatMul         OpClass = "matmul"               // MatMul, Gemm, attention and their quantised forms
	ClassConv           OpClass = "conv"                 // dense and grouped convolutions
	ClassDepthwise      OpClass = "conv-depthwise"       // convolutions with one input channel per group
	ClassDepthwisePlain OpClass = "conv-depthwise-plain" // depthwise convolutions a CPU runtime runs outside its blocked layout (Device.Blocked): a slow generic path
	ClassPool           OpClass = "pool"                 // max/average/global pooling
	ClassNorm           OpClass = "norm"                 // normalisation, softmax, reductions
	ClassElementwise    OpClass = "elementwise"          // arithmetic and activations
	ClassEpilogue       OpClass = "epilogue"             // elementwise right after a GEMM-like node (fusable)
	ClassData           OpClass = "data"                 // data movement that copies: transpose, concat, gather, …
	ClassView           OpClass = "view"                 // metadata-only ops: reshape, squeeze, identity, …
	ClassControl        OpClass = "control"              // If, Loop, Scan
	ClassOther          OpClass = "other"                // anything else
	ClassStatic         OpClass = "static"               // computable before run time (folded away): free

	// Kernel classes of contrib and quantised ops (the op registry's Entry.Kernels, per
	// backend), and of QDQ-wrapped convolutions and matrix products that a backend's fusion
	// rules turn into one int8 kernel (see GroupKernel).
	ClassAttention  OpClass = OpClass(ops.ClassAttention)  // fused attention (flash attention on a GPU; ORT's CPU attention kernels)
	ClassNBits      OpClass = OpClass(ops.ClassNBits)      // int4 block-quantised weights, float arithmetic (MatMulNBits)
	ClassNBitsInt8  OpClass = OpClass(ops.ClassNBitsInt8)  // int4 weights, int8 activations and dot products (MatMulNBits accuracy_level 4 on a CPU)
	ClassConvInt8   OpClass = OpClass(ops.ClassConvInt8)   // int8 convolution
	ClassMatMulInt8 OpClass = OpClass(ops.ClassMatMulInt8) // int8 matrix product
)

// Classes lists every class in a fixed order.
func Classes() []OpClass {
	return []OpClass{ClassMatMul, ClassConv, ClassDepthwise, ClassDepthwisePlain, ClassPool, ClassNorm, ClassElementwise,
		ClassEpilogue, ClassData, ClassView, ClassControl, ClassOther, ClassStatic,
		ClassAttention, ClassNBits, ClassNBitsInt8, ClassConvInt8, ClassMatMulInt8}
}

func IsClass(s string) bool {
	for _, c := range Classes() {
		if string(c) == s {
			return true
		}
	}
	return false
}

// ClassOf classifies node n of g. Static nodes (whose value is known before run time) are
// ClassStatic; a convolution whose groups equal its input channels is ClassDepthwise; an
// elementwise node is ClassEpilogue when it reads the only use of a convolution's or matrix
// product's output, directly or through other epilogue nodes (bias, residual add,
// activation: what runtimes fuse into the producing kernel) and writes as many elements as it
// reads from there (see sameSize).
func ClassOf(g *graph.Graph, n *graph.Node) OpClass {
	return classOf(g, n, 0)
}

func classOf(g *graph.Graph, n *graph.Node, depth int) OpClass {
	if n.Static {
		return ClassStatic
	}
	c := OpClass(ops.ClassOf(n))
	if c == ClassElementwise && depth < 4 && isEpilogue(g, n, depth) {
		return ClassEpilogue
	}
	if c == ClassConv {
		if grp := n.AttrInt("group", 1); grp > 1 && len(n.Inputs) > 1 && n.Inputs[1] >= 0 {
			// Weight shape [Cout, Cin/group, k…]: one input channel per group is depthwise.
			if w := g.Tensors[n.Inputs[1]].Shape; len(w) >= 2 && w[1].Known() && w[1].Value == 1 {
				return ClassDepthwise
			}
		}
	}
	return c
}

// ClassOn is ClassOf for device d: the class of the kernel d's backend runs the op with when
// the op registry gives one (ops.KernelFor: fused attention, int4 weight streaming, int8
// arithmetic), and a depthwise convolution whose channel count the blocked kernels of d's
// runtime do not accept is ClassDepthwisePlain (see Device.ChannelAlign and Blocked).
func ClassOn(d *Device, g *graph.Graph, n *graph.Node) OpClass {
	c := ClassOf(g, n)
	if c == ClassStatic {
		return c
	}
	if k, ok := ops.KernelFor(n, backendOf(d)); ok {
		return OpClass(k.Class)
	}
	if c == ClassDepthwise && !d.Blocked(g, n) {
		return ClassDepthwisePlain
	}
	return c
}

// backendOf is the op registry's backend for device d: ONNX Runtime's CPU provider on a CPU,
// the GPU kernels (ORT's CUDA provider, TensorRT) elsewhere.
func backendOf(d *Device) ops.Backend {
	if d.Kind == CPU {
		return ops.CPU
	}
	return ops.GPU
}

// PrecisionOn is PrecisionOf for device d: int8 where d's backend runs the op with integer
// arithmetic (ops.KernelFor: MatMulNBits at accuracy_level 4 on a CPU).
func PrecisionOn(d *Device, g *graph.Graph, n *graph.Node) Precision {
	if k, ok := ops.KernelFor(n, backendOf(d)); ok && k.Int8 {
		return INT8
	}
	return PrecisionOf(g, n)
}

// int8Kernel: the classes of integer kernels.
func int8Kernel(c OpClass) bool {
	return c == ClassConvInt8 || c == ClassMatMulInt8 || c == ClassNBitsInt8
}

// cpuInt8Lanes caps a CPU's int8 rate for ONNX Runtime's integer kernels at this many times
// its fp32 rate: MLAS's u8s8/s8s8 GEMM and symmetric convolution kernels
// (SymQgemmU8KernelAvx512, the VNNI kernels of qgemm) do 4 int8 multiply-accumulates per
// 32-bit lane (vpdpbusd) where an FMA does one fp32 one; the AMX tile rate a host may
// advertise (2048 int8 OP/cycle per core) serves only large QGEMMs. On the reference machine
// (Xeon with AMX, one thread) the QLinearConvs of TestQDQCNNInt8's QDQ CNN ran at 293 GOP/s
// against 146 GFLOP/s for the float32 twin's Convs (ONNX Runtime 1.30, per-node times of
// internal/measure.MeasureORT), well under the AMX figure.
const cpuInt8Lanes = 4

// peakOf is the arithmetic rate of class c at precision p on d: the precision's peak for
// matrix classes (on a CPU, int8 kernels at most cpuInt8Lanes × fp32), fp32 otherwise.
func peakOf(d *Device, c OpClass, p Precision) float64 {
	if !tensorClass(c) {
		return d.Peak[FP32].Value
	}
	pk := d.PeakFor(p).Value
	if d.Kind == CPU && p == INT8 && int8Kernel(c) && d.Peak[FP32].Value > 0 {
		pk = math.Min(pk, cpuInt8Lanes*d.Peak[FP32].Value)
	}
	return pk
}

// Blocked reports whether the runtime of device d runs convolution n in its blocked channel
// layout (ONNX Runtime's NCHWc transformer, whose rule this follows): a 2-D Conv whose input
// channels are fewer than the block (VectorWidth) or a multiple of d.ChannelAlign (the rest is
// padded up to the block), and a depthwise one whose channels are a multiple of
// d.ChannelAlign; other grouped convolutions need input channels, output channels and output
// channels per group all multiples of the block. ConvTranspose and convolutions of other
// dimensions run plain. True for every convolution when d.ChannelAlign is 0 (no rule known)
// and for nodes that are not convolutions.
func (d *Device) Blocked(g *graph.Graph, n *graph.Node) bool {
	a, b := int64(d.ChannelAlign), int64(d.VectorWidth)
	if a <= 0 || b <= 1 {
		return true
	}
	switch ClassOf(g, n) {
	case ClassConv, ClassDepthwise:
	default:
		return true
	}
	if n.OpType != optype.Conv && n.OpType != optype.FusedConv || len(n.Inputs) < 2 || n.Inputs[1] < 0 {
		return false
	}
	w := g.Tensors[n.Inputs[1]].Shape
	if len(w) != 4 || !w[0].Known() || !w[1].Known() {
		return false
	}
	grp := n.AttrInt("group", 1)
	cout, cinPer := w[0].Value, w[1].Value
	switch {
	case grp <= 1:
		return cinPer < b || cinPer%a == 0
	case cinPer == 1 && cout == grp:
		return cout%a == 0
	default:
		return cout%b == 0 && (cinPer*grp)%b == 0 && (cout/grp)%b == 0
	}
}

func isEpilogue(g *graph.Graph, n *graph.Node, depth int) bool {
	for _, t := range n.Inputs {
		if t < 0 {
			continue
		}
		tn := &g.Tensors[t]
		if tn.Producer < 0 || len(tn.Consumers) != 1 || tn.IsOutput {
			continue
		}
		if !sameSize(tn, n, g) {
			continue
		}
		switch classOf(g, &g.Nodes[tn.Producer], depth+1) {
		case ClassConv, ClassDepthwise, ClassMatMul, ClassEpilogue:
			return true
		}
	}
	return false
}

// sameSize reports whether tensor t has as many elements as n's first output (unknown sizes
// count as equal): a kernel can only post-process its own output in place, so an op that
// broadcasts a GEMM's small result over a larger tensor (a squeeze-and-excitation scale) is
// not its epilogue.
func sameSize(t *graph.Tensor, n *graph.Node, g *graph.Graph) bool {
	if len(n.Outputs) == 0 || n.Outputs[0] < 0 {
		return true
	}
	o := &g.Tensors[n.Outputs[0]]
	if !t.Shape.Known() || !o.Shape.Known() {
		return true
	}
	a, err1 := t.Shape.NumElements()
	b, err2 := o.Shape.NumElements()
	return err1 != nil || err2 != nil || a == b
}

// tensorClasses are the classes whose math runs on matrix units (tensor cores, AMX): their
// peak is the precision's; other classes run at the fp32 (vector) rate.
func tensorClass(c OpClass) bool {
	switch c {
	case ClassMatMul, ClassConv, ClassAttention, ClassNBits, ClassNBitsInt8, ClassConvInt8, ClassMatMulInt8:
		return true
	}
	return false
}

// PrecisionOf is the arithmetic a node runs in: int8 for quantised ops and 8-bit operands,
// fp16 for float16/bfloat16 data, fp32 otherwise (TF32 is never assumed: runtimes leave it
// off by default).
func PrecisionOf(g *graph.Graph, n *graph.Node) Precision {
	if e := ops.Of(n); e != nil && e.Int8 {
		return INT8
	}
	dt := graph.Undefined
	for _, t := range n.Inputs {
		if t >= 0 && g.Tensors[t].DType.IsFloat() || t >= 0 && (g.Tensors[t].DType == graph.Int8 || g.Tensors[t].DType == graph.Uint8) {
			dt = g.Tensors[t].DType
			break
		}
	}
	if dt == graph.Undefined {
		for _, t := range n.Outputs {
			if t >= 0 {
				dt = g.Tensors[t].DType
				break
			}
		}
	}
	switch dt {
	case graph.Float16, graph.BFloat16:
		return FP16
	case graph.Int8, graph.Uint8, graph.Float8E4M3FN, graph.Float8E4M3FNUZ, graph.Float8E5M2, graph.Float8E5M2FNUZ:
		return INT8
	}
	return FP32
}

// GroupKernel recognises a QDQ-wrapped convolution or matrix product inside a fused group:
// lead (a Conv or MatMul/Gemm of the ONNX domain) reads both its data input and its weight
// through DequantizeLinear members of the group that dequantise 8-bit integers. A backend
// whose fusion rules put DequantizeLinear(x), DequantizeLinear(w), the operator and the
// QuantizeLinear after it into one group runs them as one int8 kernel (ONNX Runtime's CPU
// QDQ transformer makes QLinearConv, QLinearMatMul or MatMulIntegerToFloat of them;
// TensorRT's explicit quantization builds int8 convolutions and GEMMs); a backend that leaves
// the DequantizeLinear outside (ONNX Runtime's CUDA provider) runs the operator in float.
// It returns the int8 class, and the bytes of the integer weights (with scales and zero
// points) the kernel streams: the dequantised weight is folded away as a constant of the
// group, so the lead itself reads no weight.
func GroupKernel(d *Device, g *graph.Graph, members []int, lead int) (c OpClass, weights float64, ok bool) {
	n := &g.Nodes[lead]
	if n.Domain != "" && n.Domain != "ai.onnx" || len(n.Inputs) < 2 {
		return "", 0, false
	}
	switch n.OpType {
	case optype.Conv:
		c = ClassConvInt8
	case optype.MatMul, optype.Gemm:
		c = ClassMatMulInt8
	default:
		return "", 0, false
	}
	in := make(map[int]bool, len(members))
	for _, v := range members {
		in[v] = true
	}
	dq := func(t int) (int, bool) {
		if t < 0 {
			return -1, false
		}
		p := g.Tensors[t].Producer
		if p < 0 || !in[p] || g.Nodes[p].OpType != optype.DequantizeLinear || len(g.Nodes[p].Inputs) == 0 {
			return -1, false
		}
		x := g.Nodes[p].Inputs[0]
		if x < 0 {
			return -1, false
		}
		dt := g.Tensors[x].DType
		return p, dt == graph.Int8 || dt == graph.Uint8
	}
	if _, ok := dq(n.Inputs[0]); !ok {
		return "", 0, false
	}
	w, ok := dq(n.Inputs[1])
	if !ok {
		return "", 0, false
	}
	return c, nodeWeights(d, g, &g.Nodes[w]), true
}
