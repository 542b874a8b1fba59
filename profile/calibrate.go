package profile

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/stats"
)

// Sample is one model's measured per-node times on a device, for calibration.
type Sample struct {
	Graph    *graph.Graph
	Measured *Measurement
}

// ClassFit is the calibrated roofline of one op class:
// t = max(compute/Eff, memory/MemEff) + Overhead, compute and memory being the roofline
// terms at full efficiency.
type ClassFit struct {
	Eff, MemEff float64
	Overhead    float64 // seconds
	Nodes       int     // nodes the fit used
}

// Calibration holds fitted efficiencies and overheads for one device.
type Calibration struct {
	Classes map[OpClass]ClassFit
	// RunOverhead is the median per-call overhead of the samples, seconds.
	RunOverhead float64
	// IO, when measured (MeasureIO), is the cost of a call's inputs and outputs.
	IO     *IOCost
	Models []string
}

// minFitNodes is the fewest nodes of a class needed to fit it; smaller classes keep their
// defaults.
const minFitNodes = 3

// Efficiencies are kept within [1/maxEff, maxEff]: maxEff stands for "time does not grow
// with this term".
const maxEff = 1e3

// fitOrder fits GEMM-like classes first: their compute efficiency is the prior of classes
// whose nodes never reach the compute roof (a MatMul class seen only as GEMV).
var fitOrder = []OpClass{ClassConv, ClassMatMul, ClassConvInt8, ClassMatMulInt8, ClassNBits, ClassNBitsInt8,
	ClassAttention, ClassDepthwise, ClassDepthwisePlain, ClassPool, ClassNorm,
	ClassElementwise, ClassEpilogue, ClassData, ClassView, ClassControl, ClassOther}

// fitPoint is one node: its roofline terms c and m, its measured time t and the weight w of
// its squared residual in the fit.
type fitPoint struct{ c, m, t, w float64 }

func (x fitPoint) weight() float64 {
	if x.w > 0 {
		return x.w
	}
	return 1
}

// Calibrate fits, for each op class, the compute and memory efficiencies and the per-node
// overhead that best explain the measured node times on d, pooled over the samples:
//
//	t ≈ max(c/Eff, m/MemEff) + Overhead
//
// with c and m the node's roofline terms at full efficiency. For each ratio ρ = Eff/MemEff on
// a logarithmic grid the model is t ≈ a·max(c, ρ·m) + b, a weighted linear least-squares
// problem with a, b ≥ 0 (each node weighted by the inverse of its time, see fitWeighted);
// the ρ with the least squared error wins (Eff = 1/a). When the data cannot tell ratios
// apart (no node of the class near one of the roofs), the tie goes to the ρ whose
// efficiencies are closest to the priors: the conv class's compute efficiency and the median
// memory efficiency of the classes fitted before.
//
// Nodes of a fused kernel carry their share of its time and nodes the runtime removed carry
// 0, so the fit folds fusion in: it predicts the runtime's time per node, not the kernels'.
// Static nodes are not fitted (they cost nothing). Nodes are classed by ClassOn with the
// blocked layout the samples' IOCost measured, so depthwise convolutions the runtime runs
// plain get a fit of their own.
func Calibrate(d *Device, samples []Sample) *Calibration {
	pts := map[OpClass][]fitPoint{}
	cal := &Calibration{Classes: map[OpClass]ClassFit{}}
	var runs []float64
	for _, s := range samples {
		if m := s.Measured; m.IO.PerByte > 0 && cal.IO == nil {
			io := m.IO
			cal.IO = &io
		}
	}
	// Nodes are classed and priced as on the calibrated device: with the runtime's channel
	// block and alignment when the samples measured them (see Apply).
	dev := *d
	if cal.IO != nil {
		cal.IO.applyLayout(&dev)
	}
	for _, s := range samples {
		g, m := s.Graph, s.Measured
		wrate := WeightRate(&dev, newGraphInfo(g).streamed(&dev)).Value
		cal.Models = append(cal.Models, m.Model)
		runs = append(runs, m.RunOverhead())
		for v := range g.Nodes {
			n := &g.Nodes[v]
			c := ClassOn(&dev, g, n)
			if c == ClassStatic || v >= len(m.Node) || math.IsNaN(m.Node[v]) {
				continue
			}
			var comp, mem float64
			if c != ClassView {
				comp, mem = roofline(&dev, g, n, c, PrecisionOf(g, n), nodeWeights(&dev, g, n), wrate)
			}
			pts[c] = append(pts[c], fitPoint{c: comp, m: mem, t: m.Node[v]})
		}
	}
	priorC := 1.0
	var memEffs []float64
	for _, c := range fitOrder {
		p := pts[c]
		if len(p) < minFitNodes {
			continue
		}
		priorM := 1.0
		if len(memEffs) > 0 {
			priorM = stats.Median(memEffs)
		}
		f := fitWeighted(p, c == ClassView, priorC, priorM)
		cal.Classes[c] = f
		if c == ClassConv {
			priorC = f.Eff
		}
		if c != ClassView && f.MemEff < maxEff {
			memEffs = append(memEffs, f.MemEff)
		}
	}
	if len(runs) > 0 {
		cal.RunOverhead = stats.Median(runs)
	}
	return cal
}

