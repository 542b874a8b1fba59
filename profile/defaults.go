package profile

import "github.com/onnxpart/onnxpart/internal/ops/optype"

// Defaults: assumptions used where no data sheet, NVML query, spec file or measurement
// gives a figure. They are reported with source "default" and a note, and they are what
// calibration (measured costs) replaces for the host CPU.

// defaultEfficiency is the fraction of the roofline a node of each op class reaches on a
// device kind before calibration: GEMM-like classes reach a good share of the tensor peak on
// GPUs, depthwise convolution and normalisation are far from either roof, and so on.
var defaultEfficiency = map[Kind]map[OpClass]float64{
	GPU: {
		ClassMatMul: 0.6, ClassConv: 0.5, ClassDepthwise: 0.25, ClassDepthwisePlain: 0.25, ClassPool: 0.5, ClassNorm: 0.4,
		ClassElementwise: 0.7, ClassEpilogue: 0.7, ClassData: 0.5, ClassView: 1, ClassControl: 0.1, ClassOther: 0.3,
		ClassStatic:    1,
		ClassAttention: 0.4, ClassNBits: 0.5, ClassNBitsInt8: 0.5, ClassConvInt8: 0.5, ClassMatMulInt8: 0.6,
	},
	CPU: {
		ClassMatMul: 0.8, ClassConv: 0.6, ClassDepthwise: 0.3, ClassDepthwisePlain: 0.05, ClassPool: 0.5, ClassNorm: 0.4,
		ClassElementwise: 0.6, ClassEpilogue: 0.6, ClassData: 0.5, ClassView: 1, ClassControl: 0.1, ClassOther: 0.3,
		ClassStatic:    1,
		ClassAttention: 0.5, ClassNBits: 0.6, ClassNBitsInt8: 0.4, ClassConvInt8: 0.3, ClassMatMulInt8: 0.4,
	},
	Accelerator: {
		ClassMatMul: 0.5, ClassConv: 0.4, ClassDepthwise: 0.2, ClassDepthwisePlain: 0.2, ClassPool: 0.4, ClassNorm: 0.3,
		ClassElementwise: 0.5, ClassEpilogue: 0.5, ClassData: 0.4, ClassView: 1, ClassControl: 0.05, ClassOther: 0.2,
		ClassStatic:    1,
		ClassAttention: 0.3, ClassNBits: 0.4, ClassNBitsInt8: 0.4, ClassConvInt8: 0.4, ClassMatMulInt8: 0.5,
	},
}

// The kernel classes of contrib and quantised ops (ClassAttention … ClassMatMulInt8) are
// nominal too, chosen from what their kernels do rather than fitted: a GPU's flash attention
// reaches well under half the fp16 tensor peak at the head sizes of small decoders and is
// bound by its KV read at decode (memory term below); int4 GEMV kernels that dequantise in
// registers stream the packed weights at a good share of the bandwidth; on a CPU, int8
// convolutions keep the ratio to float32 ones that ONNX Runtime showed on the reference
// machine (one thread: the QDQ CNN's QLinearConvs at 293 GOP/s, 0.43 of the VNNI rate of
// peakOf, where the float32 twin's Convs ran at 0.85 of the fp32 peak; scaled to the conv
// class's nominal 0.6 that is 0.3), and MLAS's CompFp32 n-bit GEMM dequantises every block
// before the float product, costing it a quarter of the float GEMM's 0.8. Calibration (--costs measured)
// replaces them where the model has such nodes.

// defaultMemEfficiency holds the memory-term efficiencies of the kind where they differ from
// the compute term's: convolutions on GPUs reach about 0.3 of the DRAM bandwidth counted as
// inputs + weights + outputs (cuDNN's implicit-GEMM kernels re-read their inputs), fitted on
// the convolution nodes of the corpus measured on an H100 (bench/gpucheck): with 0.5
// the slowest ones came out 1.75× too fast (fp32), with 0.3 within 1.2×. A matrix product on
// a GPU whose memory term binds is a matrix-vector product streaming its weights once, as a
// copy streams its buffer: 0.89, the device copy of bench/gpucheck (2.99 TB/s of the H100's
// 3.35), for want of a GEMV measurement on a GPU.
var defaultMemEfficiency = map[Kind]map[OpClass]float64{
	GPU: {ClassConv: 0.3, ClassDepthwise: 0.3, ClassDepthwisePlain: 0.3, ClassMatMul: 0.89,
		ClassAttention: 0.7, ClassNBits: 0.7, ClassConvInt8: 0.3, ClassMatMulInt8: 0.89},
	CPU: {ClassNBits: 0.8, ClassNBitsInt8: 0.8, ClassAttention: 0.6},
}

