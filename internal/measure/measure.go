package measure

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"

	ortgo "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/profile"
)

// MeasureOptions control an ONNX Runtime profiling run.
type MeasureOptions struct {
	// Threads is the intra-op thread count (0: 1).
	Threads int
	// NoOptimize disables ONNX Runtime's graph optimizations (fusions, layout changes);
	// by default they are on, as in deployment.
	NoOptimize bool
	// Runs is the number of profiled runs (0: 20); Warmup runs precede them unprofiled in
	// the statistics (0: 3).
	Runs, Warmup int
	// Feeds gives input values by name; inputs not given get deterministic random values
	// (floats in [-1, 1), integers in {0, 1}).
	Feeds map[string]*ort.Tensor
	// IO is the cost of a call's inputs and outputs (MeasureIO); nil measures it.
	IO *profile.IOCost
	// Passes is how often the runs are made (0: 3); the pass whose unprofiled calls' CPU time
	// (median of its calls) is the median of the passes gives the measurement.
	Passes int
}

// MeasureORT profiles the model at path (whose graph is g, with every input shape known) in
// ONNX Runtime and attributes kernel times to g's nodes (see MapKernels). The runs are made
// opts.Passes times; the median pass gives the measurement.
func MeasureORT(ctx context.Context, path string, g *graph.Graph, opts MeasureOptions) (*profile.Measurement, error) {
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	if opts.Runs <= 0 {
		opts.Runs = 20
	}
	if opts.Warmup <= 0 {
		opts.Warmup = 3
	}
	if opts.Passes <= 0 {
		opts.Passes = 3
	}
	if err := ort.Init(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "onnxpart-profile-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	// 1. The graph ORT runs: the same options, with the optimized model saved.
	optPath := filepath.Join(dir, "optimized.onnx")
	if err := saveOptimized(path, optPath, g, opts); err != nil {
		return nil, err
	}
	optNodes, err := readOptNodes(optPath)
	if err != nil {
		return nil, err
	}
	km := MapKernels(g, optNodes)

	// 2. Inputs, outputs, and the cost of binding them.
	feeds, inNames, err := makeFeeds(g, opts.Feeds)
	if err != nil {
		return nil, err
	}
	var outNames []string
	for _, id := range g.Outputs {
		outNames = append(outNames, g.Tensors[id].Name)
	}
	io := opts.IO
	if io == nil {
		c, err := MeasureIO(ctx, opts.Threads, opts.Runs, 0)
		if err != nil {
			return nil, err
		}
		io = &c
	}
	var ioBytes int64
	for _, id := range append(append([]int(nil), g.Inputs...), g.Outputs...) {
		ioBytes += max(g.Tensors[id].Bytes, 0)
	}
	// 3. Passes of profiled and unprofiled runs; the median pass (by its unprofiled calls'
	// CPU time) counts: the least disturbed one under-predicts what a deployed stage meets on
	// a shared host (bench-costs, docs/costs.md), the most disturbed one over-predicts.
	passes := make([]*profile.Measurement, 0, opts.Passes)
	for pass := range opts.Passes {
		m, err := measurePass(ctx, path, g, opts, km, feeds, inNames, outNames, *io, ioBytes, filepath.Join(dir, fmt.Sprintf("trace%d", pass)), len(optNodes))
		if err != nil {
			return nil, err
		}
		passes = append(passes, m)
	}
	slices.SortStableFunc(passes, func(a, b *profile.Measurement) int { return cmp.Compare(a.Call, b.Call) })
	return passes[(len(passes)-1)/2], nil
}

// measurePass is one pass of MeasureORT: opts.Warmup+opts.Runs profiled runs (trace files
// under prefix), the same runs without the profiler, whose per-kernel bookkeeping would
// otherwise be charged to the kernels, and their summary (summarize).
func measurePass(ctx context.Context, path string, g *graph.Graph, opts MeasureOptions, km *KernelMap, feeds map[string]*ort.Tensor,
	inNames, outNames []string, io profile.IOCost, ioBytes int64, prefix string, optimized int) (*profile.Measurement, error) {
	s, err := ort.NewSession(path, inNames, outNames, ort.Options{Optimize: !opts.NoOptimize, Threads: opts.Threads, ProfilePrefix: prefix})
	if err != nil {
		return nil, err
	}
	hints := outputHints(g)
	calls, walls, err := timeRuns(ctx, s, feeds, hints, opts.Warmup, opts.Runs)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("ONNX Runtime run of %s: %w", path, err)
	}
	plain, err := ort.NewSession(path, inNames, outNames, ort.Options{Optimize: !opts.NoOptimize, Threads: opts.Threads})
	if err != nil {
		return nil, err
	}
	unprof, _, err := timeRuns(ctx, plain, feeds, hints, opts.Warmup, opts.Runs)
	plain.Close()
	if err != nil {
		return nil, fmt.Errorf("ONNX Runtime run of %s: %w", path, err)
	}
	traces, _ := filepath.Glob(prefix + "*.json")
	if len(traces) != 1 {
		return nil, fmt.Errorf("ONNX Runtime wrote %d profile files, want 1", len(traces))
	}
	f, err := os.Open(traces[0])
	if err != nil {
		return nil, err
	}
	prof, err := ParseORTProfile(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if len(prof.Runs) < opts.Warmup+opts.Runs {
		return nil, fmt.Errorf("ONNX Runtime profile holds %d runs, want %d", len(prof.Runs), opts.Warmup+opts.Runs)
	}
	runs := prof.Runs[len(prof.Runs)-opts.Runs:]
	m := summarize(g, km, runs, calls, walls, unprof, io, ioBytes, path, opts.Threads, optimized)
	m.IO = io
	m.Wall = median(walls)
	return m, nil
}

// cleanRun says whether a call ran undisturbed: its wall time exceeds the thread's CPU time
// by less than 3% (no other process held the core for long).
func cleanRun(wall, cpu float64) bool { return wall > 0 && wall-cpu < 0.03*wall }

// minClean is the fewest undisturbed runs summarize needs to use them alone.
const minClean = 5

// timeRuns runs s warmup+runs times and returns the CPU and wall times of the last runs.
//
// Each run is a call as pipebench (and a deployment's I/O binding) makes it: the inputs are
// copied into buffers bound to the session once, the outputs written into preallocated
// buffers and copied out into buffers of the caller's (see boundCall). Session.Run instead
// allocates a fresh copy of every input and output on each call (Go heap allocations, their
// zeroing and first-touch page faults), which costs several times the copies themselves and
// is not what a stage pays in a pipeline.
func timeRuns(ctx context.Context, s *ort.Session, feeds map[string]*ort.Tensor, hints map[string]ort.OutputHint, warmup, runs int) (cpus, walls []float64, err error) {
	call, done := boundCall(s, feeds, hints)
	defer done()
	for i := range warmup + runs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		wall, cpu, err := devices.TimeCall(call)
		if err != nil {
			return nil, nil, err
		}
		if i >= warmup {
			cpus = append(cpus, cpu)
			walls = append(walls, wall)
		}
	}
	return cpus, walls, nil
}