// fitLine fits t ≈ a·z + b with a, b ≥ 0 and returns a, b and the squared error.
func fitLine(z []float64, p []fitPoint) (a, b, sse float64) {
	var sz, st, szz, szt, n float64
	for i, x := range p {
		w := x.weight()
		sz += w * z[i]
		st += w * x.t
		szz += w * z[i] * z[i]
		szt += w * z[i] * x.t
		n += w
	}
	mz, mt := sz/n, st/n
	vz := szz/n - mz*mz
	switch {
	case szz == 0:
		a, b = 0, mt
	case vz <= 1e-12*szz/n:
		a, b = szt/szz, 0
	default:
		a = (szt/n - mz*mt) / vz
		b = mt - a*mz
		if a < 0 {
			a, b = 0, mt
		} else if b < 0 {
			a, b = szt/szz, 0
		}
	}
	for i, x := range p {
		r := x.t - a*z[i] - b
		sse += x.weight() * r * r
	}
	return a, b, sse
}

func fitClass(p []fitPoint, viewOnly bool, priorC, priorM float64) ClassFit {
	if viewOnly {
		var s, w float64
		for _, x := range p {
			s += x.weight() * x.t
			w += x.weight()
		}
		return ClassFit{Eff: maxEff, MemEff: maxEff, Overhead: s / w, Nodes: len(p)}
	}
	if ok, computeBound := sameRatio(p, priorC, priorM); ok {
		// The compute and memory terms are proportional across the class (matrix-vector
		// products, elementwise ops): the data cannot say which roof binds. Take the one that
		// binds at the priors, fit its efficiency, and keep the prior for the other.
		z := make([]float64, len(p))
		for i, x := range p {
			if computeBound {
				z[i] = x.c
			} else {
				z[i] = x.m
			}
		}
		a, b, _ := fitLine(z, p)
		f := ClassFit{Eff: priorC, MemEff: priorM, Overhead: math.Max(b, 0), Nodes: len(p)}
		if computeBound {
			f.Eff = effOf(a)
		} else {
			f.MemEff = effOf(a)
		}
		return f
	}
	var total float64
	for _, x := range p {
		total += x.weight() * x.t * x.t
	}
	z := make([]float64, len(p))
	eval := func(rho float64) (a, b, sse float64) {
		for i, x := range p {
			z[i] = math.Max(x.c, rho*x.m)
		}
		return fitLine(z, p)
	}
	// Pass 1: the best squared error on a grid of ρ from 1e-4 to 1e5 (8 steps per decade).
	best := math.Inf(1)
	for k := -32; k <= 40; k++ {
		_, _, sse := eval(math.Pow(10, float64(k)/8))
		best = math.Min(best, sse)
	}
	// Score: the squared error relative to the best, plus a small pull towards the priors
	// (a 5% worse fit buys efficiencies e times closer to them).
	floor := best + 1e-9*total
	score := func(lr float64) (float64, float64, float64) {
		rho := math.Pow(10, lr)
		a, b, sse := eval(rho)
		dist := math.Abs(math.Log(effOf(a)/priorC)) + math.Abs(math.Log(effOf(a*rho)/priorM))
		return (sse+1e-9*total)/floor + priorWeight*dist, a, b
	}
	// Pass 2: the best score on the grid, refined by golden-section search between the
	// neighbouring grid points.
	bestK, bestScore := 0, math.Inf(1)
	for k := -32; k <= 40; k++ {
		if sc, _, _ := score(float64(k) / 8); sc < bestScore {
			bestK, bestScore = k, sc
		}
	}
	lo, hi := float64(bestK-1)/8, float64(bestK+1)/8
	const phi = 0.6180339887498949
	for range 40 {
		m1, m2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
		s1, _, _ := score(m1)
		s2, _, _ := score(m2)
		if s1 <= s2 {
			hi = m2
		} else {
			lo = m1
		}
	}
	lr := (lo + hi) / 2
	if sc, _, _ := score(lr); sc > bestScore {
		lr = float64(bestK) / 8
	}
	_, a, b := score(lr)
	pick := struct{ a, b, rho float64 }{a, b, math.Pow(10, lr)}
	return ClassFit{Eff: effOf(pick.a), MemEff: effOf(pick.a * pick.rho), Overhead: math.Max(pick.b, 0), Nodes: len(p)}
}

// sameRatio reports whether the class's compute and memory terms keep nearly the same ratio
// (the standard deviation of log(c/m) below 0.25), and if so whether the compute term binds
// at the prior efficiencies.
func sameRatio(p []fitPoint, priorC, priorM float64) (same, computeBound bool) {
	var logs []float64
	var sc, sm float64
	for _, x := range p {
		if x.c > 0 && x.m > 0 {
			logs = append(logs, math.Log(x.c/x.m))
		}
		sc += x.c / priorC
		sm += x.m / priorM
	}
	if len(logs) < len(p)/2 || len(logs) < minFitNodes {
		return false, false
	}
	var mean, v float64
	for _, l := range logs {
		mean += l
	}
	mean /= float64(len(logs))
	for _, l := range logs {
		v += (l - mean) * (l - mean)
	}
	return math.Sqrt(v/float64(len(logs))) < 0.25, sc >= sm
}