const memEffNote = "memory term, measured on an H100 (bench/gpucheck)"

// memEffNoteOf says where the memory-term default of class c comes from: the H100
// measurement for the generic classes, the nominal kernel figures for the kernel classes.
func memEffNoteOf(c OpClass) string {
	switch c {
	case ClassAttention, ClassNBits, ClassNBitsInt8, ClassConvInt8, ClassMatMulInt8:
		return "memory term, nominal for the kernel class (see defaults.go); calibrate it with measured costs or a cost file"
	}
	return memEffNote
}

// The CPU efficiency of matrix products, 0.8 for both terms, is ONNX Runtime 1.30's MLAS
// kernels on the reference machine (AMD EPYC, Zen 5, one thread; profile.MeasureKernels, run
// by `go run ./bench/decoder -micro`, over several runs on the shared machine):
// 256×512·512×1408 products at 0.86–0.95 of the fp32 peak (measured clock × FLOP/cycle),
// 64-row ones at 0.60–0.92, and one-row products (a decoder's token step) streaming their
// weights at 0.77–0.96 of the rate a vectorised scan reads as many bytes. See
// docs/benchmarks-decoder.md.

const effNote = "nominal for the device kind; measure it (ONNX Runtime, host CPU) or set it in a spec file"

// defaultOpEfficiency holds op types whose efficiency is known better than their class's:
// the data movement ops that copy contiguous blocks (a Concat of a KV cache and the new
// positions, the Expand that repeats grouped-query KV heads, Tile, Split) do what the copy
// microbenchmark behind a device's bandwidth does, so they run at it: 1 on a CPU (the host's
// bandwidth is that copy's rate; ONNX Runtime's CPU kernels memcpy each block), 0.89 on a GPU
// (the device copy of bench/gpucheck reached 0.89 of an H100's HBM figure). A device's own
// entry for the class or the op type (calibration, a spec file) wins.
var defaultOpEfficiency = map[Kind]map[string]float64{
	CPU: {optype.Concat: 1, optype.Expand: 1, optype.Tile: 1, optype.Split: 1},
	GPU: {optype.Concat: 0.89, optype.Expand: 0.89, optype.Tile: 0.89, optype.Split: 0.89},
}

const opEffNote = "a block copy: the copy microbenchmark's rate (see defaultOpEfficiency)"

// Per-kernel and per-call overheads by device kind, seconds. A CPU's is ONNX Runtime's cost
// of one more kernel amid a decoder's weight streaming, in the steady state of a loop calling
// one session: 0.2–0.65 µs for a view, a piece of shape arithmetic or a tiny Mul or Add, over
// runs on the reference machine (AMD EPYC, Zen 5, ONNX Runtime 1.30, one thread;
// profile.MeasureKernels, `go run ./bench/decoder -micro`).
var (
	defaultLaunch = map[Kind]float64{GPU: 5e-6, CPU: 0.4e-6, Accelerator: 10e-6}
	defaultRun    = map[Kind]float64{GPU: 20e-6, CPU: 10e-6, Accelerator: 50e-6}
)

