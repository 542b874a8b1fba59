package measure

import (
	"reflect"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/profile"
)

// A trace in ONNX Runtime's format: session events, two runs, kernels with the arguments ORT
// writes (abridged), a fence event to ignore.
const trace = `[
{"cat":"Session","pid":1,"tid":1,"dur":900,"ts":4,"ph":"X","name":"model_loading_uri","args":{}},
{"cat":"Session","pid":1,"tid":1,"dur":100,"ts":1000,"ph":"X","name":"model_run","args":{}},
{"cat":"Node","pid":1,"tid":1,"dur":40,"ts":1010,"ph":"X","name":"conv_relu_out_nchwc_kernel_time","args":{"op_name":"Conv","provider":"CPUExecutionProvider"}},
{"cat":"Node","pid":1,"tid":1,"dur":5,"ts":1055,"ph":"X","name":"ReorderOutput_kernel_time","args":{"op_name":"ReorderOutput"}},
{"cat":"Node","pid":1,"tid":1,"dur":30,"ts":1062,"ph":"X","name":"pool_kernel_time","args":{"op_name":"MaxPool"}},
{"cat":"Node","pid":1,"tid":1,"dur":1,"ts":1062,"ph":"X","name":"pool_fence_before","args":{}},
{"cat":"Session","pid":1,"tid":1,"dur":80,"ts":2000,"ph":"X","name":"model_run","args":{}},
{"cat":"Node","pid":1,"tid":1,"dur":38,"ts":2002,"ph":"X","name":"conv_relu_out_nchwc_kernel_time","args":{"op_name":"Conv"}},
{"cat":"Node","pid":1,"tid":1,"dur":6,"ts":2041,"ph":"X","name":"ReorderOutput_kernel_time","args":{"op_name":"ReorderOutput"}},
{"cat":"Node","pid":1,"tid":1,"dur":25,"ts":2050,"ph":"X","name":"pool_kernel_time","args":{"op_name":"MaxPool"}},
{"cat":"Node","pid":1,"tid":1,"dur":3,"ts":5000,"ph":"X","name":"stray_kernel_time","args":{"op_name":"Add"}}
]`

