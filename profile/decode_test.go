package profile_test

import (
	"context"
	"math"
	"os"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
	"github.com/onnxpart/onnxpart/profile"
)

// decoder writes c and loads it bound to one sequence of seq tokens after past.
func decoder(t *testing.T, c llamagen.Config, seq, past int64) *graph.Graph {
	t.Helper()
	p, err := llamagen.Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "seq": seq, "past": past, "total": past + seq}})
	if err != nil {
		t.Fatal(err)
	}
	return m.Graph
}

func fixed(v float64) profile.Figure { return profile.Figure{Value: v, Source: profile.SourceSpec} }

// testCPU is a one-thread CPU device with figures given by hand: 100 GFLOP/s, memory read at
// 20 GB/s, a 1 MiB cache read at 80 GB/s, 1 µs per kernel.
func testCPU() profile.Device {
	d := profile.Device{Name: "cpu", Kind: profile.CPU, Threads: 1, Host: true,
		Bandwidth: fixed(40e9), ReadBandwidth: fixed(20e9), Cache: fixed(1 << 20), CacheBandwidth: fixed(80e9),
		Launch: fixed(1e-6), RunOverhead: fixed(10e-6)}
	for p := range profile.NumPrecisions {
		d.Peak[p] = fixed(100e9)
	}
	return d
}

func testGPU() profile.Device {
	d := profile.Device{Name: "gpu", Kind: profile.GPU, Bandwidth: fixed(2e12), Launch: fixed(5e-6), RunOverhead: fixed(20e-6)}
	d.Peak[profile.FP32] = fixed(20e12)
	d.Peak[profile.FP16] = fixed(300e12)
	return d
}

func model(devs ...profile.Device) *profile.CostModel {
	links := make([][]profile.Link, len(devs))
	for i := range links {
		links[i] = make([]profile.Link, len(devs))
		for j := range links[i] {
			links[i][j] = profile.Link{Kind: profile.LinkNone}
		}
		links[i][i] = profile.Link{Kind: profile.LinkSelf}
	}
	return profile.NewCostModel(&profile.Cluster{Devices: devs, Links: links}, profile.CostOptions{})
}

// kernels prices every group of g coarsened by the rule set on device d.
func kernels(t *testing.T, cm *profile.CostModel, g *graph.Graph, rules string, d int) []profile.KernelBreakdown {
	t.Helper()
	rs, err := fusion.Builtin(rules)
	if err != nil {
		t.Fatal(err)
	}
	co, err := fusion.Coarsen(g, rs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]profile.KernelBreakdown, len(co.Groups))
	for i := range co.Groups {
		out[i] = cm.KernelExplain(g, co.Members(i), &co.Graph.Nodes[i], d)
		if got := cm.KernelTime(g, co.Members(i), &co.Graph.Nodes[i], d); got != out[i].Time {
			t.Fatalf("group %d: KernelTime %g, KernelExplain %g", i, got, out[i].Time)
		}
		if got := cm.KernelOverhead(g, co.Members(i), d); math.Abs(got-out[i].Overhead) > 1e-15 {
			var ops []string
			for _, v := range co.Members(i) {
				ops = append(ops, g.Nodes[v].OpType)
			}
			t.Fatalf("group %d %v: KernelOverhead %g, KernelExplain's overhead %g (%+v)", i, ops, got, out[i].Overhead, out[i])
		}
	}
	return out
}

// matmulWeights sums the weight bytes of g's MatMuls.
func matmulWeights(g *graph.Graph) float64 {
	var w float64
	for _, n := range g.Nodes {
		if n.OpType == "MatMul" {
			w += float64(n.ParamBytes)
		}
	}
	return w
}

// A decode step streams every projection's weights once: the weights of the kernels that have
// any add up to the MatMuls' weights plus one embedding row and the rotary rows (not the
// tables), at the memory read rate when they do not fit in the cache and at the cache's when
// they do.
func TestDecodeStreamsWeights(t *testing.T) {
	c := llamagen.Tiny
	g := decoder(t, c, 1, 32)
	dev := testCPU()
	cm := model(dev)
	var weights, rate float64
	for _, b := range kernels(t, cm, g, "ort-cpu", 0) {
		weights += b.Weights
		if b.Kind == profile.KindWeights {
			rate = b.WeightRate
		}
	}
	want := matmulWeights(g)
	// Gathers: one embedding row and, per layer, a cos and a sin row (float32).
	rows := float64(4*c.Hidden) + float64(c.Layers)*2*float64(4*c.HeadDim())
	// Norm weights (float32 vectors read by the Mul of every RMSNorm).
	norms := float64((2*c.Layers + 1) * 4 * c.Hidden)
	// (Scalar constants, a few bytes each, come on top.)
	if sum := want + rows + norms; weights < sum || weights > 1.005*sum {
		t.Errorf("streamed weights %.0f bytes, want %.0f (MatMuls) + %.0f (gathered rows) + %.0f (norms)", weights, want, rows, norms)
	}
	// Tiny's weights fit in the 1 MiB cache; in a 256 KiB one they do not.
	if rate != 80e9 {
		t.Errorf("weights %.0f bytes in a 1 MiB cache: rate %g, want the cache's 80e9", weights, rate)
	}
	dev.Cache = fixed(256 << 10)
	for _, b := range kernels(t, model(dev), g, "ort-cpu", 0) {
		if b.Kind == profile.KindWeights && b.WeightRate != 20e9 {
			t.Fatalf("weights beyond the cache: rate %g, want the memory's 20e9", b.WeightRate)
		}
	}
}