// defaultOverhead holds per-class fixed times on GPUs, used in place of Launch on devices
// that have no launch figure of their own (catalog and NVML devices; a spec file's launch,
// or a calibration, wins). They are the median device time of the smallest nodes of each
// class (compute and bytes under 0.3 µs of roofline) measured on an H100 SXM: each node of the
// corpus models replayed in a CUDA graph with PyTorch 2.11's kernels
// (bench/gpucheck, 2026-11-22). A tiny elementwise kernel costs 1.6 µs of device
// time there, a library convolution or GEMM about 6 µs; a runtime that launches one op at a
// time from the host (ONNX Runtime's CUDA provider without CUDA graphs) may pay more.
var defaultOverhead = map[Kind]map[OpClass]float64{
	GPU: {
		ClassConv: 6e-6, ClassMatMul: 6e-6, ClassDepthwise: 2.5e-6, ClassDepthwisePlain: 2.5e-6,
		ClassPool: 2.7e-6, ClassNorm: 2.3e-6, ClassElementwise: 1.6e-6, ClassEpilogue: 1.6e-6,
		ClassData: 2e-6, ClassView: 0.5e-6,
		// Library kernels as a GEMM's (not measured: the H100 replay had no such nodes).
		ClassAttention: 6e-6, ClassNBits: 6e-6, ClassNBitsInt8: 6e-6, ClassConvInt8: 6e-6, ClassMatMulInt8: 6e-6,
	},
}

// overheadNotes say where each kind's defaultOverhead figures come from.
var overheadNotes = map[Kind]string{
	GPU: "device time of a tiny node of the class on an H100 (CUDA graph replay; bench/gpucheck)",
}

const (
	launchNote = "typical kernel-launch / operator-dispatch cost of the device kind"
	runNote    = "typical fixed cost of one inference call of the device kind"
)

// Link latencies by link kind, seconds per transfer (not spec-sheet figures).
var DefaultLatency = map[LinkKind]float64{
	LinkNVLink:  5e-6,
	LinkPCIe:    10e-6,
	LinkStaged:  20e-6,
	LinkNetwork: 5e-6,
	LinkMemory:  1e-6,
	LinkCustom:  10e-6,
}

// Ethernet has a much higher per-message latency than InfiniBand (kernel TCP stack).
const EthLatency = 50e-6

const LatencyNote = "typical per-transfer latency of the link kind"

func defaultEff(k Kind, c OpClass) float64 {
	m := defaultEfficiency[k]
	if m == nil {
		m = defaultEfficiency[GPU]
	}
	if v, ok := m[c]; ok {
		return v
	}
	return m[ClassOther]
}

// ApplyKindDefaults fills the overheads a device lacks from its kind.
func ApplyKindDefaults(d *Device) {
	if !d.Launch.Known() {
		note := launchNote
		if d.Kind == CPU {
			note = "ONNX Runtime's cost of one more tiny kernel amid weight streaming, steady state, reference machine (profile.MeasureKernels)"
		}
		d.Launch = fig(defaultLaunch[d.Kind], SourceDefault, note)
		for c, v := range defaultOverhead[d.Kind] {
			if _, ok := d.Overhead[string(c)]; ok {
				continue
			}
			if d.Overhead == nil {
				d.Overhead = map[string]Figure{}
			}
			d.Overhead[string(c)] = fig(v, SourceDefault, overheadNotes[d.Kind])
		}
	}
	if !d.RunOverhead.Known() {
		d.RunOverhead = fig(defaultRun[d.Kind], SourceDefault, runNote)
	}
	if !d.NVLink.Known() {
		d.NVLink = fig(0, SourceDefault, "no NVLink")
	}
	if !d.Memory.Known() {
		d.Memory = fig(0, SourceDefault, "unknown: no memory limit")
	}
	for p := Precision(1); p < NumPrecisions; p++ {
		if !d.Peak[p].Known() && d.Peak[FP32].Known() {
			d.Peak[p] = fig(d.Peak[FP32].Value, SourceDefault, "no figure: the fp32 rate is assumed")
		}
	}
	if !d.IOBandwidth.Known() {
		if d.Kind == CPU && d.Bandwidth.Value > 0 {
			d.IOBandwidth = fig(d.Bandwidth.Value/4, SourceDefault, "memory bandwidth / 4: every byte in and out copied twice by the runtime binding")
		} else {
			d.IOBandwidth = fig(0, SourceDefault, "free: inputs arrive over the links")
		}
	}
	if !d.LayoutBandwidth.Known() {
		d.LayoutBandwidth = fig(0, SourceDefault, "no layout conversion assumed")
	}
	if d.HostLink.Kind == "" {
		if d.Kind == CPU {
			d.HostLink = Link{Kind: LinkMemory, Name: "host memory", Bandwidth: d.Bandwidth,
				Latency: fig(DefaultLatency[LinkMemory], SourceDefault, LatencyNote)}
		}
	}
}