func TestParseORTProfile(t *testing.T) {
	p, err := ParseORTProfile(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || len(p.Runs[0].Kernels) != 3 || len(p.Runs[1].Kernels) != 3 {
		t.Fatalf("runs %+v", p.Runs)
	}
	r := p.Runs[0]
	k := r.Kernels[1]
	if !near(r.Dur, 100e-6, 1e-9) || k.Node != "ReorderOutput" || k.Op != "ReorderOutput" || !near(k.Dur, 5e-6, 1e-9) {
		t.Errorf("run 0 %+v", r)
	}
	// Gaps: 10 µs from the run's start to the conv, 5 after it, 2 before the pool.
	for i, want := range []float64{10e-6, 5e-6, 2e-6} {
		if !near(r.Kernels[i].Gap, want, 1e-9) {
			t.Errorf("kernel %d gap %g, want %g", i, r.Kernels[i].Gap, want)
		}
	}
	for _, bad := range []string{`{"x":1}`, `[{"cat":"Node","name":"a_kernel_time","ts":1,"dur":1}]`, `[`} {
		if _, err := ParseORTProfile(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The original graph: x → conv → relu → pool → bn → add(+x2) → y, plus a constant-folded
// shape chain; ORT runs NCHWc Conv+Relu (named after the relu's output), a reorder, the pool,
// BatchNorm fused into... nothing (removed), and a cast-renamed Add.
func mapGraph(t *testing.T) *graph.Graph {
	t.Helper()
	b := graph.NewBuilder("m")
	b.AddInput("x")
	b.AddInput("x2")
	b.AddInitializer("w")
	b.AddNode("conv", "Conv", "", []string{"x", "w"}, []string{"conv_out"}, nil, nil)
	b.AddNode("relu", "Relu", "", []string{"conv_out"}, []string{"relu_out"}, nil, nil)
	b.AddNode("pool", "MaxPool", "", []string{"relu_out"}, []string{"pool_out"}, nil, nil)
	b.AddNode("add", "Add", "", []string{"pool_out", "x2"}, []string{"y"}, nil, nil)
	b.AddNode("ident", "Identity", "", []string{"x2"}, []string{"z"}, nil, nil)
	b.AddOutput("y")
	b.AddOutput("z")
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for v := range g.Nodes {
		g.Nodes[v].FLOPs = int64(1e9 * (v + 1))
	}
	return g
}

func TestMapKernels(t *testing.T) {
	g := mapGraph(t)
	opt := []OptNode{
		{Name: "relu_out_nchwc", Op: "Conv", Inputs: []string{"reorder_x", "w_packed"}, Outputs: []string{"tok1"}},
		{Name: "ReorderInput", Op: "ReorderInput", Inputs: []string{"x"}, Outputs: []string{"reorder_x"}},
		{Name: "ReorderOutput", Op: "ReorderOutput", Inputs: []string{"tok1"}, Outputs: []string{"relu_out"}},
		{Name: "pool", Op: "MaxPool", Inputs: []string{"relu_out"}, Outputs: []string{"pool_out"}},
		{Name: "InsertedPrecisionFreeCast_add", Op: "Add", Inputs: []string{"pool_out", "x2"}, Outputs: []string{"InsertedPrecisionFreeCast_y"}},
		{Name: "orphan", Op: "Cast", Inputs: []string{"x2"}, Outputs: []string{"c"}},
	}
	km := MapKernels(g, opt)
	for name, want := range map[string][]int{
		"relu_out_nchwc":                {0, 1}, // named after relu's output; swallowed the conv
		"ReorderOutput":                 {0, 1}, // produces relu_out: charged to its producer's kernel
		"ReorderInput":                  {0, 1}, // converts a graph input: charged to its reader's nodes
		"pool":                          {2},    // by name; relu_out exists, so no closure into the conv
		"InsertedPrecisionFreeCast_add": {3},    // ORT's cast prefix stripped
		"orphan":                        nil,
	} {
		if got := km.Nodes[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s → %v, want %v", name, got, want)
		}
	}
	// Identity was removed by ORT: no kernel stands for it.
	for _, ids := range km.Nodes {
		for _, v := range ids {
			if v == 4 {
				t.Error("Identity mapped to a kernel")
			}
		}
	}
	// Attribution: the fused kernel's 40 µs (+10 µs gap) shared by FLOPs (conv 1, relu 2
	// GFLOP); the orphan Cast comes back as unmapped time.
	run := ORTRun{Kernels: []ORTKernel{
		{Node: "relu_out_nchwc", Dur: 40e-6, Gap: 10e-6},
		{Node: "orphan", Dur: 4e-6},
		{Node: "pool", Dur: 30e-6},
	}}
	out := make([]float64, len(g.Nodes))
	un := attribute(g, km, run, out)
	if !near(un, 4e-6, 1e-9) || !near(out[0], 50e-6/3, 1e-6) || !near(out[1], 100e-6/3, 1e-6) || !near(out[2], 30e-6, 1e-9) || out[4] != 0 {
		t.Errorf("attribution %v, unmapped %g", out, un)
	}
}

func TestSummarize(t *testing.T) {
	g := mapGraph(t)
	km := &KernelMap{Nodes: map[string][]int{"pool": {2}, "add": {3}}}
	var runs []ORTRun
	var cpus, walls, unprof []float64
	for i := range 9 {
		d, wall := 10e-6, 60e-6
		if i%3 == 0 { // disturbed: the kernel took long in wall time, not in CPU time
			d, wall = 80e-6, 150e-6
		}
		// The profiler's gaps are ignored.
		runs = append(runs, ORTRun{Dur: wall, Kernels: []ORTKernel{{Node: "pool", Dur: d, Gap: 9e-6}, {Node: "add", Dur: 10e-6, Gap: 9e-6}}})
		cpus = append(cpus, 60e-6)
		walls = append(walls, wall)
		unprof = append(unprof, 40e-6)
	}
	// 40 µs per call: 5 fixed, 1000 bytes at 5 ns, 20 in kernels: 5 µs per kernel remain.
	io := profile.IOCost{Fixed: 5e-6, PerByte: 5e-9}
	m := summarize(g, km, runs, cpus, walls, unprof, io, 1000, "m.onnx", 1, 2)
	if m.Clean != 6 || !near(m.KernelOverhead, 5e-6, 1e-9) || !near(m.Node[2], 15e-6, 1e-9) || !near(m.Node[3], 15e-6, 1e-9) ||
		!near(m.Call, 40e-6, 1e-9) || m.RunOverhead() != 5e-6 {
		t.Errorf("summary %+v", m)
	}
	// Too few clean runs: all runs, per-node times scaled down to the CPU time.
	for i := range walls {
		walls[i] = 200e-6
	}
	m = summarize(g, km, runs, cpus, walls, unprof, io, 1000, "m.onnx", 1, 2)
	if m.Clean != 0 || m.NodeSum > 30e-6+1e-12 {
		t.Errorf("disturbed summary %+v", m)
	}
}

// The profiler's bookkeeping costs a few µs per kernel, inside the kernels' durations: the
// profiled kernels add up to more than the unprofiled call. The same time comes off every
// kernel (not the same fraction, which would leave the 2 µs kernel at 4.7 µs).
func TestSummarizeProfilerOverhead(t *testing.T) {
	g := mapGraph(t)
	km := &KernelMap{Nodes: map[string][]int{"pool": {2}, "add": {3}}}
	var runs []ORTRun
	var cpus, walls, unprof []float64
	for range 9 {
		// True kernel times 2 and 100 µs, 3 µs of profiler in each duration and 1 µs more
		// around each kernel.
		runs = append(runs, ORTRun{Dur: 120e-6, Kernels: []ORTKernel{{Node: "pool", Dur: 5e-6}, {Node: "add", Dur: 103e-6}}})
		cpus = append(cpus, 115e-6)
		walls = append(walls, 115e-6)
		unprof = append(unprof, 107e-6) // 5 µs fixed + 102 µs of kernels
	}
	m := summarize(g, km, runs, cpus, walls, unprof, profile.IOCost{Fixed: 5e-6}, 0, "m.onnx", 1, 2)
	if !near(m.Node[2], 2e-6, 1e-6) || !near(m.Node[3], 100e-6, 1e-6) || !near(m.ProfilerOverhead, 3e-6, 1e-6) {
		t.Errorf("pool %g, add %g, profiler %g per kernel; want 2 µs, 100 µs, 3 µs", m.Node[2], m.Node[3], m.ProfilerOverhead)
	}
	// Other processes' time in wall-clock durations is not the profiler's: beyond its cost
	// per kernel in CPU time (here 4 µs), the rest is scaled away in proportion.
	for i := range runs {
		runs[i].Kernels = []ORTKernel{{Node: "pool", Dur: 10e-6}, {Node: "add", Dur: 206e-6}}
	}
	m = summarize(g, km, runs, cpus, walls, unprof, profile.IOCost{Fixed: 5e-6}, 0, "m.onnx", 1, 2)
	if !near(m.ProfilerOverhead, 4e-6, 1e-6) || !near(m.NodeSum, 102e-6, 1e-6) || !near(m.Node[2]/m.Node[3], 6.0/202, 1e-3) {
		t.Errorf("pool %g, add %g, profiler %g per kernel", m.Node[2], m.Node[3], m.ProfilerOverhead)
	}
}

// Per-node medians of skewed times can add up to much less than a typical run: here each
// run spends 40 µs in kernels (20 µs in one run), but each kernel's median is 10 µs. The
// node times are scaled to the median run's total.
func TestSummarizeMediansAddUp(t *testing.T) {
	g := mapGraph(t)
	km := &KernelMap{Nodes: map[string][]int{"pool": {2}, "add": {3}}}
	pool := []float64{10e-6, 10e-6, 10e-6, 30e-6, 30e-6}
	add := []float64{30e-6, 30e-6, 10e-6, 10e-6, 10e-6}
	var runs []ORTRun
	var cpus, walls, unprof []float64
	for i := range pool {
		runs = append(runs, ORTRun{Dur: 50e-6, Kernels: []ORTKernel{{Node: "pool", Dur: pool[i]}, {Node: "add", Dur: add[i]}}})
		cpus = append(cpus, 50e-6)
		walls = append(walls, 50e-6)
		unprof = append(unprof, 45e-6) // 5 µs fixed, 40 µs of kernels
	}
	m := summarize(g, km, runs, cpus, walls, unprof, profile.IOCost{Fixed: 5e-6}, 0, "m.onnx", 1, 2)
	if !near(m.NodeSum, 40e-6, 1e-6) || !near(m.Node[2], m.Node[3], 1e-6) {
		t.Errorf("pool %g, add %g, sum %g; want 20, 20, 40 µs", m.Node[2], m.Node[3], m.NodeSum)
	}
}
