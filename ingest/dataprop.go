package ingest

import (
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
)

// Data propagation: the element-moving ops (Transpose, Slice, Gather, Concat, Split, Tile…)
// carry a small tensor's value through at any rank, as onnx's data_prop and ONNX Runtime's
// symbolic shape inference do, so shape computations written with 2-D tensors (PyTorch's
// F.pad export: Concat → Reshape[-1,2] → Slice(step −1) → Transpose → Reshape → Cast) fold.
// Each op computes, for every output element, the flat index of the input element it
// copies; takeValue then moves the integer or float value, symbolic elements included.

// hasValue reports whether the value of x is known element by element (possibly with
// symbolic elements).
func (t *tinfo) hasValue() bool { return t != nil && (t.ival != nil || t.fval != nil) }

// valueDims returns the dims of x when its shape is fully known, small enough to fold, and
// its value is known and consistent with that shape.
func valueDims(x *tinfo) ([]int64, bool) {
	if !x.hasValue() || !x.shape.Known() {
		return nil, false
	}
	n, err := x.shape.NumElements()
	if err != nil || n > maxFoldElements {
		return nil, false
	}
	if (x.ival != nil && int64(len(x.ival)) != n) || (x.fval != nil && int64(len(x.fval)) != n) {
		return nil, false
	}
	return x.shape.Dims(), true
}

// foldSize returns the number of elements of a known shape small enough to fold.
func foldSize(s graph.Shape) (int64, bool) {
	if !s.Known() {
		return 0, false
	}
	n, err := s.NumElements()
	return n, err == nil && n <= maxFoldElements
}

// rowStrides returns the row-major strides of dims.
func rowStrides(dims []int64) []int64 {
	st := make([]int64, len(dims))
	acc := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= dims[i]
	}
	return st
}

// forEachIndex calls f with every coordinate of dims in row-major order (coord is reused).
func forEachIndex(dims []int64, f func(flat int64, coord []int64)) {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	coord := make([]int64, len(dims))
	for flat := int64(0); flat < n; flat++ {
		f(flat, coord)
		for k := len(dims) - 1; k >= 0; k-- {
			coord[k]++
			if coord[k] < dims[k] {
				break
			}
			coord[k] = 0
		}
	}
}

// takeValue sets t's value to x's elements at the flat indices idx.
func takeValue(t *tinfo, x *tinfo, idx []int64) {
	if t == nil {
		return
	}
	if x.ival != nil {
		v := make([]graph.Dim, len(idx))
		for i, j := range idx {
			v[i] = x.ival[j]
		}
		t.ival = v
	}
	if x.fval != nil {
		v := make([]float64, len(idx))
		for i, j := range idx {
			v[i] = x.fval[j]
		}
		t.fval = v
	}
}

// gatherIndex maps each element of out (shape outDims) to a flat index of the input through
// src, which turns an output coordinate into an input coordinate in place.
func gatherIndex(outDims, inDims []int64, src func(coord []int64)) []int64 {
	st := rowStrides(inDims)
	n := int64(1)
	for _, d := range outDims {
		n *= d
	}
	idx := make([]int64, n)
	// The buffer holds the output coordinate (which may be longer than the input's) and
	// src leaves the input coordinate in its first len(inDims) entries.
	buf := make([]int64, max(len(inDims), len(outDims)))
	forEachIndex(outDims, func(flat int64, coord []int64) {
		copy(buf, coord)
		src(buf)
		var j int64
		for k := range inDims {
			j += buf[k] * st[k]
		}
		idx[flat] = j
	})
	return idx
}

// concatValues joins the values of xs along axis (their shapes known and agreeing off the
// axis), or returns false.
func concatValues(t *tinfo, xs []*tinfo, axis int, out graph.Shape) bool {
	if _, ok := foldSize(out); !ok || t == nil {
		return false
	}
	anyInt, anyFloat := false, false
	for _, x := range xs {
		if _, ok := valueDims(x); !ok || len(x.shape) != len(out) {
			return false
		}
		for i, d := range x.shape {
			if i != axis && d.Value != out[i].Value {
				return false
			}
		}
		anyInt = anyInt || x.ival != nil
		anyFloat = anyFloat || x.fval != nil
	}
	if anyInt && anyFloat {
		return false
	}
	od := out.Dims()
	outer := int64(1)
	for _, d := range od[:axis] {
		outer *= d
	}
	inner := int64(1)
	for _, d := range od[axis+1:] {
		inner *= d
	}
	var iv []graph.Dim
	var fv []float64
	for o := int64(0); o < outer; o++ {
		for _, x := range xs {
			blk := x.shape[axis].Value * inner
			if anyInt {
				iv = append(iv, x.ival[o*blk:(o+1)*blk]...)
			} else {
				fv = append(fv, x.fval[o*blk:(o+1)*blk]...)
			}
		}
	}
	if anyInt {
		if iv == nil {
			iv = []graph.Dim{}
		}
		t.ival = iv
	} else {
		if fv == nil {
			fv = []float64{}
		}
		t.fval = fv
	}
	return true
}

// reduceValues folds ReduceSum, ReduceProd, ReduceMin and ReduceMax over the selected axes
// of a small integer value, symbolic elements included (see symexpr.go).
func reduceValues(op string, x *tinfo, sel map[int]bool) []graph.Dim {
	dims, ok := valueDims(x)
	if !ok || x.ival == nil {
		return nil
	}
	outDims := make([]int64, len(dims))
	for i, d := range dims {
		outDims[i] = d
		if sel[i] {
			outDims[i] = 1
		}
	}
	ost := rowStrides(outDims)
	n := int64(1)
	for _, d := range outDims {
		n *= d
	}
	// Each output element gathers its terms.
	terms := make([][]graph.Dim, n)
	forEachIndex(dims, func(flat int64, coord []int64) {
		var j int64
		for k, c := range coord {
			if !sel[k] {
				j += c * ost[k]
			}
		}
		terms[j] = append(terms[j], x.ival[flat])
	})
	out := make([]graph.Dim, n)
	for i, ts := range terms {
		var ok bool
		if out[i], ok = reduceTerms(op, ts); !ok {
			return nil
		}
	}
	return out
}

// reduceTerms reduces one group of elements; ok is false when the reduction has no value
// (Min or Max of nothing, an op it does not fold).
func reduceTerms(op string, ts []graph.Dim) (graph.Dim, bool) {
	var neutral int64
	switch op {
	case optype.ReduceSum:
		neutral = 0
	case optype.ReduceProd:
		neutral = 1
	case optype.ReduceMin, optype.ReduceMax:
		if len(ts) == 0 {
			return graph.Dim{}, false
		}
		acc := ts[0]
		for _, e := range ts[1:] {
			if !vKnown(acc) || !vKnown(e) {
				return vUnknown(""), true
			}
			if (e.Value > acc.Value) == (op == optype.ReduceMax) {
				acc = e
			}
		}
		return acc, true
	default:
		return graph.Dim{}, false
	}
	// Symbolic terms fold as expressions (the product of a shape's B and S is B*S).
	f := intArith[optype.Add]
	if op == optype.ReduceProd {
		f = intArith[optype.Mul]
	}
	acc := vInt(neutral)
	for _, e := range ts {
		acc = f(acc, e)
	}
	return acc, true
}
