package profile

import (
	"fmt"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// ONNX Runtime's CPU kernels for the contrib ops of the GenAI model builder's decoders
// (issue 39), where the roofline of the op's class misprices them: MatMulNBits and
// GroupQueryAttention. Each is priced from what the kernel does (onnxruntime's
// contrib_ops/cpu and MLAS), with efficiencies fitted on bench/decoder -set genai
// (docs/llm-decoders.md). A device whose own figures name the op type (a spec file, or
// calibration by --costs measured) keeps the roofline with them.

// CPU efficiencies of MatMulNBits (4-bit block-quantized weights), of the fp32 peak:
//
//   - one row (a decoder's token step): MLAS's SQNBitGemm unpacks every weight and multiplies
//     it in the kernel, so the time is set by the weights' count more than their bytes, and
//     the weights' streaming adds to it (measured: it is not hidden behind the unpacking): with
//     accuracy_level 4 (CompInt8) the row is quantized to int8 and the products are int8 dot
//     products; with accuracy_level 0–3 on x86 (CompFp32) each weight is dequantized to
//     float32 and multiplied there;
//   - several rows (a prefill): CompInt8 runs its int8 GEMM kernel, well below an fp32 GEMM
//     of MLAS's; CompFp32 dequantizes B to float32 once per call (written and read back, at
//     the device's bandwidth) and runs the fp32 GEMM (the MatMul class's efficiency).
const (
	nbitsRowInt8  = 0.30
	nbitsRowFP32  = 0.125
	nbitsGEMMInt8 = 0.45
)

// CPU efficiency of GroupQueryAttention's products, of the fp32 peak: ONNX Runtime's CPU
// kernel runs one small GEMM per query head (Q·Kᵀ with the head size as inner dimension,
// then P·V), far from MLAS's large-GEMM rate.
const gqaGEMM = 0.12

// softmaxPerScore is the fp32 operations ONNX Runtime's softmax spends per attention score
// it normalises (maximum, exponential, sum, scale: MlasComputeSoftmax), at the elementwise
// class's efficiency.
const softmaxPerScore = 24

// cpuKernelNote says where a cpuKernel figure comes from.
const cpuKernelNote = "ONNX Runtime's CPU kernel (profile/cpukernels.go), fitted on bench/decoder -set genai"

// cpuKernelTime prices node n on CPU device d as ONNX Runtime's CPU kernel runs it, for the op
// types that have a kernel model here: compute and memory terms (seconds, efficiencies
// applied) and their combination, the node's time without overhead. ok is false for other
// nodes, devices that are not CPUs, and devices with figures of their own for the op type.
func cpuKernelTime(d *Device, g *graph.Graph, n *graph.Node, wrate float64) (compute, memory, t float64, ok bool) {
	if d.Kind != CPU || d.Peak[FP32].Value <= 0 {
		return 0, 0, 0, false
	}
	if _, own := d.Efficiency[n.OpType]; own {
		return 0, 0, 0, false
	}
	switch n.OpType {
	case optype.MatMulNBits:
		return matMulNBitsCPU(d, g, n, wrate)
	case optype.GroupQueryAttention:
		return gqaCPU(d, g, n)
	}
	return 0, 0, 0, false
}

// matMulNBitsCPU prices MatMulNBits: M rows of K against the N×K quantized weights.
func matMulNBitsCPU(d *Device, g *graph.Graph, n *graph.Node, wrate float64) (compute, memory, t float64, ok bool) {
	k, nn := n.AttrInt("K", 0), n.AttrInt("N", 0)
	o, okDims := ops.Dims(g, ops.Out(n, 0))
	if k <= 0 || nn <= 0 || !okDims || len(o) == 0 {
		return 0, 0, 0, false
	}
	rows := int64(1)
	for _, x := range o[:len(o)-1] {
		rows *= x
	}
	peak := d.Peak[FP32].Value
	int8 := n.AttrInt("accuracy_level", 0) == 4
	flops := 2 * float64(rows) * float64(k) * float64(nn)
	weights := nodeWeights(d, g, n)
	if wrate <= 0 {
		wrate = d.Bandwidth.Value
	}
	acts := float64(max(n.InputBytes, 0) + max(n.OutputBytes, 0))
	if bw := d.Bandwidth.Value; bw > 0 {
		memory = acts / bw
	}
	if wrate > 0 {
		memory += weights / wrate
	}
	switch {
	case rows == 1:
		// The row kernel does not hide its loads behind the unpacking: both add up.
		compute = flops / (peak * nbitsRowFP32)
		if int8 {
			compute = flops / (peak * nbitsRowInt8)
		}
		return compute, memory, compute + memory, true
	case int8:
		compute = flops / (peak * nbitsGEMMInt8)
	default:
		eff, _ := EfficiencyOf(d, optype.MatMul, ClassMatMul)
		compute = flops * lanePadding(g, n, ClassMatMul, d.VectorWidth) / (peak * positive(eff.Value))
		// B dequantized to float32 once per call: written, then read by the GEMM's packing.
		if bw := d.Bandwidth.Value; bw > 0 {
			memory += 2 * 4 * float64(k) * float64(nn) / bw
			return compute, memory, compute + 2*4*float64(k)*float64(nn)/bw, true
		}
	}
	return compute, memory, max(compute, memory), true
}

// gqaCPU prices GroupQueryAttention as contrib_ops/cpu's kernel runs it, per query head:
// the head's present K and V assembled from the past and the new rows (copied once per query
// head, and the present buffers zeroed first, unless past and present share a buffer), one
// GEMM Q·Kᵀ over every present position into a float32 score matrix, the softmax of the
// causal part of each row, and one GEMM of the scores with V. Rotary (do_rotary) rotates Q
// and K first. The copies, the scores and the products' reads move through the cache
// levels the present cache lives in (WeightRate at its size); the products run at gqaGEMM.
func gqaCPU(d *Device, g *graph.Graph, n *graph.Node) (compute, memory, t float64, ok bool) {
	o, okO := ops.Dims(g, ops.Out(n, 0))
	nh := n.AttrInt("num_heads", 0)
	if !okO || len(o) != 3 || nh <= 0 || o[2]%nh != 0 {
		return 0, 0, 0, false
	}
	b, s, h := float64(o[0]), float64(o[1]), float64(o[2]/nh)
	kv := float64(n.AttrInt("kv_num_heads", nh))
	tt, past := s, 0.0
	if p, ok := ops.Dims(g, ops.Out(n, 1)); ok && len(p) == 4 {
		tt, kv = float64(p[2]), float64(p[1])
	}
	if p, ok := ops.Dims(g, ops.In(n, 3)); ok && len(p) == 4 {
		past = float64(p[2])
	}
	heads := float64(nh)
	es := 4.0 // float32
	if t := ops.Out(n, 0); t >= 0 && g.Tensors[t].DType.Bits() > 0 {
		es = float64(g.Tensors[t].DType.Bits()) / 8
	}
	peak := d.Peak[FP32].Value
	// Products: Q·Kᵀ and P·V over all T present positions, per head.
	gemm := 4 * b * heads * s * tt * h
	compute = gemm / (peak * gqaGEMM)
	// Softmax of the causal scores: row i of the new rows sees past + i + 1 positions.
	causal := b * heads * (s*past + s*(s+1)/2)
	elemEff, _ := EfficiencyOf(d, optype.Softmax, ClassElementwise)
	compute += causal * softmaxPerScore / (peak * positive(elemEff.Value))
	if n.AttrInt("do_rotary", 0) != 0 {
		compute += 3 * b * s * (heads + kv) * h / (peak * positive(elemEff.Value))
	}
	// Traffic: zeroing the presents, the per-head copies of past and new rows into them
	// (read and written), the products' reads of K and V and their packing, the score matrix
	// (written, normalised in place, read), Q, the output and the new K and V.
	bytes := 2*b*kv*tt*h*es + // memset of present K and V
		2*2*b*heads*tt*h*es + // per query head: K and V chunks copied (read + write)
		2*2*b*heads*tt*h*es + // the products read K and V (and pack Kᵀ)
		4*b*heads*s*tt*4 + // scores: written, softmax read + write, read by P·V
		2*b*s*(heads+kv)*h*es + b*s*heads*h*es // Q, new K, V in; output
	present := 2 * b * kv * tt * h * es
	rate := WeightRate(d, present).Value
	if rate <= 0 {
		rate = d.Bandwidth.Value
	}
	if rate > 0 {
		memory = bytes / rate
	}
	// One small GEMM call per head and product.
	calls := 2 * b * heads * d.Launch.Value
	return compute, memory + calls, compute + memory + calls, true
}

// cpuKernelEff is the efficiency figure a breakdown shows for a cpuKernel-priced node.
func cpuKernelEff(n *graph.Node) Figure {
	return fig(0, SourceDefault, fmt.Sprintf("%s: %s", n.OpType, cpuKernelNote))
}