// boundCall prepares a call of s on feeds the way pipebench runs a stage: input buffers and
// preallocated outputs bound once (Session.Prepare); each call copies the feeds into the
// input buffers, runs, and copies every output into a buffer kept from the first call. When
// the call cannot be prepared (an output of unknown shape or type) it calls Session.Run.
func boundCall(s *ort.Session, feeds map[string]*ort.Tensor, hints map[string]ort.OutputHint) (call func() error, done func()) {
	bufs := map[string]*ort.Tensor{}
	var pairs [][2][]byte
	for name, t := range feeds {
		b := &ort.Tensor{DType: t.DType, Shape: t.Shape, Data: make([]byte, len(t.Data))}
		copy(b.Data, t.Data)
		bufs[name] = b
		pairs = append(pairs, [2][]byte{b.Data, t.Data})
	}
	bd, err := s.Prepare(bufs, hints)
	if err != nil {
		return func() error { _, err := s.Run(feeds, hints); return err }, func() {}
	}
	outs := map[string][]byte{}
	return func() error {
			for _, p := range pairs {
				copy(p[0], p[1])
			}
			if err := bd.Run(); err != nil {
				return err
			}
			for _, name := range s.Outputs() {
				t, err := bd.Output(name)
				if err != nil {
					return err
				}
				dst, ok := outs[name]
				if !ok || len(dst) != len(t.Data) {
					dst = make([]byte, len(t.Data))
					outs[name] = dst
				}
				copy(dst, t.Data)
			}
			return nil
		}, func() {
			bd.Close()
		}
}