// priorWeight is the relative squared error traded for a factor e of distance from the priors.
const priorWeight = 0.05

// effOf turns a time-per-roofline-second slope into an efficiency within [1/maxEff, maxEff].
func effOf(a float64) float64 {
	if a <= 1/maxEff {
		return maxEff
	}
	return math.Max(1/a, 1/maxEff)
}

// Apply writes the calibration into d's efficiencies and overheads (source measured), and
// the call costs and blocked layout measured with the samples (MeasureIO) into its run
// overhead, IOBandwidth, LayoutBandwidth, VectorWidth and ChannelAlign. Op-type entries of d
// (from a spec file) still take precedence over the fitted classes.
func (c *Calibration) Apply(d *Device) {
	// The figure maps are copied before they are written: a Device copied by value (a
	// cluster copied to calibrate it for one model, the devices of cpu:2x1) shares them.
	d.Efficiency, d.MemEfficiency, d.Overhead = cloneFigures(d.Efficiency), cloneFigures(d.MemEfficiency), cloneFigures(d.Overhead)
	models := make([]string, 0, len(c.Models))
	for _, m := range c.Models {
		models = append(models, baseName(m))
	}
	sort.Strings(models)
	from := strings.Join(models, ", ")
	if len(models) > 4 {
		from = fmt.Sprintf("%d models", len(models))
	}
	for cl, f := range c.Classes {
		note := fmt.Sprintf("fitted on %d nodes of %s (ONNX Runtime profile)", f.Nodes, from)
		d.Efficiency[string(cl)] = fig(f.Eff, SourceMeasured, note)
		d.MemEfficiency[string(cl)] = fig(f.MemEff, SourceMeasured, note)
		d.Overhead[string(cl)] = fig(f.Overhead, SourceMeasured, note)
	}
	if len(c.Models) > 0 {
		d.RunOverhead = fig(c.RunOverhead, SourceMeasured, "fixed cost of a one-Relu ONNX Runtime call")
	}
	if c.IO != nil && c.IO.PerByte > 0 {
		d.IOBandwidth = fig(1/c.IO.PerByte, SourceMeasured, "one-Relu ONNX Runtime calls on 16 KiB and 4 MiB tensors, per byte in and out")
	}
	if c.IO != nil {
		c.IO.applyLayout(d)
	}
	if c.IO != nil && c.IO.LayoutPerByte > 0 {
		d.LayoutBandwidth = fig(1/c.IO.LayoutPerByte, SourceMeasured, "NCHWc reorder kernels around a 1×1 convolution, ONNX Runtime profile")
	}
}

// applyLayout sets d's vector width and channel alignment to the blocked layout the runtime
// was measured to use (nothing when the probe found none).
func (io *IOCost) applyLayout(d *Device) {
	if io.ChannelBlock > 1 && io.ChannelAlign > 0 {
		d.VectorWidth, d.ChannelAlign = io.ChannelBlock, io.ChannelAlign
	}
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// weightFloor is the shortest node time the weights tell apart: ONNX Runtime's profiler
// reports kernel durations in whole microseconds.
const weightFloor = 1e-6

// reweightSteps is the number of refits in fitWeighted; the weights settle within a few.
const reweightSteps = 4

// fitWeighted fits a class by iteratively reweighted least squares: each node's squared
// residual is weighted by 1/t̂, t̂ its time as predicted by the previous fit (the measured
// time to start with; floored at weightFloor). That is the quasi-likelihood fit for timing
// noise whose variance grows in proportion to the time (a node's time is a sum of many small
// independent delays). Unweighted least squares lets the few long nodes — the large
// convolutions of the largest model — set the fit and leaves the many short nodes, which make
// up the late stages of a CNN and most of a transformer, to an intercept that fits none of
// them; weights from the measured times instead of the predicted ones would favour the nodes
// whose measurement came out short and bias every prediction low.
func fitWeighted(p []fitPoint, viewOnly bool, priorC, priorM float64) ClassFit {
	for i := range p {
		p[i].w = 1 / math.Max(p[i].t, weightFloor)
	}
	f := fitClass(p, viewOnly, priorC, priorM)
	for range reweightSteps {
		for i := range p {
			p[i].w = 1 / math.Max(f.time(p[i]), weightFloor)
		}
		f = fitClass(p, viewOnly, priorC, priorM)
	}
	return f
}

// time is the fitted time of a node with roofline terms x.c and x.m.
func (f ClassFit) time(x fitPoint) float64 {
	return math.Max(x.c/f.Eff, x.m/f.MemEff) + f.Overhead
}

// cloneFigures copies m (an empty map for nil), so that writing the copy leaves m alone.
func cloneFigures(m map[string]Figure) map[string]Figure {
	out := make(map[string]Figure, len(m))
	maps.Copy(out, m)
	return out
}
