package profile

import (
	"math"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// chain builds x → Conv(w: [cout,cin,3,3]) → Relu → Reshape → MatMul(m) → y with cost
// fields set by hand, plus a static Shape node feeding the Reshape.
func chain(t *testing.T, cout int64) *graph.Graph {
	t.Helper()
	b := graph.NewBuilder("chain")
	x := b.AddInput("x")
	w := b.AddInitializer("w")
	m := b.AddInitializer("m")
	s := b.AddInitializer("s")
	b.AddNode("conv", "Conv", "", []string{"x", "w"}, []string{"c"}, nil, nil)
	b.AddNode("relu", "Relu", "", []string{"c"}, []string{"r"}, nil, nil)
	b.AddNode("shape", "Identity", "", []string{"s"}, []string{"s2"}, nil, nil)
	b.AddNode("reshape", "Reshape", "", []string{"r", "s2"}, []string{"f"}, nil, nil)
	b.AddNode("mm", "MatMul", "", []string{"f", "m"}, []string{"y"}, nil, nil)
	b.AddOutput("y")
	for _, id := range []int{x, w, m, s} {
		b.TensorRef(id).DType = graph.Float
	}
	b.TensorRef(w).Shape = graph.ShapeOf(cout, 8, 3, 3)
	for _, name := range []string{"c", "r", "f", "y", "s2"} {
		b.TensorRef(b.Tensor(name)).DType = graph.Float
	}
	b.TensorRef(b.Tensor("y")).Shape = graph.ShapeOf(1, 10)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	set := func(v int, flops, in, par, out int64, static bool) {
		n := &g.Nodes[v]
		n.FLOPs, n.InputBytes, n.ParamBytes, n.OutputBytes, n.Static = flops, in, par, out, static
	}
	set(0, 2e9, 4e6, 1e5, 4e6, false) // compute-heavy
	set(1, 1e6, 4e6, 0, 4e6, false)   // memory-bound
	set(2, 0, 0, 8, 8, true)          // static
	set(3, 0, 4e6, 8, 4e6, false)     // view
	set(4, 2e6, 4e6, 4e6, 40, false)  // matrix-vector: memory-bound
	return g
}

func testDevice() Device {
	d := Device{Name: "d", Kind: GPU}
	d.Peak[FP32] = fig(10e12, SourceSpec, "")
	d.Peak[FP16] = fig(100e12, SourceSpec, "")
	d.Bandwidth = fig(1e12, SourceSpec, "")
	d.Launch = fig(5e-6, SourceSpec, "")
	d.Efficiency = map[string]Figure{"conv": fig(0.5, SourceSpec, ""), "elementwise": fig(0.8, SourceSpec, ""),
		"epilogue": fig(0.8, SourceSpec, ""), "matmul": fig(0.25, SourceSpec, "")}
	ApplyKindDefaults(&d)
	return d
}

func oneDevice(d Device) *Cluster {
	return &Cluster{Devices: []Device{d}, Links: [][]Link{{{Kind: LinkSelf}}}}
}

func TestNodeTimeRoofline(t *testing.T) {
	g := chain(t, 16)
	m := NewCostModel(oneDevice(testDevice()), CostOptions{})
	want := []float64{
		2e9/(10e12*0.5) + 5e-6, // conv: compute-bound at fp32
		8e6/(1e12*0.8) + 5e-6,  // relu (an epilogue): memory-bound
		0,                      // static: free
		5e-6,                   // view: the overhead only
		math.Max(2e6/10e12, (8e6+40)/1e12)/0.25 + 5e-6, // GEMV: memory-bound
	}
	for v, w := range want {
		if got := m.NodeTime(g, v, 0); !near(got, w, 1e-12) {
			t.Errorf("%s: %g s, want %g (%s)", g.Nodes[v].Name, got, w, m.Explain(g, v, 0))
		}
	}
	if c := ClassOf(g, &g.Nodes[1]); c != ClassEpilogue {
		t.Errorf("relu after conv is %s", c)
	}
	// fp16 data use the tensor peak for the matrix classes only.
	g.Tensors[g.Nodes[0].Inputs[0]].DType = graph.Float16
	if got := m.NodeTime(g, 0, 0); !near(got, 2e9/(100e12*0.5)+5e-6, 1e-12) {
		t.Errorf("fp16 conv: %g", got)
	}
}

func TestLanePadding(t *testing.T) {
	d := testDevice()
	d.VectorWidth = 16
	m := NewCostModel(oneDevice(d), CostOptions{})
	for _, c := range []struct {
		cout int64
		pad  float64
	}{{16, 1}, {32, 1}, {4, 4}, {24, 32.0 / 24}} {
		g := chain(t, c.cout)
		if got, want := m.NodeTime(g, 0, 0), 2e9*c.pad/(10e12*0.5)+5e-6; !near(got, want, 1e-12) {
			t.Errorf("cout %d: %g, want %g", c.cout, got, want)
		}
	}
}

func TestEfficiencyPrecedence(t *testing.T) {
	d := testDevice()
	d.Efficiency["Conv"] = fig(0.9, SourceSpec, "op type")
	d.MemEfficiency = map[string]Figure{"conv": fig(0.1, SourceMeasured, "class memory")}
	c, mm := EfficiencyOf(&d, "Conv", ClassConv)
	if c.Value != 0.9 || mm.Value != 0.9 {
		t.Errorf("op type entry should win for both terms: %g/%g", c.Value, mm.Value)
	}
	c, mm = EfficiencyOf(&d, "ConvTranspose", ClassConv)
	if c.Value != 0.5 || mm.Value != 0.1 {
		t.Errorf("class entries: %g/%g", c.Value, mm.Value)
	}
	c, _ = EfficiencyOf(&d, "Softmax", ClassNorm)
	if c.Source != SourceDefault || c.Value != defaultEff(GPU, ClassNorm) {
		t.Errorf("default: %+v", c)
	}
}

func TestMeasuredOverride(t *testing.T) {
	g := chain(t, 16)
	meas := []float64{1e-3, math.NaN(), 0, 2e-6, 3e-4}
	m := NewCostModel(oneDevice(testDevice()), CostOptions{Measured: [][]float64{meas}})
	if m.NodeTime(g, 0, 0) != 1e-3 || !m.Explain(g, 0, 0).Measured {
		t.Error("measured time not used")
	}
	if got := m.NodeTime(g, 1, 0); !near(got, 8e6/(1e12*0.8)+5e-6, 1e-12) {
		t.Errorf("NaN should fall back to the roofline: %g", got)
	}
}

func link(bw, lat float64) Link {
	return Link{Kind: LinkCustom, Bandwidth: fig(bw, SourceSpec, ""), Latency: fig(lat, SourceSpec, "")}
}

// Three devices: 0→1 fast, 1→2 slow, 0→2 only through 1 (Moirai's multi-hop rule: the
// bottleneck bandwidth, latencies added); nothing reaches 0.
func TestTransferRoutes(t *testing.T) {
	none := Link{Kind: LinkNone}
	self := Link{Kind: LinkSelf}
	c := &Cluster{
		Devices: []Device{testDevice(), testDevice(), testDevice()},
		Links: [][]Link{
			{self, link(10e9, 1e-6), none},
			{none, self, link(5e9, 2e-6)},
			{none, none, self},
		},
	}
	m := NewCostModel(c, CostOptions{})
	for _, e := range []struct {
		from, to int
		want     float64
	}{
		{0, 0, 0}, {0, 1, 1e8/10e9 + 1e-6}, {1, 2, 1e8/5e9 + 2e-6}, {0, 2, 1e8/5e9 + 3e-6}, {2, 0, math.Inf(1)},
	} {
		if got := m.TransferTime(1e8, e.from, e.to); !(got == e.want || near(got, e.want, 1e-12)) {
			t.Errorf("%d→%d: %g, want %g", e.from, e.to, got, e.want)
		}
	}
	if m.TransferTime(0, 0, 1) != 0 {
		t.Error("an empty transfer costs nothing")
	}
	tab := m.Costs(chain(t, 16))
	if tab.Transfer(1e8, 0, 2) != m.TransferTime(1e8, 0, 2) || tab.Bandwidth[2][0] != 0 || !math.IsInf(tab.Bandwidth[1][1], 1) {
		t.Error("cost table routes differ from the model's")
	}
	tab.Bandwidth[0][1] = 1
	if m.TransferTime(1e8, 0, 1) == 1e8+1e-6 {
		t.Error("the cost table shares its arrays with the model")
	}
}

func TestCostTable(t *testing.T) {
	g := chain(t, 16)
	d1 := testDevice()
	d2 := testDevice()
	d2.Name = "half"
	d2.Peak[FP32].Value /= 2
	d2.MemoryCap = fig(1<<30, SourceSpec, "")
	c := &Cluster{Devices: []Device{d1, d2}, Links: [][]Link{{{Kind: LinkSelf}, link(1e9, 0)}, {link(1e9, 0), {Kind: LinkSelf}}}}
	m := NewCostModel(c, CostOptions{})
	tab := m.Costs(g)
	if len(tab.Node) != 2 || len(tab.Node[1]) != len(g.Nodes) || tab.Devices[1] != "half" {
		t.Fatalf("table shape %d×%d", len(tab.Node), len(tab.Node[0]))
	}
	for d := range 2 {
		for v := range g.Nodes {
			if tab.Node[d][v] != m.NodeTime(g, v, d) {
				t.Errorf("Node[%d][%d] differs from NodeTime", d, v)
			}
		}
	}
	if tab.Node[1][0] <= tab.Node[0][0] || tab.Node[1][1] != tab.Node[0][1] {
		t.Error("halving the peak should slow the conv only")
	}
	if !math.IsInf(tab.Memory[0], 1) && tab.Memory[0] != 0 || tab.Memory[1] != 1<<30 {
		t.Errorf("memory %v", tab.Memory)
	}
	ct := m.ClassTimes(g, 0)
	if ct[ClassConv] != tab.Node[0][0] || ct[ClassStatic] != 0 {
		t.Errorf("class times %v", ct)
	}
}

func TestKernelTime(t *testing.T) {
	g := chain(t, 16)
	m := NewCostModel(oneDevice(testDevice()), CostOptions{})
	// Conv+Relu as one kernel: the conv's class, the group's bytes, one overhead.
	k := graph.Node{FLOPs: g.Nodes[0].FLOPs + g.Nodes[1].FLOPs, InputBytes: 4e6, ParamBytes: 1e5, OutputBytes: 4e6}
	want := float64(k.FLOPs)/(10e12*0.5) + 5e-6
	if got := m.KernelTime(g, []int{0, 1}, &k, 0); !near(got, want, 1e-12) {
		t.Errorf("fused conv+relu %g, want %g", got, want)
	}
	if got := m.KernelTime(g, []int{2}, &graph.Node{}, 0); got != 0 {
		t.Errorf("static-only group %g", got)
	}
}

// stageGraph: x [1,16,32,32] → conv → relu → pool → y, with tensor bytes set.
func stageGraph(t *testing.T) *graph.Graph {
	t.Helper()
	b := graph.NewBuilder("stage")
	b.AddInput("x")
	w := b.AddInitializer("w")
	b.TensorRef(w).Shape = graph.ShapeOf(16, 16, 3, 3)
	b.TensorRef(w).Bytes = 16 * 16 * 9 * 4
	b.AddNode("conv", "Conv", "", []string{"x", "w"}, []string{"c"}, nil, nil)
	b.AddNode("relu", "Relu", "", []string{"c"}, []string{"r"}, nil, nil)
	b.AddNode("pool", "MaxPool", "", []string{"r"}, []string{"y"}, nil, nil)
	b.AddOutput("y")
	for _, name := range []string{"x", "c", "r"} {
		tn := b.TensorRef(b.Tensor(name))
		tn.DType, tn.Shape, tn.Bytes = graph.Float, graph.ShapeOf(1, 16, 32, 32), 65536
	}
	tn := b.TensorRef(b.Tensor("y"))
	tn.DType, tn.Shape, tn.Bytes = graph.Float, graph.ShapeOf(1, 16, 16, 16), 16384
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	g.Nodes[0].FLOPs, g.Nodes[0].InputBytes, g.Nodes[0].ParamBytes, g.Nodes[0].OutputBytes = 2*16*16*9*1024, 65536, 9216, 65536
	g.Nodes[1].FLOPs, g.Nodes[1].InputBytes, g.Nodes[1].OutputBytes = 16384, 65536, 65536
	g.Nodes[2].FLOPs, g.Nodes[2].InputBytes, g.Nodes[2].OutputBytes = 16384*4, 65536, 16384
	return g
}

func TestStageTime(t *testing.T) {
	g := stageGraph(t)
	d := testDevice()
	d.Kind = CPU
	d.Efficiency["elementwise"] = fig(0.5, SourceSpec, "")
	d.Efficiency["epilogue"] = fig(100, SourceSpec, "") // fused: nearly free
	d.RunOverhead = fig(10e-6, SourceSpec, "")
	d.IOBandwidth = fig(1e9, SourceSpec, "")
	d.LayoutBandwidth = fig(2e9, SourceSpec, "")
	m := NewCostModel(oneDevice(d), CostOptions{})
	node := func(v int) float64 { return m.NodeTime(g, v, 0) }
	alone := 131072/(1e12*0.5) + 5e-6 // relu priced as elementwise

	// The whole graph as one stage: x in, y out, no conversion the whole graph does not make.
	want := 10e-6 + node(0) + node(1) + node(2) + (65536+16384)/1e9
	if got := m.StageTime(g, []int{0, 1, 2}, 0); !near(got, want, 1e-12) {
		t.Errorf("whole: %g, want %g", got, want)
	}
	// Cut between conv and relu: c crosses the boundary and leaves the convolution's blocked
	// layout in the first stage; in the second the relu, no longer fused, runs alone in the
	// plain layout and the pool must convert its output r.
	s1 := 10e-6 + node(0) + (65536+65536)/1e9 + 65536/2e9
	s2 := 10e-6 + alone + node(2) + (65536+16384)/1e9 + 65536/2e9
	if got := m.StageTime(g, []int{0}, 0); !near(got, s1, 1e-12) {
		t.Errorf("stage 1: %g, want %g", got, s1)
	}
	if got := m.StageTime(g, []int{1, 2}, 0); !near(got, s2, 1e-12) {
		t.Errorf("stage 2: %g, want %g", got, s2)
	}
	if alone <= node(1) {
		t.Error("a broken fusion should cost more than the fused node")
	}
	tab := m.Costs(g)
	if got := tab.Stage(0, []int{0, 1, 2}, 65536+16384); !near(got, 10e-6+node(0)+node(1)+node(2)+(65536+16384)/1e9, 1e-12) {
		t.Errorf("table stage %g", got)
	}
}

// CutTimes prices each end of a cut as StageTime does: a cut between the fused relu and the
// pool (both blocked) costs either stage r's bytes through the binding and one conversion of
// r; the stages' times are their nodes, the call, the graph's input or output, and that.
func TestCutTimes(t *testing.T) {
	g := stageGraph(t)
	d := testDevice()
	d.Kind = CPU
	d.RunOverhead = fig(10e-6, SourceSpec, "")
	d.IOBandwidth = fig(1e9, SourceSpec, "")
	d.LayoutBandwidth = fig(2e9, SourceSpec, "")
	m := NewCostModel(oneDevice(d), CostOptions{})
	node := func(v int) float64 { return m.NodeTime(g, v, 0) }
	cut := m.CutTimes(g, 0)
	r, _ := g.TensorByName("r")
	y, _ := g.TensorByName("y")
	if want := 65536/1e9 + 65536/2e9; !near(cut[r], want, 1e-12) {
		t.Errorf("cut r: %g, want %g", cut[r], want)
	}
	if want := 16384 / 1e9; !near(cut[y], want, 1e-12) { // the whole graph converts y out anyway
		t.Errorf("cut y: %g, want %g", cut[y], want)
	}
	s1 := 10e-6 + node(0) + node(1) + m.IOTime(65536, 0) + cut[r]
	s2 := 10e-6 + node(2) + m.IOTime(16384, 0) + cut[r]
	if got := m.StageTime(g, []int{0, 1}, 0); !near(got, s1, 1e-12) {
		t.Errorf("stage 1: %g, want %g", got, s1)
	}
	if got := m.StageTime(g, []int{2}, 0); !near(got, s2, 1e-12) {
		t.Errorf("stage 2: %g, want %g", got, s2)
	}
}

// A squeeze-and-excitation block: x → Conv → Sigmoid (one value per channel) scales x by
// Mul. The Sigmoid is the 1×1 convolution's epilogue; the Mul reads the Sigmoid's output but
// writes a tensor as large as x, which no kernel of the convolution produces: it is an
// elementwise op of its own.
func TestEpilogueSameSize(t *testing.T) {
	b := graph.NewBuilder("se")
	x := b.AddInput("x")
	w := b.AddInitializer("w")
	b.AddNode("conv", "Conv", "", []string{"x", "w"}, []string{"c"}, nil, nil)
	b.AddNode("sig", "Sigmoid", "", []string{"c"}, []string{"s"}, nil, nil)
	b.AddNode("scale", "Mul", "", []string{"x", "s"}, []string{"y"}, nil, nil)
	b.AddOutput("y")
	b.TensorRef(x).Shape = graph.ShapeOf(1, 16, 8, 8)
	b.TensorRef(w).Shape = graph.ShapeOf(16, 16, 8, 8)
	b.TensorRef(b.Tensor("c")).Shape = graph.ShapeOf(1, 16, 1, 1)
	b.TensorRef(b.Tensor("s")).Shape = graph.ShapeOf(1, 16, 1, 1)
	b.TensorRef(b.Tensor("y")).Shape = graph.ShapeOf(1, 16, 8, 8)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range []OpClass{ClassConv, ClassEpilogue, ClassElementwise} {
		if c := ClassOf(g, &g.Nodes[v]); c != want {
			t.Errorf("%s: class %s, want %s", g.Nodes[v].Name, c, want)
		}
	}
}
