package profile

import (
	"fmt"
	"math"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// convs builds one convolution per spec, each reading x: {cout, cin per group, group, k}.
func convs(t *testing.T, specs [][4]int64) *graph.Graph {
	t.Helper()
	b := graph.NewBuilder("convs")
	b.AddInput("x")
	for i, s := range specs {
		w := b.AddInitializer(fmt.Sprintf("w%d", i))
		b.TensorRef(w).DType = graph.Float
		b.TensorRef(w).Shape = graph.ShapeOf(s[0], s[1], s[3], s[3])
		var attrs []graph.Attr
		if s[2] > 1 {
			attrs = []graph.Attr{{Name: "group", Kind: graph.AttrInt, Int: s[2]}}
		}
		b.AddNode(fmt.Sprintf("conv%d", i), "Conv", "", []string{"x", fmt.Sprintf("w%d", i)}, []string{fmt.Sprintf("y%d", i)}, nil, attrs)
		b.AddOutput(fmt.Sprintf("y%d", i))
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for v := range g.Nodes {
		g.Nodes[v].FLOPs, g.Nodes[v].InputBytes, g.Nodes[v].OutputBytes = 1e6, 1e5, 1e5
	}
	return g
}

// ONNX Runtime's NCHWc rule: dense convolutions with fewer input channels than the block or
// a multiple of the alignment, depthwise ones with a multiple of the alignment.
func TestBlockedRule(t *testing.T) {
	g := convs(t, [][4]int64{
		{18, 1, 18, 3}, // depthwise, 18 channels: plain when aligned to 4
		{20, 1, 20, 3}, // depthwise, 20 channels: padded to 32, blocked
		{16, 3, 1, 3},  // 3 input channels: blocked (NCHW input read directly)
		{16, 18, 1, 1}, // 18 input channels: plain
		{16, 24, 1, 1}, // 24 input channels: blocked (padded) with alignment 4
		{32, 8, 4, 3},  // grouped, 8 channels per group: not a block multiple, plain
	})
	d := Device{Kind: CPU, VectorWidth: 16}
	for v := range g.Nodes {
		if !d.Blocked(g, &g.Nodes[v]) || ClassOn(&d, g, &g.Nodes[v]) != ClassOf(g, &g.Nodes[v]) {
			t.Errorf("%s: with no channel alignment every convolution is blocked and keeps its class", g.Nodes[v].Name)
		}
	}
	d.ChannelAlign = 4
	want := []bool{false, true, true, false, true, false}
	for v, w := range want {
		if got := d.Blocked(g, &g.Nodes[v]); got != w {
			t.Errorf("align 4: %s blocked %v, want %v", g.Nodes[v].Name, got, w)
		}
	}
	if c := ClassOn(&d, g, &g.Nodes[0]); c != ClassDepthwisePlain {
		t.Errorf("18-channel depthwise: class %s, want %s", c, ClassDepthwisePlain)
	}
	if c := ClassOn(&d, g, &g.Nodes[1]); c != ClassDepthwise {
		t.Errorf("20-channel depthwise: class %s, want %s", c, ClassDepthwise)
	}
	if c := ClassOn(&d, g, &g.Nodes[3]); c != ClassConv {
		t.Errorf("dense plain convolution: class %s, want %s", c, ClassConv)
	}
	d.ChannelAlign = 16 // an older runtime: block multiples only
	if d.Blocked(g, &g.Nodes[1]) || d.Blocked(g, &g.Nodes[4]) || !d.Blocked(g, &g.Nodes[2]) {
		t.Error("align 16: 20-channel depthwise and 24-input-channel convolutions must be plain, 3-input-channel blocked")
	}
}

// A plain depthwise convolution is priced with its own efficiency and without lane padding
// (the generic path does not pad channels to the vector width), and the layout model converts
// around it.
func TestDepthwisePlainCost(t *testing.T) {
	g := convs(t, [][4]int64{{18, 1, 18, 3}})
	d := Device{Name: "cpu", Kind: CPU, VectorWidth: 16, ChannelAlign: 4}
	d.Peak[FP32] = fig(100e9, SourceSpec, "")
	d.Bandwidth = fig(20e9, SourceSpec, "")
	d.Launch = fig(1e-6, SourceSpec, "")
	d.Efficiency = map[string]Figure{"conv-depthwise": fig(0.5, SourceSpec, ""), "conv-depthwise-plain": fig(0.05, SourceSpec, "")}
	ApplyKindDefaults(&d)
	m := NewCostModel(oneDevice(d), CostOptions{})
	b := m.Explain(g, 0, 0)
	if b.Class != ClassDepthwisePlain || !near(b.Time, 1e6/(100e9*0.05)+1e-6, 1e-12) {
		t.Errorf("plain depthwise: %s, want class %s and 1e6 FLOPs at 5%% of 100 GFLOP/s + 1 µs", b, ClassDepthwisePlain)
	}
	d.ChannelAlign = 0
	m = NewCostModel(oneDevice(d), CostOptions{})
	b = m.Explain(g, 0, 0)
	// Blocked: 18 channels padded to 32 lanes.
	if b.Class != ClassDepthwise || !near(b.Compute, 1e6*32.0/18/(100e9*0.5), 1e-12) {
		t.Errorf("blocked depthwise: %s, want class %s with lane padding 32/18", b, ClassDepthwise)
	}
	stage := newLayoutCtx(g, nil, &Device{VectorWidth: 16, ChannelAlign: 4})
	if stage.isBlocked(0) {
		t.Error("a plain depthwise convolution works in the plain layout")
	}
}

// Calibration classes nodes with the channel alignment its samples measured, fits plain
// depthwise convolutions separately, and Apply carries the alignment to the device.
func TestCalibrateDepthwisePlain(t *testing.T) {
	var specs [][4]int64
	for range 6 {
		specs = append(specs, [4]int64{18, 1, 18, 3}, [4]int64{32, 1, 32, 3})
	}
	g := convs(t, specs)
	d := Device{Name: "cpu", Kind: CPU, VectorWidth: 16}
	d.Peak[FP32] = fig(100e9, SourceSpec, "")
	d.Bandwidth = fig(20e9, SourceSpec, "")
	ApplyKindDefaults(&d)
	times := make([]float64, len(g.Nodes))
	for v := range g.Nodes {
		g.Nodes[v].FLOPs = int64(v+1) * 1e6 // compute-bound, of different sizes
		c, mem := roofline(&d, g, &g.Nodes[v], ClassDepthwise, FP32, nodeWeights(&d, g, &g.Nodes[v]), 0)
		if v%2 == 0 { // 18 channels, plain: no lane padding, 20× slower
			c = float64(g.Nodes[v].FLOPs) / d.Peak[FP32].Value
			times[v] = c/0.02 + 2e-6
		} else {
			times[v] = math.Max(c/0.4, mem/0.4) + 2e-6
		}
	}
	io := IOCost{Fixed: 5e-6, PerByte: 1e-10, ChannelBlock: 16, ChannelAlign: 4}
	cal := Calibrate(&d, []Sample{{Graph: g, Measured: &Measurement{Model: "m.onnx", Node: times, Overhead: 5e-6, IO: io}}})
	plain, ok := cal.Classes[ClassDepthwisePlain]
	if !ok || plain.Nodes != 6 || !near(plain.Eff, 0.02, 0.02) {
		t.Errorf("plain depthwise fit %+v (present %v), want 6 nodes at efficiency 0.02", plain, ok)
	}
	if dw := cal.Classes[ClassDepthwise]; dw.Nodes != 6 || !near(dw.Eff, 0.4, 0.02) {
		t.Errorf("blocked depthwise fit %+v, want 6 nodes at efficiency 0.4", dw)
	}
	cal.Apply(&d)
	if d.ChannelAlign != 4 || d.VectorWidth != 16 {
		t.Errorf("Apply: channel alignment %d, vector width %d; want 4, 16", d.ChannelAlign, d.VectorWidth)
	}
}
