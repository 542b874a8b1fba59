package verify

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"
)

// DefaultTolerance is the relative error accepted when optimizations are enabled, for
// float32 and float64 outputs (and float types not named below).
const DefaultTolerance = 1e-4

// Float16Tolerance and BFloat16Tolerance are the relative errors accepted with
// optimizations for float16 and bfloat16 outputs. Optimizations move the points where a
// half-precision graph rounds (fused operators compute in float32 and round once; ONNX
// Runtime's casts around operators without float16 kernels appear and vanish), so chain
// and original differ by rounding alone. Each rounding costs up to half an epsilon of the
// value rounded (float16: epsilon 2⁻¹⁰ ≈ 9.77e-4; bfloat16: 2⁻⁷ ≈ 7.8e-3), and the error is
// measured against the output's largest magnitude (not element by element, so values near 0
// do not inflate it); a handful of such roundings carried through the layers gives a few
// epsilons. Both tolerances are 10.24 epsilons (1e-2 and 8e-2): room for that, while a
// wrong weight or a miswired tensor moves outputs by a good fraction of their scale.
const (
	Float16Tolerance  = 1e-2
	BFloat16Tolerance = 8e-2
)

// DefaultToleranceFor is the relative error accepted with optimizations for an output of
// type dt when none is given: 0 (bit-identical) for types that are not floating-point.
func DefaultToleranceFor(dt graph.DType) float64 {
	switch {
	case !dt.IsFloat():
		return 0
	case dt == graph.Float16:
		return Float16Tolerance
	case dt == graph.BFloat16:
		return BFloat16Tolerance
	}
	return DefaultTolerance
}

// toleranceFor is the relative error accepted for an output of type dt: 0 without
// optimizations or for a type that is not floating-point, else the given tolerance, or the
// type's default.
func toleranceFor(dt graph.DType, optimize bool, given float64) float64 {
	switch {
	case !optimize || !dt.IsFloat():
		return 0
	case given > 0:
		return given
	}
	return DefaultToleranceFor(dt)
}

// computedTolerance is the loosest default tolerance of the floating-point tensors tensor t
// is computed from (its own and every ancestor's, graph inputs and weights included): an
// output is only as precise as the least precise float type on its way, as a float32 output
// that a float16 graph casts up at its end.
func computedTolerance(g *graph.Graph, t int) float64 {
	tol := 0.0
	seen := map[int]bool{t: true}
	stack := []int{t}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if dt := g.Tensors[x].DType; dt.IsFloat() {
			tol = math.Max(tol, DefaultToleranceFor(dt))
		}
		p := g.Tensors[x].Producer
		if p < 0 {
			continue
		}
		for _, in := range g.Nodes[p].Deps() {
			if !seen[in] {
				seen[in] = true
				stack = append(stack, in)
			}
		}
	}
	return tol
}

// compareOutput compares the chain's value of an output with the original's.
// tol is the largest relative error accepted (toleranceFor); 0 asks for identical bits.
func compareOutput(name string, want, got *ort.Tensor, tol float64) OutputReport {
	o := OutputReport{Name: name, BitExact: true, Tolerance: tol, Pass: true}
	switch {
	case want == nil:
		o.Problem, o.Pass, o.BitExact = "the original model did not return it", false, false
		return o
	case got == nil:
		o.Problem, o.Pass, o.BitExact = "no stage returned it", false, false
		return o
	}
	o.DType, o.Shape = want.DType.String(), want.Shape
	o.Elements = want.Elements()
	if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) {
		o.Problem = fmt.Sprintf("the chain gives %s %v, the model %s %v", got.DType, got.Shape, want.DType, want.Shape)
		o.Pass, o.BitExact = false, false
		return o
	}
	if bytes.Equal(got.Data, want.Data) {
		return o
	}
	o.BitExact = false
	size := int64(want.DType.Bits() / 8)
	if size > 0 {
		for i := int64(0); i+size <= int64(len(want.Data)); i += size {
			if !bytes.Equal(want.Data[i:i+size], got.Data[i:i+size]) {
				o.Differing++
			}
		}
	}
	wv, err1 := decodeFloats(want.DType, want.Data)
	gv, err2 := decodeFloats(got.DType, got.Data)
	if err1 != nil || err2 != nil {
		o.Problem, o.Pass = "values differ and cannot be compared numerically", false
		return o
	}
	var maxRef float64
	for _, v := range wv {
		if a := math.Abs(v); a > maxRef && !math.IsInf(a, 0) && !math.IsNaN(a) {
			maxRef = a
		}
	}
	for i := range wv {
		a, b := wv[i], gv[i]
		var d float64
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
		case math.IsNaN(a) || math.IsNaN(b):
			d = math.Inf(1)
		case a == b: // equal infinities, or +0/-0
		default:
			d = math.Abs(a - b)
		}
		o.MaxAbs = math.Max(o.MaxAbs, d)
	}
	if maxRef > 0 {
		o.MaxRel = o.MaxAbs / maxRef
	} else if o.MaxAbs > 0 {
		o.MaxRel = math.Inf(1)
	}
	o.Pass = tol > 0 && want.DType.IsFloat() && o.MaxRel <= tol
	return o
}

// worse keeps the worse of two comparisons of the same output.
func worse(a, b OutputReport) OutputReport {
	out := a
	if b.DType != "" {
		out.DType, out.Shape, out.Elements = b.DType, b.Shape, b.Elements
	}
	out.MaxAbs = math.Max(a.MaxAbs, b.MaxAbs)
	out.MaxRel = math.Max(a.MaxRel, b.MaxRel)
	out.Differing = max(a.Differing, b.Differing)
	out.BitExact = a.BitExact && b.BitExact
	out.Pass = a.Pass && b.Pass
	if out.Problem == "" {
		out.Problem = b.Problem
	}
	return out
}