// A one-row product is priced as its weight bytes over the weight rate (with the class's
// memory efficiency) plus its overhead.
func TestGEMVTime(t *testing.T) {
	g := decoder(t, llamagen.Tiny, 1, 8)
	dev := testCPU()
	dev.Cache = profile.Figure{}
	cm := model(dev)
	for v, n := range g.Nodes {
		if n.OpType != "MatMul" || n.ParamBytes == 0 {
			continue
		}
		b := cm.Explain(g, v, 0)
		_, memEff := profile.EfficiencyOf(&dev, n.OpType, profile.ClassMatMul)
		want := (float64(n.ParamBytes)/20e9+float64(n.InputBytes+n.OutputBytes)/40e9)/memEff.Value + b.Overhead
		if math.Abs(b.Time-want) > 1e-12 || b.Memory < b.Compute {
			t.Fatalf("%s: %v, want %g (memory-bound)", n.Name, b, want)
		}
	}
}

// Shape arithmetic on activations (the Reshape targets, the mask's Range) runs at every call
// on a CPU, where the runtime cannot fold it for a model with symbolic dimensions, and costs a
// GPU nothing (computed on the host). A fused group pays for the views and shape arithmetic it
// holds on a CPU: in all about one overhead per such node of the graph.
func TestShapeArithmetic(t *testing.T) {
	g := decoder(t, llamagen.Tiny, 1, 8)
	cm := model(testCPU(), testGPU())
	shapes, views := 0, 0
	for v, n := range g.Nodes {
		if n.Static {
			continue
		}
		runtimeShape := true
		for _, o := range n.Outputs {
			runtimeShape = runtimeShape && g.Tensors[o].Value != nil
		}
		if runtimeShape {
			shapes++
			if cm.NodeTime(g, v, 0) <= 0 || cm.NodeTime(g, v, 1) != 0 {
				t.Fatalf("%s (%s): %g on the CPU, %g on the GPU", n.Name, n.OpType, cm.NodeTime(g, v, 0), cm.NodeTime(g, v, 1))
			}
			continue
		}
		if profile.ClassOf(g, &g.Nodes[v]) == profile.ClassView {
			views++
		}
	}
	if shapes < 10 {
		t.Fatalf("%d shape nodes", shapes)
	}
	var dispatched float64
	for _, b := range kernels(t, cm, g, "ort-cpu", 0) {
		dispatched += b.Dispatched
	}
	for _, b := range kernels(t, cm, g, "ort-cpu", 1) {
		if b.Dispatched != 0 {
			t.Fatalf("GPU kernel dispatches %g nodes besides itself", b.Dispatched)
		}
	}
	// Views that lead a group of their own are its kernel, not dispatched besides it; shape
	// nodes recomputed by groups that share a reader count less than once.
	if lo, hi := 0.5*float64(shapes), float64(shapes+views); dispatched < lo || dispatched > hi {
		t.Errorf("dispatched %.1f nodes besides the kernels; %d shape nodes and %d views", dispatched, shapes, views)
	}
}

// The attention block (Q·Kᵀ, scale, mask, Softmax, P·V) is one group under the ort-cpu rules:
// a CPU prices it as its kernels one after another (ONNX Runtime's CPU kernels materialise
// the scores), a GPU as one fused kernel.
func TestAttentionGroup(t *testing.T) {
	g := decoder(t, llamagen.Tiny, 16, 0)
	cm := model(testCPU(), testGPU())
	for d, wantUnfused := range []bool{true, false} {
		n := 0
		for _, b := range kernels(t, cm, g, "ort-cpu", d) {
			if b.Kind != profile.KindAttention {
				continue
			}
			if b.Unfused != wantUnfused {
				t.Errorf("device %d: attention group unfused %v", d, b.Unfused)
			}
			n++
		}
		if n != llamagen.Tiny.Layers {
			t.Errorf("device %d: %d attention groups, want one per layer", d, n)
		}
	}
}

