package profile

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"

	ortgo "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"onnxpart/graph"
	"onnxpart/internal/onnxpb"
	"onnxpart/internal/ort"
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
}

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
	// Call is the median CPU time of one Run call on the calling thread (see TimeCall), Wall
	// its median wall time; Kernels the
	// median sum of kernel times (each with the executor's gap before it) per run; Unmapped the median kernel time per run that could
	// not be related to original nodes (it is spread over Node in proportion to work).
	Call, Wall, Kernels, Unmapped float64
	// Overhead is the median CPU time of a call outside kernels (binding inputs and outputs,
	// session bookkeeping), from the undisturbed runs; 0 when there were too few.
	Overhead float64
	// Clean is the number of runs no other process disturbed (see TimeCall); the per-node
	// medians use only those when there are at least 5.
	Clean int
	// Optimized is the number of nodes in the graph ONNX Runtime ran.
	Optimized int
}

// RunOverhead is the part of a call not spent in kernels (session bookkeeping, input and
// output binding), seconds.
func (m *Measurement) RunOverhead() float64 { return m.Overhead }

// NodeTimes returns per-node times for CostOptions.Measured.
func (m *Measurement) NodeTimes() []float64 { return append([]float64(nil), m.Node...) }

// MeasureORT profiles the model at path (whose graph is g, with every input shape known) in
// ONNX Runtime and attributes kernel times to g's nodes (see MapKernels).
func MeasureORT(ctx context.Context, path string, g *graph.Graph, opts MeasureOptions) (*Measurement, error) {
	if opts.Threads <= 0 {
		opts.Threads = 1
	}
	if opts.Runs <= 0 {
		opts.Runs = 20
	}
	if opts.Warmup <= 0 {
		opts.Warmup = 3
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

	// 2. Profiled runs.
	feeds, inNames, err := makeFeeds(g, opts.Feeds)
	if err != nil {
		return nil, err
	}
	var outNames []string
	for _, id := range g.Outputs {
		outNames = append(outNames, g.Tensors[id].Name)
	}
	prefix := filepath.Join(dir, "trace")
	s, err := ort.NewSession(path, inNames, outNames, ort.Options{Optimize: !opts.NoOptimize, Threads: opts.Threads, ProfilePrefix: prefix})
	if err != nil {
		return nil, err
	}
	hints := outputHints(g)
	var calls, walls []float64
	for i := range opts.Warmup + opts.Runs {
		if err := ctx.Err(); err != nil {
			s.Close()
			return nil, err
		}
		wall, cpu, err := TimeCall(func() error { _, err := s.Run(feeds, hints); return err })
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("ONNX Runtime run of %s: %w", path, err)
		}
		if i >= opts.Warmup {
			calls = append(calls, cpu)
			walls = append(walls, wall)
		}
	}
	if err := s.Close(); err != nil {
		return nil, err
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
	m := summarize(g, km, runs, calls, walls, path, opts.Threads, len(optNodes))
	m.Wall = median(walls)
	return m, nil
}

// cleanRun says whether a call ran undisturbed: its wall time exceeds the thread's CPU time
// by less than 3% (no other process held the core for long).
func cleanRun(wall, cpu float64) bool { return wall > 0 && wall-cpu < 0.03*wall }

// minClean is the fewest undisturbed runs summarize needs to use them alone.
const minClean = 5

// summarize turns per-run attributions into per-node medians. It uses the undisturbed runs
// when there are enough of them; otherwise all runs, with the per-node times scaled down so
// that they add up to the calls' median CPU time less the call overhead (kernel times are
// wall times and include whatever other processes took).
func summarize(g *graph.Graph, km *KernelMap, runs []ORTRun, cpus, walls []float64, path string, threads, optimized int) *Measurement {
	m := &Measurement{Model: path, Threads: threads, Runs: len(runs), Node: make([]float64, len(g.Nodes)), Optimized: optimized}
	type perRun struct {
		node          []float64
		sum, unmapped float64
	}
	all := make([]perRun, len(runs))
	for i, r := range runs {
		t := make([]float64, len(g.Nodes))
		u := attribute(g, km, r, t)
		spread(g, u, t)
		var sum float64
		for _, k := range r.Kernels {
			sum += k.Time()
		}
		all[i] = perRun{t, sum, u}
	}
	use := make([]int, 0, len(runs))
	for i := range runs {
		if i < len(cpus) && cleanRun(walls[i], cpus[i]) {
			use = append(use, i)
		}
	}
	m.Clean = len(use)
	clean := len(use) >= minClean
	if !clean {
		use = use[:0]
		for i := range runs {
			use = append(use, i)
		}
	}
	var kern, unm, over, cpu []float64
	for _, i := range use {
		kern = append(kern, all[i].sum)
		unm = append(unm, all[i].unmapped)
		if i < len(cpus) {
			cpu = append(cpu, cpus[i])
			if clean {
				over = append(over, math.Max(cpus[i]-all[i].sum, 0))
			}
		}
	}
	m.Kernels, m.Unmapped = median(kern), median(unm)
	col := make([]float64, len(use))
	for v := range g.Nodes {
		for j, i := range use {
			col[j] = all[i].node[v]
		}
		m.Node[v] = median(col)
		m.NodeSum += m.Node[v]
	}
	if len(cpu) > 0 {
		m.Call = median(cpu)
	} else {
		var d []float64
		for _, r := range runs {
			d = append(d, r.Dur)
		}
		m.Call = median(d)
	}
	if clean {
		m.Overhead = median(over)
	} else if m.NodeSum > 0 {
		// Disturbed: trust the CPU time, keep the kernels' proportions. The call overhead
		// cannot be separated; take it as the gap at the median, at least zero.
		m.Overhead = 0
		if f := m.Call / m.NodeSum; f < 1 {
			for v := range m.Node {
				m.Node[v] *= f
			}
			m.NodeSum = m.Call
		}
	}
	return m
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

// outputHints lets the ORT wrapper preallocate outputs it cannot allocate itself (scalars,
// fp16).
func outputHints(g *graph.Graph) map[string]ort.OutputHint {
	h := map[string]ort.OutputHint{}
	for _, id := range g.Outputs {
		t := &g.Tensors[id]
		dims := t.Shape.Dims()
		if t.Shape.Known() && (len(dims) == 0 || t.DType == graph.Float16 || t.DType == graph.BFloat16) {
			h[t.Name] = ort.OutputHint{DType: t.DType, Shape: dims}
		}
	}
	return h
}

// makeFeeds builds the inputs: given ones, else deterministic random values.
func makeFeeds(g *graph.Graph, given map[string]*ort.Tensor) (map[string]*ort.Tensor, []string, error) {
	rng := rand.New(rand.NewSource(1))
	feeds := map[string]*ort.Tensor{}
	var names []string
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		names = append(names, t.Name)
		if v, ok := given[t.Name]; ok {
			feeds[t.Name] = v
			continue
		}
		v, err := RandomTensor(rng, t)
		if err != nil {
			return nil, nil, err
		}
		feeds[t.Name] = v
	}
	return feeds, names, nil
}

// RandomTensor makes a deterministic input value for tensor t: floats uniform in [-1, 1),
// integers and booleans in {0, 1} (valid token ids, masks and indices). The shape must be
// fully known.
func RandomTensor(rng *rand.Rand, t *graph.Tensor) (*ort.Tensor, error) {
	if !t.Shape.Known() {
		return nil, fmt.Errorf("input %s has shape %s: bind its symbolic dimensions (--dim NAME=SIZE)", t.Name, t.Shape)
	}
	dims := t.Shape.Dims()
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	out := &ort.Tensor{DType: t.DType, Shape: dims}
	switch t.DType {
	case graph.Float:
		out.Data = make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint32(out.Data[4*i:], math.Float32bits(rng.Float32()*2-1))
		}
	case graph.Double:
		out.Data = make([]byte, 8*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint64(out.Data[8*i:], math.Float64bits(rng.Float64()*2-1))
		}
	case graph.Float16:
		out.Data = make([]byte, 2*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint16(out.Data[2*i:], halfFromFloat(rng.Float32()*2-1))
		}
	default:
		b, err := graph.ByteSize(t.DType, t.Shape)
		if err != nil || b < 0 {
			return nil, fmt.Errorf("input %s: unsupported type %s", t.Name, t.DType)
		}
		out.Data = make([]byte, b)
		if size := t.DType.Bits() / 8; size >= 1 && t.DType != graph.String {
			for i := int64(0); i < n; i++ {
				out.Data[i*int64(size)] = byte(rng.Intn(2))
			}
		}
	}
	return out, nil
}

// halfFromFloat converts to IEEE binary16 (round to nearest even; values here are in
// [-1, 1), so no overflow handling is needed beyond flushing tiny values to zero).
func halfFromFloat(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	if exp <= 0 {
		return sign
	}
	if exp >= 31 {
		return sign | 0x7c00
	}
	h := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
		h++
	}
	return sign | uint16(h)
}
