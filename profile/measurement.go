package profile

// Measurement is the outcome of profiling a model in ONNX Runtime on the host CPU.
type Measurement struct {
	Model   string
	Threads int
	Runs    int
	// Node is each original node's share of kernel time, seconds: the median over runs.
	// Nodes ONNX Runtime removed (constant folding, fusions into nothing) have 0. NodeSum
	// adds them up.
	Node    []float64
	NodeSum float64
	// Call is the median CPU time of one unprofiled Run call on the calling thread (see
	// TimeCall), Wall the profiled calls' median wall time; Kernels the median sum of kernel
	// times (each with the executor's gap before it, less the profiler's overhead) per run;
	// Unmapped the median kernel time per run that could not be related to original nodes (it
	// is spread over Node in proportion to work).
	Call, Wall, Kernels, Unmapped float64
	// Overhead is the fixed CPU time of a call (IO.Fixed); the binding of the model's inputs
	// and outputs costs IO.PerByte per byte on top.
	Overhead float64
	IO       IOCost
	// KernelOverhead is the executor's time per kernel between kernels, included in Node.
	KernelOverhead float64
	// ProfilerOverhead is the time per kernel taken off the profiled kernel durations so
	// that they fit the unprofiled call's CPU time (see summarize), median over runs.
	ProfilerOverhead float64
	// Clean is the number of runs no other process disturbed (see TimeCall); the per-node
	// medians use only those when there are at least 5.
	Clean int
	// Optimized is the number of nodes in the graph ONNX Runtime ran.
	Optimized int
}

// RunOverhead is the fixed part of a call not spent in kernels (session bookkeeping),
// seconds.
func (m *Measurement) RunOverhead() float64 { return m.Overhead }

// NodeTimes returns per-node times for CostOptions.Measured.
func (m *Measurement) NodeTimes() []float64 { return append([]float64(nil), m.Node...) }

// IOCost is what one ONNX Runtime call costs on top of its kernels: Fixed seconds plus
// PerByte seconds for every byte of input it is given and output it returns (the binding's
// copies on both sides of the call), plus LayoutPerByte for every byte of a 4-D input or
// output that a convolution or pooling kernel reads or writes in the blocked NCHWc layout.
// ChannelBlock and ChannelAlign describe that layout as the runtime applies it (see
// probeNCHWc; 0 when it uses none).
type IOCost struct {
	Fixed, PerByte, LayoutPerByte float64
	ChannelBlock, ChannelAlign    int
}