// On a CPU that computes float16 in float32, fp16 weights stream at 4 bytes per element and
// Casts appear around the widened nodes; a GPU streams them at 2 bytes and casts nothing.
func TestHalfOnCPU(t *testing.T) {
	c := llamagen.Tiny
	c.DType, c.Name = graph.Float16, "tiny-fp16"
	g := decoder(t, c, 1, 8)
	cm := model(testCPU(), testGPU())
	var w [2]float64
	var casts [2]float64
	for d := range 2 {
		for _, b := range kernels(t, cm, g, "ort-cpu", d) {
			if b.Kind == profile.KindWeights {
				w[d] += b.Weights
			}
			casts[d] += b.Casts
		}
	}
	near := func(a, b float64) bool { return a >= b && a <= 1.005*b } // scalar constants on top
	if mm := matmulWeights(g); !near(w[0], 2*mm) || !near(w[1], mm) {
		t.Errorf("fp16 MatMul weights %.0f bytes: streamed %.0f on the CPU, %.0f on the GPU", mm, w[0], w[1])
	}
	if casts[0] <= 0 || casts[1] != 0 {
		t.Errorf("cast time %g on the CPU, %g on the GPU", casts[0], casts[1])
	}
}

// The read sweep's levels: the largest set's rate is the memory's; the cache is the largest
// set read at least halfway to the best rate; a flat curve has no cache level.
func TestMemoryLevels(t *testing.T) {
	b := &profile.HostBench{Read: []profile.ReadPoint{{1 << 20, 80e9}, {4 << 20, 78e9}, {16 << 20, 60e9}, {32 << 20, 40e9}, {256 << 20, 30e9}}}
	l := b.Levels()
	if l.Memory != 30e9 || l.Cache != 80e9 || l.CacheBytes != 16<<20 {
		t.Errorf("levels %+v", l)
	}
	flat := &profile.HostBench{Read: []profile.ReadPoint{{1 << 20, 31e9}, {256 << 20, 30e9}}}
	if l := flat.Levels(); l.Cache != 0 || l.CacheBytes != 0 || l.Memory != 30e9 {
		t.Errorf("flat: %+v", l)
	}
	d := testCPU()
	if r := profile.WeightRate(&d, 1<<20); r.Value != 80e9 {
		t.Errorf("1 MiB in a 1 MiB cache: %v", r)
	}
	if r := profile.WeightRate(&d, 2<<20); r.Value != 20e9 {
		t.Errorf("2 MiB: %v", r)
	}
	d.ReadBandwidth = profile.Figure{}
	if r := profile.WeightRate(&d, 2<<20); r.Value != 40e9 {
		t.Errorf("no read figure: %v, want the bandwidth", r)
	}
	// A measured sweep wins, interpolated in log size and flat beyond its ends.
	d.Reads = b.Read
	for _, c := range []struct{ total, want float64 }{{1 << 19, 80e9}, {2 << 20, 79e9}, {8 << 20, 69e9}, {16 << 20, 60e9}, {1 << 30, 30e9}} {
		if r := profile.WeightRate(&d, c.total); math.Abs(r.Value-c.want) > 1e3 {
			t.Errorf("sweep at %g bytes: %v, want %g", c.total, r, c.want)
		}
	}
}

// A spec file can give the weight-streaming figures of a device.
func TestSpecWeightFigures(t *testing.T) {
	spec := "devices:\n  - name: g\n    type: a100-80g\n    read_bandwidth: 1.8TB/s\n    last_level_cache: 40MiB\n    last_level_cache_bandwidth: 5TB/s\n"
	p := t.TempDir() + "/d.yaml"
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), p, hw.Options{Host: hw.HostOptions{NoBench: true}})
	if err != nil {
		t.Fatal(err)
	}
	d := &c.Devices[0]
	if d.ReadBandwidth.Value != 1.8e12 || d.Cache.Value != 40<<20 || d.CacheBandwidth.Value != 5e12 || d.ReadBandwidth.Source != profile.SourceSpec {
		t.Fatalf("figures %+v %+v %+v", d.ReadBandwidth, d.Cache, d.CacheBandwidth)
	}
	if r := profile.WeightRate(d, 30<<20); r.Value != 5e12 {
		t.Errorf("30 MiB: %v", r)
	}
	if r := profile.WeightRate(d, 2e9); r.Value != 1.8e12 {
		t.Errorf("2 GB: %v", r)
	}
}