// summarize turns per-run attributions into per-node medians.
//
// A call's CPU time (unprof: runs without the profiler, whose bookkeeping would otherwise be
// counted) is split into the call's fixed cost and its inputs' and outputs' binding (io:
// fixed + ioBytes·per byte), the kernels' durations (from the profile), and the executor's
// work between kernels: what remains, shared equally by the kernels. When the kernels of a
// profiled run add up to more than that CPU time allows, the profiler's own per-kernel
// bookkeeping is in their durations: a fixed cost per kernel (a few µs, more than many small
// kernels take), so the same time is taken off every kernel (commonShift), up to the
// profiler's cost per kernel measured in CPU time (profiled against unprofiled calls);
// scaling all of them down in proportion instead would leave short kernels several times too
// long and make long ones too short. Kernel times are then attributed to original nodes and
// summarised by their median over runs: over the undisturbed runs (see cleanRun) when there
// are enough of them, else over all runs, scaled down if they still exceed the CPU time
// (kernel times are wall times and include whatever other processes took).
func summarize(g *graph.Graph, km *KernelMap, runs []ORTRun, cpus, walls, unprof []float64, io profile.IOCost, ioBytes int64, path string, threads, optimized int) *profile.Measurement {
	m := &profile.Measurement{Model: path, Threads: threads, Runs: len(runs), Node: make([]float64, len(g.Nodes)), Optimized: optimized}
	m.Call = median(unprof)
	if len(unprof) == 0 {
		m.Call = median(cpus)
	}
	use := make([]int, 0, len(runs))
	for i := range runs {
		if i < len(cpus) && i < len(walls) && cleanRun(walls[i], cpus[i]) {
			use = append(use, i)
		}
	}
	m.Clean = len(use)
	if len(use) < minClean {
		use = use[:0]
		for i := range runs {
			use = append(use, i)
		}
	}
	var durs []float64
	for _, i := range use {
		var d float64
		for _, k := range runs[i].Kernels {
			d += k.Dur
		}
		durs = append(durs, d)
	}
	m.Overhead = io.Fixed
	binding := float64(max(ioBytes, 0)) * io.PerByte
	var e float64
	if k := len(runs[use[0]].Kernels); k > 0 {
		e = math.Max(m.Call-io.Fixed-binding-median(durs), 0) / float64(k)
	}
	m.KernelOverhead = e
	limit := m.Call - io.Fixed - binding
	// The profiler's own cost per kernel, in CPU time (which other processes do not
	// inflate): what a profiled call costs beyond an unprofiled one.
	var profCPU []float64
	for _, i := range use {
		if i < len(cpus) {
			profCPU = append(profCPU, cpus[i])
		}
	}
	var perKernel float64
	if k := len(runs[use[0]].Kernels); k > 0 && len(profCPU) > 0 {
		perKernel = math.Max(median(profCPU)-m.Call, 0) / float64(k)
	}
	per := make([][]float64, len(use))
	var kern, unm, shifts []float64
	for j, i := range use {
		r := runs[i]
		adj := ORTRun{TS: r.TS, Dur: r.Dur, Kernels: append([]ORTKernel(nil), r.Kernels...)}
		var sum float64
		for x := range adj.Kernels {
			adj.Kernels[x].Gap = e
			sum += adj.Kernels[x].Time()
		}
		if limit > 0 && sum > limit {
			// The kernels took longer under the profiler than the whole call without it:
			// the profiler's bookkeeping, a fixed cost per kernel. Take the same time off
			// every kernel (none below minKernelTime) until they fit, but no more than the
			// profiler costs per kernel; what remains is other processes' time in the
			// wall-clock durations, scaled away in proportion below.
			times := make([]float64, len(adj.Kernels))
			for x, k := range adj.Kernels {
				times[x] = k.Time()
			}
			d := math.Min(commonShift(times, limit), perKernel)
			shifts = append(shifts, d)
			sum = 0
			for x := range adj.Kernels {
				adj.Kernels[x].Dur, adj.Kernels[x].Gap = math.Max(times[x]-d, minKernelTime), 0
				sum += adj.Kernels[x].Time()
			}
		} else {
			shifts = append(shifts, 0)
		}
		t := make([]float64, len(g.Nodes))
		u := attribute(g, km, adj, t)
		spread(g, u, t)
		per[j] = t
		kern = append(kern, sum)
		unm = append(unm, u)
	}
	m.Kernels, m.Unmapped, m.ProfilerOverhead = median(kern), median(unm), median(shifts)
	col := make([]float64, len(use))
	for v := range g.Nodes {
		for j := range use {
			col[j] = per[j][v]
		}
		m.Node[v] = median(col)
		m.NodeSum += m.Node[v]
	}
	// Per-node medians are robust to a run's outliers, but with right-skewed times they add
	// up to less than the median run: scale them to its total, and no further than the CPU
	// time allows.
	target := m.Kernels
	if limit > 0 && target > limit {
		target = limit
	}
	if m.NodeSum > 0 && target > 0 {
		f := target / m.NodeSum
		for v := range m.Node {
			m.Node[v] *= f
		}
		m.NodeSum = target
	}
	return m
}

