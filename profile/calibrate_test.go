package profile

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// synthetic builds n Conv nodes (16 output channels) and n standalone Add nodes with random
// work, and the times a device with known efficiencies would take on them.
func synthetic(t *testing.T, d *Device, n int, convEff, convMem, convOver, addMem, addOver float64) (*graph.Graph, []float64) {
	t.Helper()
	b := graph.NewBuilder("synthetic")
	b.AddInput("x")
	for i := range n {
		w := b.AddInitializer(fmt.Sprintf("w%d", i))
		b.TensorRef(w).Shape = graph.ShapeOf(16, 16, 3, 3)
		b.AddNode(fmt.Sprintf("conv%d", i), "Conv", "", []string{"x", fmt.Sprintf("w%d", i)}, []string{fmt.Sprintf("c%d", i)}, nil, nil)
		b.AddNode(fmt.Sprintf("add%d", i), "Add", "", []string{"x", "x"}, []string{fmt.Sprintf("a%d", i)}, nil, nil)
		b.AddOutput(fmt.Sprintf("c%d", i))
		b.AddOutput(fmt.Sprintf("a%d", i))
	}
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	times := make([]float64, len(g.Nodes))
	for v := range g.Nodes {
		nd := &g.Nodes[v]
		// Work spanning both sides of the ridge point.
		nd.FLOPs = int64(math.Exp(rng.Float64()*6) * 1e6)
		nd.InputBytes = int64(math.Exp(rng.Float64()*6) * 1e5)
		nd.OutputBytes = nd.InputBytes / 2
		c, m := roofline(d, g, nd, ClassOf(g, nd), FP32, nodeWeights(d, g, nd), 0)
		if nd.OpType == "Conv" {
			times[v] = math.Max(c/convEff, m/convMem) + convOver
		} else {
			times[v] = m/addMem + addOver
		}
	}
	return g, times
}

func TestCalibrateRecoversEfficiencies(t *testing.T) {
	d := testDevice()
	g, times := synthetic(t, &d, 60, 0.4, 0.9, 7e-6, 0.6, 2e-6)
	cal := Calibrate(&d, []Sample{{Graph: g, Measured: &Measurement{Model: "/x/synthetic.onnx", Node: times, Overhead: 50e-6,
		IO: IOCost{Fixed: 50e-6, PerByte: 2e-10, LayoutPerByte: 1e-10}}}})
	conv, ok := cal.Classes[ClassConv]
	if !ok || !near(conv.Eff, 0.4, 0.01) || !near(conv.MemEff, 0.9, 0.01) || !near(conv.Overhead, 7e-6, 0.01) || conv.Nodes != 60 {
		t.Errorf("conv fit %+v, want eff 0.4, mem 0.9, overhead 7 µs", conv)
	}
	add := cal.Classes[ClassElementwise]
	if !near(add.MemEff, 0.6, 0.01) || !near(add.Overhead, 2e-6, 0.01) {
		t.Errorf("add fit %+v, want mem 0.6, overhead 2 µs", add)
	}
	if cal.RunOverhead != 50e-6 {
		t.Errorf("run overhead %g", cal.RunOverhead)
	}
	orig := d
	orig.Efficiency = map[string]Figure{"conv": {Value: 0.5}}
	d.Efficiency = orig.Efficiency // d is a copy of orig sharing its maps, as devices copied by value do
	cal.Apply(&d)
	if orig.Efficiency["conv"].Value != 0.5 || len(orig.Efficiency) != 1 {
		t.Errorf("Apply wrote into the map the calibrated device shared with its original: %+v", orig.Efficiency)
	}
	if d.Efficiency["conv"].Source != SourceMeasured || d.RunOverhead.Value != 50e-6 || d.Overhead["elementwise"].Source != SourceMeasured {
		t.Errorf("Apply: %+v %+v", d.Efficiency["conv"], d.RunOverhead)
	}
	if !near(d.IOBandwidth.Value, 5e9, 1e-9) || !near(d.LayoutBandwidth.Value, 1e10, 1e-9) || d.IOBandwidth.Source != SourceMeasured {
		t.Errorf("Apply: io %+v layout %+v", d.IOBandwidth, d.LayoutBandwidth)
	}
	// The calibrated model reproduces the times.
	m := NewCostModel(oneDevice(d), CostOptions{})
	for v := range g.Nodes {
		if got := m.NodeTime(g, v, 0); !near(got, times[v], 0.03) {
			t.Errorf("%s: predicted %g, measured %g", g.Nodes[v].Name, got, times[v])
		}
	}
}

// With compute and memory terms in a fixed ratio (matrix-vector products) the data cannot
// choose the binding roof; the fit keeps the prior for the term that does not bind.
func TestCalibrateProportionalTerms(t *testing.T) {
	p := make([]fitPoint, 10)
	for i := range p {
		c := float64(i+1) * 1e-6
		p[i] = fitPoint{c: c, m: 12 * c, t: 12*c/1.1 + 3e-6}
	}
	f := fitClass(p, false, 0.9, 1)
	if f.Eff != 0.9 || !near(f.MemEff, 1.1, 1e-6) || !near(f.Overhead, 3e-6, 1e-6) {
		t.Errorf("fit %+v, want compute 0.9 (prior), memory 1.1, overhead 3 µs", f)
	}
}

func TestCalibrateSmallClassesKeepDefaults(t *testing.T) {
	d := testDevice()
	g, times := synthetic(t, &d, 2, 0.4, 0.9, 7e-6, 0.6, 2e-6)
	cal := Calibrate(&d, []Sample{{Graph: g, Measured: &Measurement{Node: times}}})
	if len(cal.Classes) != 0 {
		t.Errorf("fitted classes from 2 nodes each: %v", cal.Classes)
	}
}

// Timing noise grows with a node's length. With ±20% multiplicative noise on nodes from a
// microsecond to a millisecond, unweighted least squares lets the long nodes' noise set the
// per-node overhead; the reweighted fit (fitWeighted) recovers it, and the efficiency.
func TestCalibrateNoiseProportionalToTime(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var p []fitPoint
	for range 200 {
		m := math.Exp(rng.Float64()*8) * 0.5e-6 // 0.5 µs – 1.5 ms at full bandwidth
		p = append(p, fitPoint{c: m / 10, m: m, t: (m/0.6 + 2e-6) * (1 + 0.4*(rng.Float64()-0.5))})
	}
	f := fitWeighted(p, false, 1, 1)
	if !near(f.Overhead, 2e-6, 0.2) || !near(f.MemEff, 0.6, 0.05) {
		t.Errorf("fit %+v, want memory efficiency 0.6, overhead 2 µs", f)
	}
}

// TestFitOrderCoversEveryClass: every class a node can have is fitted from measurements
// (static nodes are folded away and cost nothing); a class added to Classes without a place
// in fitOrder would keep its nominal figures under measured costs.
func TestFitOrderCoversEveryClass(t *testing.T) {
	for _, c := range Classes() {
		if c != ClassStatic && !slices.Contains(fitOrder, c) {
			t.Errorf("class %s is not in fitOrder", c)
		}
	}
}