// minKernelTime is the least time a kernel that ran is left with when the profiler's
// overhead is taken off (durations are whole microseconds; one shorter than the overhead does
// not say how short the kernel was).
const minKernelTime = 0.1e-6

// commonShift returns the d ≥ 0 for which the times, each less d and none below
// minKernelTime, add up to limit (> 0); 0 when they already fit.
func commonShift(times []float64, limit float64) float64 {
	excess := func(d float64) float64 {
		var s float64
		for _, t := range times {
			s += math.Max(t-d, minKernelTime)
		}
		return s - limit
	}
	lo, hi := 0.0, 0.0
	for _, t := range times {
		hi = math.Max(hi, t)
	}
	if excess(0) <= 0 {
		return 0
	}
	for range 100 {
		mid := (lo + hi) / 2
		if excess(mid) > 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// saveOptimized has ONNX Runtime write the graph it will run, with the session options of
// the profiled session.
func saveOptimized(path, out string, g *graph.Graph, opts MeasureOptions) error {
	so, err := ortgo.NewSessionOptions()
	if err != nil {
		return err
	}
	defer so.Destroy()
	level := ortgo.GraphOptimizationLevel(ortgo.GraphOptimizationLevelEnableAll)
	if opts.NoOptimize {
		level = ortgo.GraphOptimizationLevel(ortgo.GraphOptimizationLevelDisableAll)
	}
	if err := so.SetGraphOptimizationLevel(level); err != nil {
		return err
	}
	if err := so.SetIntraOpNumThreads(opts.Threads); err != nil {
		return err
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return err
	}
	if err := so.SetOptimizedModelFilePath(out); err != nil {
		return err
	}
	var ins, outs []string
	for _, id := range g.Inputs {
		ins = append(ins, g.Tensors[id].Name)
	}
	for _, id := range g.Outputs {
		outs = append(outs, g.Tensors[id].Name)
	}
	s, err := ortgo.NewDynamicAdvancedSession(path, ins, outs, so)
	if err != nil {
		return fmt.Errorf("ONNX Runtime cannot load %s: %w", path, err)
	}
	return s.Destroy()
}

func readOptNodes(path string) ([]OptNode, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("optimized model: %w", err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("optimized model: %w", err)
	}
	var out []OptNode
	for _, n := range m.GetGraph().GetNode() {
		out = append(out, OptNode{Name: n.GetName(), Op: n.GetOpType(), Inputs: n.GetInput(), Outputs: n.GetOutput()})
	}
	return out, nil
}

// outputHints gives the type and shape of every output whose shape is known, as pipebench
// does: a prepared call (boundCall) preallocates them all, Session.Run those it cannot
// allocate itself (scalars, fp16).
func outputHints(g *graph.Graph) map[string]ort.OutputHint {
	h := map[string]ort.OutputHint{}
	for _, id := range g.Outputs {
		t := &g.Tensors[id]
		dims := t.Shape.Dims()
		if t.Shape.Known() {
			h[t.Name] = ort.OutputHint{DType: t.DType, Shape: dims}
		}
	}
	return h
}

// makeFeeds builds the inputs: given ones, else deterministic random values.
func makeFeeds(g *graph.Graph, given map[string]*ort.Tensor) (map[string]*ort.Tensor, []string, error) {
	rng := rand.New(rand.NewSource(1))
	out := map[string]*ort.Tensor{}
	var names []string
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		names = append(names, t.Name)
		if v, ok := given[t.Name]; ok {
			out[t.Name] = v
			continue
		}
		v, err := feeds.Tensor(rng, t)
		if err != nil {
			return nil, nil, err
		}
		out[t.Name] = v
	}
	return out, names, nil
}
