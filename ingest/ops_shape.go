package ingest

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// axesArg reads an axes list given as an attribute before opset `since` and as input idx
// from it on. present is false when no axes are given; known false when the input's value is
// not known before run time.
func axesArg(c *nctx, attr string, idx int, since int64) (axes []int64, present, known bool) {
	if c.opset < since {
		if a := c.n.Attr(attr); a != nil {
			return a.Ints, true, true
		}
		return nil, false, true
	}
	in := c.in(idx)
	if in == nil {
		return nil, false, true
	}
	v, ok := in.ints()
	return v, true, ok
}

func flatten(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil {
		c.set(0, x.dt, graph.Shape{unknownDim, unknownDim})
		return nil
	}
	axis := c.n.AttrInt("axis", 1)
	if axis < 0 {
		axis += int64(len(x.shape))
	}
	if axis < 0 || axis > int64(len(x.shape)) {
		return c.errorf("axis %d out of range for rank %d", axis, len(x.shape))
	}
	t := c.set(0, x.dt, graph.Shape{product(x.shape[:axis]), product(x.shape[axis:])})
	if t != nil {
		t.ival, t.fval = x.ival, x.fval // row-major order is unchanged
	}
	return nil
}

func reshape(c *nctx) error {
	x, sh := c.in(0), c.in(1)
	if x == nil {
		return nil
	}
	var target []graph.Dim // value encoding
	if c.opset < 5 {
		target = dimsOf(c.n.AttrInts("shape"))
	} else if sh != nil && sh.ival != nil {
		target = sh.ival
	}
	if target == nil {
		var s graph.Shape
		if sh != nil && sh.shape.Known() && len(sh.shape) == 1 {
			s = unknownOfRank(sh.shape[0].Value)
		}
		c.set(0, x.dt, s)
		return nil
	}
	out := reshapeTarget(x.shape, target, c.n.AttrInt("allowzero", 0) != 0)
	if err := checkReshape(x.shape, target, out); err != nil {
		return c.errorf("%v", err)
	}
	t := c.set(0, x.dt, out)
	if t != nil && x.ival != nil {
		t.ival = x.ival
	}
	if t != nil && x.fval != nil {
		t.fval = x.fval
	}
	return nil
}

// checkReshape reports a Reshape whose known target cannot hold the input's known elements.
func checkReshape(in graph.Shape, target []graph.Dim, out graph.Shape) error {
	n, ok := foldSize(in)
	if !ok {
		if !in.Known() {
			return nil
		}
		var err error
		if n, err = in.NumElements(); err != nil {
			return nil
		}
	}
	prod, infer := int64(1), false
	for i, d := range target {
		switch {
		case !vKnown(d):
			return nil
		case d.Value == -1:
			infer = true
		case !out[i].Known():
			return nil
		default:
			prod *= out[i].Value
		}
	}
	if infer && (prod == 0 && n != 0 || prod != 0 && n%prod != 0) || !infer && prod != n {
		return errorString(fmt.Sprintf("cannot reshape %v (%d elements) to %v", in, n, dimsOfVals(target)))
	}
	return nil
}

func transpose(c *nctx) error {
	x := c.shapedInput(0, math.MaxInt)
	if x == nil {
		return nil
	}
	r := len(x.shape)
	perm := c.n.AttrInts("perm")
	if perm == nil {
		perm = make([]int64, r)
		for i := range perm {
			perm[i] = int64(r - 1 - i)
		}
	}
	if len(perm) != r {
		return c.errorf("perm %v does not match rank %d", perm, r)
	}
	out := make(graph.Shape, r)
	axes := make([]int, r)
	seen := make([]bool, r)
	for i, p := range perm {
		a, err := normAxis(p, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		if seen[a] {
			return c.errorf("perm %v repeats axis %d", perm, a)
		}
		seen[a] = true
		out[i] = x.shape[a]
		axes[i] = a
	}
	t := c.set(0, x.dt, out)
	if dims, ok := valueDims(x); ok && t != nil {
		// Output coordinate i is input coordinate perm[i].
		tmp := make([]int64, r)
		takeValue(t, x, gatherIndex(out.Dims(), dims, func(coord []int64) {
			copy(tmp, coord)
			for i, a := range axes {
				coord[a] = tmp[i]
			}
		}))
	}
	return nil
}

func concat(c *nctx) error {
	var ins []*tinfo
	for i := 0; i < c.nin(); i++ {
		x := c.in(i)
		if x == nil {
			return nil
		}
		ins = append(ins, x)
	}
	if len(ins) == 0 {
		return nil
	}
	dt := ins[0].dt
	rank := -1
	for _, x := range ins {
		if x.shape != nil {
			rank = len(x.shape)
		}
	}
	if rank < 0 {
		c.set(0, dt, nil)
		return nil
	}
	out, axis, err := concatShape(c, ins, rank)
	if err != nil {
		return err
	}
	t := c.set(0, dt, out)
	concatValues(t, ins, axis, out)
	return nil
}

// concatShape is the shape of ins (rank rank, some shapes unknown) concatenated along the
// node's axis attribute, and that axis: the axis's sizes summed, the other dimensions from
// any input that knows them (inputs that disagree on one are an error).
func concatShape(c *nctx, ins []*tinfo, rank int) (graph.Shape, int, error) {
	axis, err := normAxis(c.n.AttrInt("axis", 0), rank)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	out := make(graph.Shape, rank)
	for i := range out {
		out[i] = unknownDim
	}
	sum := graph.Static(0)
	for _, x := range ins {
		if x.shape == nil {
			sum = unknownDim
			continue
		}
		if len(x.shape) != rank {
			return nil, 0, c.errorf("inputs of different ranks")
		}
		sum = dimAdd(sum, x.shape[axis])
		for i, d := range x.shape {
			if i != axis && d.Known() && out[i].Known() && d.Value != out[i].Value {
				return nil, 0, c.errorf("inputs differ in dimension %d (%d and %d) off the concatenation axis", i, out[i].Value, d.Value)
			}
			if i != axis && (d.Known() || !out[i].Known() && out[i].Param == "") {
				out[i] = d
			}
		}
	}
	out[axis] = sum
	return out, axis, nil
}

func split(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	nout := c.nout()
	if x.shape == nil {
		for i := 0; i < nout; i++ {
			c.set(i, x.dt, nil)
		}
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", 0), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	var sizes []int64
	known := true
	if c.opset < 13 {
		sizes = c.n.AttrInts("split")
	} else if s := c.in(1); s != nil {
		sizes, known = s.ints()
	}
	d := x.shape[axis]
	if sizes == nil && known {
		if !d.Known() {
			known = false
		} else {
			parts := int64(nout)
			if no := c.n.AttrInt("num_outputs", 0); no > 0 && no < parts {
				parts = no
			}
			chunk := ceilDiv(d.Value, parts)
			for i := int64(0); i < parts; i++ {
				sz := chunk
				if rem := d.Value - i*chunk; rem < chunk {
					sz = max(rem, 0)
				}
				sizes = append(sizes, sz)
			}
		}
	} else if sizes != nil && known {
		var sum int64
		for _, sz := range sizes {
			if sz < 0 || sz > math.MaxInt64-sum {
				return c.errorf("split sizes %v are not sizes", sizes)
			}
			sum += sz
		}
		if d.Known() && sum != d.Value {
			return c.errorf("split sizes %v add up to %d, not the axis size %d", sizes, sum, d.Value)
		}
	}
	dims, hasVal := valueDims(x)
	var offset int64
	for i := 0; i < nout; i++ {
		s := x.shape.Clone()
		if known && i < len(sizes) {
			s[axis] = graph.Static(sizes[i])
		} else {
			s[axis] = unknownDim
		}
		t := c.set(i, x.dt, s)
		if hasVal && known && i < len(sizes) && sizes[i] >= 0 && offset+sizes[i] <= dims[axis] {
			off := offset
			takeValue(t, x, gatherIndex(s.Dims(), dims, func(coord []int64) { coord[axis] += off }))
		}
		if known && i < len(sizes) {
			offset += sizes[i]
		}
	}
	return nil
}

// sliceLen computes the number of elements a Slice takes along one axis of size dim.
func sliceLen(dim, start, end, step int64) int64 {
	clamp := func(v, lo, hi int64) int64 { return min(max(v, lo), hi) }
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	if step > 0 {
		start = clamp(start, 0, dim)
		end = clamp(end, 0, dim)
		if end <= start {
			return 0
		}
		return ceilDiv(end-start, step)
	}
	start = clamp(start, 0, dim-1)
	end = clamp(end, -1, dim-1)
	if start <= end {
		return 0
	}
	return ceilDiv(start-end, -step)
}

// symSliceLen is the length of a step-1 slice [start, end) of a symbolic axis of size d, as
// ONNX Runtime's symbolic shape inference writes it: a negative bound counts from the end,
// an end past INT32_MAX is the end, and the slice is taken to lie inside the axis (x[:, 1:]
// of [B, S] is [B, S - 1]). A known non-negative end (x[:, :3]) depends on whether S ≥ 3 and
// is unknown; so is anything but a polynomial.
func symSliceLen(d, start, end graph.Dim) graph.Dim {
	pd, ok := polyOf(d, false)
	if !ok {
		return unknownDim
	}
	bound := func(v graph.Dim, isEnd bool) (symPoly, bool) {
		switch {
		case vKnown(v) && v.Value >= math.MaxInt32 && isEnd:
			return pd, true
		case vKnown(v) && v.Value < 0 && v.Value > math.MinInt32:
			return polyAdd(pd, symPoly{"": v.Value}, 1), true
		case vKnown(v) && v.Value >= 0 && !isEnd:
			return symPoly{"": v.Value}, true
		case !vKnown(v):
			return polyOf(v, true)
		}
		return nil, false
	}
	ps, ok1 := bound(start, false)
	pe, ok2 := bound(end, true)
	if !ok1 || !ok2 {
		return unknownDim
	}
	return polyDim(polyAdd(pe, ps, -1))
}

// symbolicSlice sizes a step-1 Slice whose starts or ends hold symbolic values (x[:, past:]
// with past read from a shape); false when it cannot.
func symbolicSlice(c *nctx, out graph.Shape) bool {
	st, en := c.in(1), c.in(2)
	if st == nil || en == nil || st.ival == nil || en.ival == nil || len(st.ival) != len(en.ival) {
		return false
	}
	n := len(st.ival)
	axes := make([]int64, n)
	for i := range axes {
		axes[i] = int64(i)
	}
	if a := c.in(3); a != nil {
		var ok bool
		if axes, ok = a.ints(); !ok || len(axes) != n {
			return false
		}
	}
	if s := c.in(4); s != nil {
		steps, ok := s.ints()
		if !ok || len(steps) != n || !allOnes(steps) {
			return false
		}
	}
	for i, ax := range axes {
		a, err := normAxis(ax, len(out))
		if err != nil {
			return false
		}
		d := out[a]
		if d.Known() && vKnown(st.ival[i]) && vKnown(en.ival[i]) {
			out[a] = graph.Static(sliceLen(d.Value, st.ival[i].Value, en.ival[i].Value, 1))
			continue
		}
		out[a] = symSliceLen(d, st.ival[i], en.ival[i])
	}
	return true
}

func slice(c *nctx) error {
	x := c.shapedInput(0, math.MaxInt)
	if x == nil {
		return nil
	}
	r := len(x.shape)
	var starts, ends, axes, steps []int64
	ok := true
	if c.opset < 10 {
		starts, ends, axes = c.n.AttrInts("starts"), c.n.AttrInts("ends"), c.n.AttrInts("axes")
	} else {
		var ok1, ok2 bool
		starts, ok1 = c.in(1).ints()
		ends, ok2 = c.in(2).ints()
		ok = ok1 && ok2
		if a := c.in(3); a != nil {
			var ok3 bool
			axes, ok3 = a.ints()
			ok = ok && ok3
		}
		if s := c.in(4); s != nil {
			var ok4 bool
			steps, ok4 = s.ints()
			ok = ok && ok4
		}
	}
	out := x.shape.Clone()
	if !ok && c.opset >= 10 && symbolicSlice(c, out) {
		c.set(0, x.dt, out)
		return nil
	}
	if !ok || len(starts) != len(ends) {
		// Without the values only the rank is known; the axes sliced are unknown.
		if a := c.in(3); c.opset >= 10 && a != nil && a.valueKnown() {
			av, _ := a.ints()
			for _, ax := range av {
				if i, err := normAxis(ax, r); err == nil {
					out[i] = unknownDim
				}
			}
		} else {
			for i := range out {
				out[i] = unknownDim
			}
		}
		c.set(0, x.dt, out)
		return nil
	}
	if axes == nil {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if steps == nil {
		steps = ones(len(starts))
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return c.errorf("starts, ends, axes and steps differ in length")
	}
	for i, ax := range axes {
		a, err := normAxis(ax, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		if steps[i] == 0 {
			return c.errorf("slice step 0")
		}
		d := x.shape[a]
		if !d.Known() {
			out[a] = unknownDim
			if steps[i] == 1 {
				out[a] = symSliceLen(d, vInt(starts[i]), vInt(ends[i]))
			}
			continue
		}
		out[a] = graph.Static(sliceLen(d.Value, starts[i], ends[i], steps[i]))
	}
	t := c.set(0, x.dt, out)
	dims, ok := valueDims(x)
	if t == nil || !ok {
		return nil
	}
	if _, ok := foldSize(out); !ok {
		return nil
	}
	// Output coordinate o along a sliced axis is input coordinate start + o·step.
	first, stride := make([]int64, r), ones(r)
	for i, ax := range axes {
		a, _ := normAxis(ax, r)
		start, step, dim := starts[i], steps[i], dims[a]
		if start < 0 {
			start += dim
		}
		if step > 0 {
			start = min(max(start, 0), dim)
		} else {
			start = min(max(start, 0), dim-1)
		}
		first[a], stride[a] = start, step
	}
	takeValue(t, x, gatherIndex(out.Dims(), dims, func(coord []int64) {
		for a := range coord {
			coord[a] = first[a] + coord[a]*stride[a]
		}
	}))
	return nil
}

func gather(c *nctx) error {
	x, idx := c.in(0), c.in(1)
	if x == nil || idx == nil {
		return nil
	}
	if x.shape == nil || idx.shape == nil {
		c.set(0, x.dt, nil)
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", 0), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	out := append(graph.Shape{}, x.shape[:axis]...)
	out = append(out, idx.shape...)
	out = append(out, x.shape[axis+1:]...)
	t := c.set(0, x.dt, out)
	iv, ok := idx.ints()
	if !ok || !idx.shape.Known() {
		return nil
	}
	if n := x.shape[axis]; n.Known() {
		for _, k := range iv {
			if k < -n.Value || k >= n.Value {
				return c.errorf("index %d out of range for axis %d of size %d", k, axis, n.Value)
			}
		}
	}
	dims, ok := valueDims(x)
	if _, small := foldSize(out); t == nil || !ok || !small || int64(len(iv)) != mustElems(idx.shape) {
		return nil
	}
	// Output coordinates: x's axes before axis, idx's axes, x's axes after axis.
	ri := len(idx.shape)
	ist := rowStrides(idx.shape.Dims())
	n := dims[axis]
	takeValue(t, x, gatherIndex(out.Dims(), dims, func(coord []int64) {
		var j int64
		for k := 0; k < ri; k++ {
			j += coord[axis+k] * ist[k]
		}
		k := iv[j]
		if k < 0 {
			k += n
		}
		copy(coord[axis+1:], coord[axis+ri:]) // x's axes after axis follow idx's
		coord[axis] = k
	}))
	return nil
}

// mustElems is the element count of a known shape (-1 when it overflows).
func mustElems(s graph.Shape) int64 {
	n, err := s.NumElements()
	if err != nil {
		return -1
	}
	return n
}

// gatherElements: output[i][j][k] = x[index[i][j][k]][j][k] along axis 0, and so on.
func gatherElementsValue(c *nctx, t *tinfo, x, idx *tinfo, axis int) error {
	dims, ok := valueDims(x)
	iv, known := idx.ints()
	if t == nil || !ok || !known || !idx.shape.Known() || len(idx.shape) != len(dims) || int64(len(iv)) != mustElems(idx.shape) {
		return nil
	}
	n := dims[axis]
	for _, k := range iv {
		if k < -n || k >= n {
			return c.errorf("index %d out of range for axis %d of size %d", k, axis, n)
		}
	}
	for k, d := range idx.shape {
		if k != axis && d.Value > dims[k] {
			return c.errorf("indices of shape %v reach beyond data of shape %v on axis %d", idx.shape, x.shape, k)
		}
	}
	ist := rowStrides(idx.shape.Dims())
	takeValue(t, x, gatherIndex(idx.shape.Dims(), dims, func(coord []int64) {
		var j int64
		for k, cv := range coord {
			j += cv * ist[k]
		}
		k := iv[j]
		if k < 0 {
			k += n
		}
		coord[axis] = k
	}))
	return nil
}

func gatherElements(c *nctx) error {
	x, idx := c.in(0), c.in(1)
	if x == nil || idx == nil {
		return nil
	}
	t := c.set(0, x.dt, idx.shape.Clone())
	if x.shape == nil {
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", 0), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	return gatherElementsValue(c, t, x, idx, axis)
}

func gatherND(c *nctx) error {
	x, idx := c.in(0), c.in(1)
	if x == nil || idx == nil {
		return nil
	}
	bd := int(c.n.AttrInt("batch_dims", 0))
	if x.shape == nil || idx.shape == nil || len(idx.shape) == 0 || !idx.shape[len(idx.shape)-1].Known() {
		c.set(0, x.dt, nil)
		return nil
	}
	last := int(idx.shape[len(idx.shape)-1].Value)
	if bd+last > len(x.shape) {
		return c.errorf("indices reach beyond the data rank")
	}
	out := append(graph.Shape{}, idx.shape[:len(idx.shape)-1]...)
	out = append(out, x.shape[bd+last:]...)
	c.set(0, x.dt, out)
	return nil
}

func squeeze(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	axes, present, known := axesArg(c, "axes", 1, 13)
	if x.shape == nil || !known {
		c.set(0, x.dt, nil)
		return nil
	}
	r := len(x.shape)
	drop := map[int]bool{}
	if present {
		for _, a := range axes {
			i, err := normAxis(a, r)
			if err != nil {
				return c.errorf("%v", err)
			}
			drop[i] = true
		}
	} else {
		for i, d := range x.shape {
			if !d.Known() {
				c.set(0, x.dt, nil)
				return nil
			}
			if d.Value == 1 {
				drop[i] = true
			}
		}
	}
	var out graph.Shape = graph.Shape{}
	for i, d := range x.shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	t := c.set(0, x.dt, out)
	if t != nil {
		t.ival, t.fval = x.ival, x.fval
	}
	return nil
}

func unsqueeze(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	axes, _, known := axesArg(c, "axes", 1, 13)
	if x.shape == nil || !known {
		c.set(0, x.dt, nil)
		return nil
	}
	r := len(x.shape) + len(axes)
	ins := map[int]bool{}
	for _, a := range axes {
		i, err := normAxis(a, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		ins[i] = true
	}
	out := make(graph.Shape, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if ins[i] {
			out = append(out, graph.Static(1))
		} else {
			out = append(out, x.shape[j])
			j++
		}
	}
	t := c.set(0, x.dt, out)
	if t != nil {
		t.ival, t.fval = x.ival, x.fval
	}
	return nil
}

func expand(c *nctx) error {
	x, sh := c.in(0), c.in(1)
	if x == nil || sh == nil {
		return nil
	}
	if sh.ival == nil {
		var s graph.Shape
		if sh.shape.Known() && len(sh.shape) == 1 && x.shape != nil {
			s = unknownOfRank(max(sh.shape[0].Value, int64(len(x.shape))))
		}
		c.set(0, x.dt, s)
		return nil
	}
	out, err := broadcast(x.shape, dimsOfVals(sh.ival))
	if err != nil {
		return c.errorf("%v", err)
	}
	t := c.set(0, x.dt, out)
	if t != nil && x.ival != nil && out.Known() && x.shape.Known() {
		if n, err := out.NumElements(); err == nil && n <= maxFoldElements {
			t.ival = broadcastValues(x.shape, x.ival, graph.Shape{}, []graph.Dim{graph.Static(0)}, out,
				func(a, _ graph.Dim) graph.Dim { return a })
		}
	}
	return nil
}

func shapeOp(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil {
		c.set(0, graph.Int64, graph.Shape{unknownDim})
		return nil
	}
	r := int64(len(x.shape))
	start, end := c.n.AttrInt("start", 0), c.n.AttrInt("end", r)
	if start < 0 {
		start += r
	}
	if end < 0 {
		end += r
	}
	start, end = min(max(start, 0), r), min(max(end, 0), r)
	if end < start {
		end = start
	}
	val := make([]graph.Dim, 0, end-start)
	for _, d := range x.shape[start:end] {
		val = append(val, valOfDim(d))
	}
	c.setInts(0, graph.Int64, graph.ShapeOf(end-start), val)
	return nil
}

func sizeOp(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	var val []graph.Dim
	if x.shape != nil {
		val = []graph.Dim{valOfDim(product(x.shape))}
	}
	c.setInts(0, graph.Int64, graph.Shape{}, val)
	return nil
}

// attrTensorValue decodes a tensor-valued attribute into dtype, shape and value.
func (c *nctx) attrTensorValue(t *onnxpb.TensorProto) (graph.DType, graph.Shape, []graph.Dim, []float64) {
	dt := graph.DType(t.GetDataType())
	shape, err := tensorShape(t)
	if err != nil {
		return dt, nil, nil, nil
	}
	raw, ok := c.m.rawBytes(t)
	if !ok {
		return dt, shape, nil, nil
	}
	if len(raw) == 0 {
		v, f := emptyValue(dt)
		return dt, shape, v, f
	}
	ints, floats, _ := decodeNumbers(dt, raw)
	if dt.IsFloat() {
		return dt, shape, nil, floats
	}
	return dt, shape, dimsOf(ints), nil
}

func constantOfShape(c *nctx) error {
	sh := c.in(0)
	if sh == nil {
		return nil
	}
	dt := graph.Float
	var fill []graph.Dim
	var ffill []float64
	if a := c.attrProto("value"); a != nil && a.GetT() != nil {
		var v []graph.Dim
		var fv []float64
		dt, _, v, fv = c.attrTensorValue(a.GetT())
		if len(v) == 1 {
			fill = v
		}
		if len(fv) == 1 {
			ffill = fv
		}
	} else {
		ffill = []float64{0}
	}
	if sh.ival == nil {
		var s graph.Shape
		if sh.shape.Known() && len(sh.shape) == 1 {
			s = unknownOfRank(sh.shape[0].Value)
		}
		c.set(0, dt, s)
		return nil
	}
	out := dimsOfVals(sh.ival)
	t := c.set(0, dt, out)
	if t == nil || !out.Known() {
		return nil
	}
	n, err := out.NumElements()
	if err != nil || n > maxFoldElements {
		return nil
	}
	if fill != nil {
		t.ival = make([]graph.Dim, n)
		for i := range t.ival {
			t.ival[i] = fill[0]
		}
	}
	if ffill != nil {
		t.fval = make([]float64, n)
		for i := range t.fval {
			t.fval[i] = ffill[0]
		}
	}
	return nil
}

func constant(c *nctx) error {
	for _, a := range c.np.Attribute {
		switch a.GetName() {
		case "value":
			if a.GetT() == nil {
				return nil
			}
			dt, s, v, fv := c.attrTensorValue(a.GetT())
			t := c.set(0, dt, s)
			if t != nil {
				t.ival, t.fval = v, fv
			}
		case "sparse_value":
			if st := a.GetSparseTensor(); st != nil {
				s := graph.ShapeOf(st.Dims...)
				c.set(0, graph.DType(st.GetValues().GetDataType()), s)
			}
		case "value_float":
			c.setFloats(0, graph.Float, graph.Shape{}, []float64{float64(a.GetF())})
		case "value_floats":
			f := make([]float64, len(a.Floats))
			for i, x := range a.Floats {
				f[i] = float64(x)
			}
			c.setFloats(0, graph.Float, graph.ShapeOf(int64(len(f))), f)
		case "value_int":
			c.setInts(0, graph.Int64, graph.Shape{}, []graph.Dim{graph.Static(a.GetI())})
		case "value_ints":
			c.setInts(0, graph.Int64, graph.ShapeOf(int64(len(a.Ints))), dimsOf(a.Ints))
		case "value_string":
			c.set(0, graph.String, graph.Shape{})
		case "value_strings":
			c.set(0, graph.String, graph.ShapeOf(int64(len(a.Strings))))
		}
	}
	return nil
}

func rangeOp(c *nctx) error {
	start, limit, delta := c.in(0), c.in(1), c.in(2)
	if start == nil || limit == nil || delta == nil {
		return nil
	}
	s, ok1 := start.numbers()
	l, ok2 := limit.numbers()
	d, ok3 := delta.numbers()
	if !ok1 || !ok2 || !ok3 || len(s) != 1 || len(l) != 1 || len(d) != 1 || d[0] == 0 {
		n := unknownDim
		// Range(a, S, ±1) over a symbolic limit S has S − a (a − S) elements, a symbolic or
		// not: a causal mask's query positions Range(total − seq, total, 1) are seq.
		if ok3 && len(d) == 1 && (d[0] == 1 || d[0] == -1) && len(limit.ival) == 1 && len(start.ival) == 1 {
			a, b := start.ival[0], limit.ival[0]
			if d[0] == -1 {
				a, b = b, a
			}
			n = dimOfVal(intArith[optype.Sub](b, a))
		}
		c.set(0, start.dt, graph.Shape{n})
		return nil
	}
	cnt := math.Max(math.Ceil((l[0]-s[0])/d[0]), 0)
	if cnt > 1<<62 || math.IsNaN(cnt) {
		return c.errorf("Range(%g, %g, %g) has too many elements", s[0], l[0], d[0])
	}
	n := int64(cnt)
	out := graph.ShapeOf(n)
	if start.dt.IsInteger() && n <= maxFoldElements {
		val := make([]graph.Dim, n)
		for i := range val {
			val[i] = graph.Static(int64(s[0]) + int64(i)*int64(d[0]))
		}
		c.setInts(0, start.dt, out, val)
		return nil
	}
	c.set(0, start.dt, out)
	return nil
}

func tile(c *nctx) error {
	x, rep := c.in(0), c.in(1)
	if x == nil || rep == nil {
		return nil
	}
	if x.shape == nil {
		c.set(0, x.dt, nil)
		return nil
	}
	r, ok := rep.ints()
	out := x.shape.Clone()
	if !ok || len(r) != len(out) {
		for i := range out {
			out[i] = unknownDim
		}
	} else {
		for i := range out {
			out[i] = dimMul(out[i], graph.Static(r[i]))
		}
	}
	t := c.set(0, x.dt, out)
	if dims, ok := valueDims(x); ok && t != nil {
		if _, small := foldSize(out); small {
			takeValue(t, x, gatherIndex(out.Dims(), dims, func(coord []int64) {
				for i := range dims {
					coord[i] %= dims[i]
				}
			}))
		}
	}
	return nil
}

func pad(c *nctx) error {
	x := c.shapedInput(0, math.MaxInt)
	if x == nil {
		return nil
	}
	r := len(x.shape)
	var pads []int64
	ok := true
	if c.opset < 11 {
		pads = c.n.AttrInts("pads")
	} else {
		pads, ok = c.in(1).ints()
	}
	out := x.shape.Clone()
	axes := make([]int64, r)
	for i := range axes {
		axes[i] = int64(i)
	}
	if a := c.in(3); c.opset >= 18 && a != nil {
		var ok2 bool
		axes, ok2 = a.ints()
		ok = ok && ok2
	}
	if !ok || len(pads) != 2*len(axes) {
		for i := range out {
			out[i] = unknownDim
		}
		c.set(0, x.dt, out)
		return nil
	}
	na := len(axes)
	for i, ax := range axes {
		a, err := normAxis(ax, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		// Negative pads crop.
		switch p := pads[i] + pads[na+i]; {
		case out[a].Known():
			if out[a].Value+p < 0 {
				return c.errorf("pads %v crop axis %d of size %d below zero", pads, a, out[a].Value)
			}
			out[a] = graph.Static(out[a].Value + p)
		case p != 0:
			out[a] = dimPlus(out[a], p) // S + 2, or unknown
		}
	}
	c.set(0, x.dt, out)
	return nil
}

func resize(c *nctx) error {
	x := c.shapedInput(0, math.MaxInt)
	if x == nil {
		return nil
	}
	r := len(x.shape)
	out := x.shape.Clone()
	var scales []float64
	var sizes []int64
	switch {
	case c.n.OpType == optype.Upsample && c.opset < 9:
		for _, f := range c.n.Attr("scales").Floats {
			scales = append(scales, f)
		}
	case c.n.OpType == optype.Upsample || c.opset < 11:
		scales, _ = c.in(1).numbers()
	default:
		if s := c.in(3); s != nil {
			sizes, _ = s.ints()
		}
		if sizes == nil {
			if s := c.in(2); s != nil {
				scales, _ = s.numbers()
			}
		}
	}
	axes := make([]int64, r)
	for i := range axes {
		axes[i] = int64(i)
	}
	if a := c.n.AttrInts("axes"); a != nil {
		axes = a
	}
	norm := make([]int, len(axes))
	for i, ax := range axes {
		a, err := normAxis(ax, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		norm[i] = a
	}
	switch {
	case len(sizes) == len(axes) && len(sizes) > 0:
		policy := c.n.AttrString("keep_aspect_ratio_policy", "stretch")
		if c.opset < 18 || policy == "stretch" {
			for i, a := range norm {
				out[a] = graph.Static(sizes[i])
			}
			break
		}
		// not_larger / not_smaller: one scale for all axes, the smallest (largest) of
		// sizes/in, and out = round(scale·in); ORT computes in float32.
		var scale float32
		for i, a := range norm {
			if !x.shape[a].Known() || x.shape[a].Value == 0 {
				for _, a := range norm {
					out[a] = unknownDim
				}
				scale = -1
				break
			}
			s := float32(sizes[i]) / float32(x.shape[a].Value)
			if i == 0 || (policy == "not_larger") == (s < scale) {
				scale = s
			}
		}
		if scale >= 0 {
			for _, a := range norm {
				out[a] = graph.Static(int64(math.Round(float64(scale * float32(x.shape[a].Value)))))
			}
		}
	case len(scales) == len(axes) && len(scales) > 0:
		for i, a := range norm {
			if out[a].Known() {
				// ORT: int64(scale · in) in float32 arithmetic (ONNX: floor).
				out[a] = graph.Static(int64(float32(scales[i]) * float32(out[a].Value)))
			} else if scales[i] != 1 {
				out[a] = unknownDim
			}
		}
	default:
		for i := range out {
			out[i] = unknownDim
		}
	}
	c.set(0, x.dt, out)
	return nil
}

func reduce(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	since := int64(18)
	if c.n.OpType == optype.ReduceSum {
		since = 13
	}
	axes, present, known := axesArg(c, "axes", 1, since)
	keep := c.n.AttrInt("keepdims", 1) != 0
	if x.shape == nil || !known {
		c.set(0, x.dt, nil)
		return nil
	}
	r := len(x.shape)
	sel := map[int]bool{}
	if !present || len(axes) == 0 {
		if c.n.AttrInt("noop_with_empty_axes", 0) != 0 && c.opset >= since {
			return identity(c)
		}
		for i := 0; i < r; i++ {
			sel[i] = true
		}
	}
	for _, a := range axes {
		i, err := normAxis(a, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		sel[i] = true
	}
	out := graph.Shape{}
	for i, d := range x.shape {
		switch {
		case !sel[i]:
			out = append(out, d)
		case keep:
			out = append(out, graph.Static(1))
		}
	}
	t := c.set(0, x.dt, out)
	// Fold reductions of small integer values (shape arithmetic such as the product of a
	// shape's dims).
	if t != nil && !x.dt.IsFloat() {
		t.ival = reduceValues(c.n.OpType, x, sel)
	}
	return nil
}

func argReduce(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil {
		c.set(0, graph.Int64, nil)
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", 0), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	out := x.shape.Clone()
	if c.n.AttrInt("keepdims", 1) != 0 {
		out[axis] = graph.Static(1)
	} else {
		out = append(out[:axis], out[axis+1:]...)
	}
	c.set(0, graph.Int64, out)
	return nil
}

func topK(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil {
		c.set(0, x.dt, nil)
		c.set(1, graph.Int64, nil)
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", -1), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	k := unknownDim
	if c.opset < 10 {
		k = graph.Static(c.n.AttrInt("k", -1))
	} else if kv, ok := c.in(1).ints(); ok && len(kv) == 1 {
		k = graph.Static(kv[0])
	}
	out := x.shape.Clone()
	out[axis] = k
	c.set(0, x.dt, out)
	c.set(1, graph.Int64, out.Clone())
	return nil
}

func nonZero(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	r := unknownDim
	if x.shape != nil {
		r = graph.Static(int64(len(x.shape)))
	}
	c.set(0, graph.Int64, graph.Shape{r, unknownDim})
	return nil
}

func oneHot(c *nctx) error {
	idx, depth, vals := c.in(0), c.in(1), c.in(2)
	if idx == nil || depth == nil || vals == nil {
		return nil
	}
	if idx.shape == nil {
		c.set(0, vals.dt, nil)
		return nil
	}
	r := len(idx.shape) + 1
	axis, err := normAxis(c.n.AttrInt("axis", -1), r)
	if err != nil {
		return c.errorf("%v", err)
	}
	d := unknownDim
	if dv, ok := depth.numbers(); ok && len(dv) == 1 {
		d = graph.Static(int64(dv[0]))
	}
	out := append(graph.Shape{}, idx.shape[:axis]...)
	out = append(out, d)
	out = append(out, idx.shape[axis:]...)
	c.set(0, vals.dt, out)
	return nil
}

func depthToSpace(c *nctx) error {
	x := c.shapedInput(4, 4)
	if x == nil {
		return nil
	}
	b := graph.Static(c.n.AttrInt("blocksize", 1))
	bb := dimMul(b, b)
	c.set(0, x.dt, graph.Shape{x.shape[0], dimDiv(x.shape[1], bb), dimMul(x.shape[2], b), dimMul(x.shape[3], b)})
	return nil
}

func spaceToDepth(c *nctx) error {
	x := c.shapedInput(4, 4)
	if x == nil {
		return nil
	}
	b := graph.Static(c.n.AttrInt("blocksize", 1))
	bb := dimMul(b, b)
	c.set(0, x.dt, graph.Shape{x.shape[0], dimMul(x.shape[1], bb), dimDiv(x.shape[2], b), dimDiv(x.shape[3], b)})
	return nil
}

func einsum(c *nctx) error {
	ins, outTerm, explicit := ops.ParseEinsum(c.n.AttrString("equation", ""))
	if len(ins) != c.nin() {
		return c.errorf("equation has %d operands for %d inputs", len(ins), c.nin())
	}
	size := map[byte]graph.Dim{}
	count := map[byte]int{}
	var ell graph.Shape
	var dt graph.DType
	for i, term := range ins {
		x := c.in(i)
		if x == nil {
			return nil
		}
		dt = x.dt
		if x.shape == nil {
			c.set(0, dt, nil)
			return nil
		}
		letters := strings.Replace(term, "...", "", 1)
		nEll := len(x.shape) - len(letters)
		pos := 0
		for j := 0; j < len(term); j++ {
			if strings.HasPrefix(term[j:], "...") {
				e := x.shape[pos : pos+nEll]
				if b, err := broadcast(ell, e); err == nil && ell != nil {
					ell = b
				} else {
					ell = e
				}
				pos += nEll
				j += 2
				continue
			}
			l := term[j]
			if pos >= len(x.shape) {
				return c.errorf("equation term %q does not match rank %d", term, len(x.shape))
			}
			if d, ok := size[l]; !ok || !d.Known() || (d.Known() && d.Value == 1) {
				size[l] = x.shape[pos]
			}
			count[l]++
			pos++
		}
	}
	if !explicit {
		var ls []byte
		for l, n := range count {
			if n == 1 {
				ls = append(ls, l)
			}
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
		outTerm = "..." + string(ls)
	}
	out := graph.Shape{}
	for j := 0; j < len(outTerm); j++ {
		if strings.HasPrefix(outTerm[j:], "...") {
			out = append(out, ell...)
			j += 2
			continue
		}
		out = append(out, size[outTerm[j]])
	}
	c.set(0, dt, out)
	return nil
}

// rnn infers RNN, GRU and LSTM: Y is [seq, dirs, batch, hidden] and Y_h (and LSTM's Y_c)
// [dirs, batch, hidden]; with layout 1, [batch, seq, dirs, hidden] and [batch, dirs, hidden].
// X must be 3-D. A dim that X leaves unknown (or X's rank) is taken from the other inputs:
// batch from sequence_lens [batch] or initial_h / initial_c (shaped like Y_h), and
// hidden_size, when the attribute is absent, from R [dirs, gates*hidden, hidden].
func rnn(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape != nil && len(x.shape) != 3 {
		for i := 0; i < c.nout(); i++ {
			c.set(i, x.dt, nil)
		}
		return c.errorf("X must be 3-D, got shape %v", x.shape)
	}
	batchMajor := c.n.AttrInt("layout", 0) != 0
	dirs := graph.Static(1)
	if c.n.AttrString("direction", "forward") == "bidirectional" {
		dirs = graph.Static(2)
	}
	hidden := unknownDim
	if h := c.n.AttrInt("hidden_size", -1); h >= 0 {
		hidden = graph.Static(h)
	} else if r := c.in(2); r.hasShape() && len(r.shape) == 3 {
		hidden = r.shape[2]
	}
	seq, batch := unknownDim, unknownDim
	if x.shape != nil {
		seq, batch = x.shape[0], x.shape[1]
		if batchMajor {
			seq, batch = batch, seq
		}
	}
	if lens := c.in(4); lens.hasShape() && len(lens.shape) == 1 {
		batch = moreKnown(batch, lens.shape[0])
	}
	states := []int{5} // initial_h, and LSTM's initial_c
	if c.n.OpType == optype.LSTM {
		states = append(states, 6)
	}
	for _, i := range states {
		if h := c.in(i); h.hasShape() && len(h.shape) == 3 {
			b := h.shape[1]
			if batchMajor {
				b = h.shape[0]
			}
			batch = moreKnown(batch, b)
			hidden = moreKnown(hidden, h.shape[2])
		}
	}
	if batchMajor {
		c.set(0, x.dt, graph.Shape{batch, seq, dirs, hidden})
		c.set(1, x.dt, graph.Shape{batch, dirs, hidden})
		c.set(2, x.dt, graph.Shape{batch, dirs, hidden})
		return nil
	}
	c.set(0, x.dt, graph.Shape{seq, dirs, batch, hidden})
	c.set(1, x.dt, graph.Shape{dirs, batch, hidden})
	c.set(2, x.dt, graph.Shape{dirs, batch, hidden}) // LSTM Y_c
	return nil
}

// moreKnown returns whichever of two descriptions of the same dim says more: a number before
// a symbolic name, a name before an anonymous unknown.
func moreKnown(a, b graph.Dim) graph.Dim {
	switch {
	case a.Known():
		return a
	case b.Known():
		return b
	case a.Param != "":
		return a
	}
	return b
}

// subgraphOutputType returns the declared type of output i of a subgraph attribute.
func (c *nctx) subgraphOutput(attr string, i int) (graph.DType, graph.Shape, bool) {
	a := c.attrProto(attr)
	if a == nil || a.GetG() == nil || i >= len(a.GetG().Output) {
		return graph.Undefined, nil, false
	}
	dt, s, _ := c.m.typeInfo(a.GetG().Output[i].GetType())
	return dt, s, true
}

// mergeInfo is what is known of a value that is either a or b: the common dtype, and the
// dims on which both agree (the rank only when both know it and agree).
func mergeInfo(a, b tinfo) tinfo {
	out := tinfo{dt: a.dt, nonTensor: a.nonTensor}
	if out.dt == graph.Undefined {
		out.dt = b.dt
	}
	if a.shape != nil && b.shape != nil && len(a.shape) == len(b.shape) {
		out.shape = make(graph.Shape, len(a.shape))
		for k := range a.shape {
			if a.shape[k] == b.shape[k] {
				out.shape[k] = a.shape[k]
			} else {
				out.shape[k] = unknownDim
			}
		}
	}
	return out
}

// declaredOutputs falls back on the declared output types of a subgraph attribute.
func (c *nctx) declaredOutputs(attr string) []tinfo {
	a := c.attrProto(attr)
	if a == nil || a.GetG() == nil {
		return nil
	}
	out := make([]tinfo, len(a.GetG().Output))
	for i, vi := range a.GetG().Output {
		out[i].dt, out[i].shape, out[i].nonTensor = c.m.typeInfo(vi.GetType())
	}
	return out
}

// subgraphOutputs infers a subgraph attribute (falling back on its declared output types),
// and reports whether it cannot run with these shapes (see inferSubgraph).
func (c *nctx) subgraphOutputs(attr string, inputs []tinfo) ([]tinfo, bool) {
	a := c.attrProto(attr)
	if a == nil {
		return nil, false
	}
	if out, fails := c.inferSubgraph(a.GetG(), inputs); out != nil {
		return out, fails
	}
	return c.declaredOutputs(attr), false
}

// ifOp infers If. A condition known before run time selects one branch. Otherwise the outputs
// are what both branches agree on, unless one branch cannot run with these shapes (a node it
// computes its outputs with has a shape error, e.g. an input size that only suits the other
// branch): a run that succeeds takes the other branch, whose outputs the If's are. An If whose
// branch taken, or both branches, cannot run is a shape error itself, which an enclosing If
// takes into account in turn.
func ifOp(c *nctx) error {
	th, thFails := c.subgraphOutputs("then_branch", nil)
	el, elFails := c.subgraphOutputs("else_branch", nil)
	var pick []tinfo
	var failure error
	if v, ok := c.in(0).ints(); ok && len(v) == 1 {
		pick = el
		if v[0] != 0 {
			pick = th
		}
		switch {
		case v[0] != 0 && thFails:
			failure = c.errorf("the then_branch it takes cannot run with these shapes")
		case v[0] == 0 && elFails:
			failure = c.errorf("the else_branch it takes cannot run with these shapes")
		}
	} else {
		switch {
		case thFails && elFails:
			failure = c.errorf("neither branch can run with these shapes")
		case thFails:
			pick = el
			c.m.Warnings = append(c.m.Warnings, c.errorf("then_branch cannot run with these shapes; the outputs are else_branch's").Error())
		case elFails:
			pick = th
			c.m.Warnings = append(c.m.Warnings, c.errorf("else_branch cannot run with these shapes; the outputs are then_branch's").Error())
		}
	}
	for i := 0; i < c.nout(); i++ {
		if pick != nil {
			if i < len(pick) {
				o := pick[i]
				if t := c.set(i, o.dt, o.shape.Clone()); t != nil {
					t.ival, t.fval, t.nonTensor = o.ival, o.fval, o.nonTensor
				}
			}
			continue
		}
		if i >= len(th) || i >= len(el) {
			continue
		}
		o := mergeInfo(th[i], el[i])
		if t := c.set(i, o.dt, o.shape); t != nil {
			t.nonTensor = o.nonTensor
		}
	}
	return failure
}

// maxLoopPasses bounds the passes over a loop body looking for the loop-carried shapes that
// hold on every iteration.
const maxLoopPasses = 3

// loopCarried infers a Loop or Scan body whose first inputs are the loop-carried values
// (after prefix, e.g. Loop's iteration number and condition) until the carried shapes are
// stable: a dim an iteration changes becomes unknown (after maxLoopPasses passes without
// convergence, the carried ranks too). rest follow the carried inputs; the carried values are
// body outputs outOffset.... It returns the carried values and the body outputs of the last
// pass (nil when the body cannot be inferred).
func (c *nctx) loopCarried(prefix []tinfo, carried []tinfo, rest []tinfo, outOffset int) ([]tinfo, []tinfo) {
	body := c.attrProto("body").GetG()
	for pass := 0; ; pass++ {
		in := append(append(append([]tinfo{}, prefix...), carried...), rest...)
		outs, _ := c.inferSubgraph(body, in)
		if outs == nil || len(outs) < outOffset+len(carried) {
			// Without the body, a carried value keeps only the dims its declared body output
			// shares with what is known so far.
			decl := c.declaredOutputs("body")
			for i := range carried {
				if outOffset+i < len(decl) {
					carried[i].shape = mergeInfo(carried[i], decl[outOffset+i]).shape
				} else {
					carried[i].shape = nil
				}
			}
			return carried, nil
		}
		changed := false
		for i := range carried {
			o := outs[outOffset+i]
			m := mergeInfo(carried[i], o)
			if m.shape == nil && carried[i].shape != nil || m.shape != nil && !m.shape.Equal(carried[i].shape) {
				changed = true
			}
			carried[i] = tinfo{dt: carried[i].dt, shape: m.shape, nonTensor: carried[i].nonTensor}
		}
		if !changed {
			return carried, outs
		}
		if pass+1 == maxLoopPasses {
			for i := range carried {
				carried[i].shape = nil
			}
			outs, _ = c.inferSubgraph(body, append(append(append([]tinfo{}, prefix...), carried...), rest...))
			return carried, outs
		}
	}
}

func loopOp(c *nctx) error {
	// Loop inputs: M, cond, v_initial...; outputs: v_final... then scan outputs. Body inputs:
	// iteration number, condition, carried...; body outputs: condition, carried..., scans...
	nCarried := max(c.nin()-2, 0)
	carried := make([]tinfo, nCarried)
	for i := range carried {
		if x := c.in(2 + i); x != nil {
			// Values change from one iteration to the next: keep only type and shape.
			carried[i] = tinfo{dt: x.dt, shape: x.shape.Clone(), nonTensor: x.nonTensor}
		}
	}
	cond := c.in(1)
	condTrue := cond == nil
	if v, ok := cond.ints(); ok && len(v) == 1 && v[0] != 0 {
		condTrue = true
	}
	condIn := tinfo{dt: graph.Bool, shape: graph.Shape{}}
	if condTrue {
		// Inductively: if the body keeps a true condition true, every iteration sees true.
		condIn.ival = []graph.Dim{graph.Static(1)}
	}
	prefix := []tinfo{{dt: graph.Int64, shape: graph.Shape{}}, condIn}
	carried, outs := c.loopCarried(prefix, carried, nil, 1)
	if outs == nil {
		outs = c.declaredOutputs("body")
	}
	// The trip count is M when the condition stays true.
	trip := unknownDim
	if m, ok := c.in(0).ints(); ok && len(m) == 1 && m[0] >= 0 && condTrue {
		if cond == nil {
			trip = graph.Static(m[0])
		} else if len(outs) > 0 {
			if v, ok := outs[0].ints(); ok && len(v) == 1 && v[0] != 0 {
				trip = graph.Static(m[0])
			}
		}
	}
	c.recordTrips(trip)
	for i := 0; i < c.nout(); i++ {
		if i < nCarried {
			if x := carried[i]; x.dt != graph.Undefined || x.shape != nil {
				if t := c.set(i, x.dt, x.shape); t != nil {
					t.nonTensor = x.nonTensor
				}
			}
			continue
		}
		if 1+i >= len(outs) {
			continue
		}
		o := outs[1+i]
		var s graph.Shape
		if o.shape != nil {
			s = append(graph.Shape{trip}, o.shape...)
		}
		c.set(i, o.dt, s)
	}
	return nil
}

// scanOp (opset 9+): inputs are the initial states then the scan inputs; the body sees the
// states and one slice of each scan input (the scan axis removed); outputs are the final
// states then the scan outputs, stacked along their scan_output_axes.
func scanOp(c *nctx) error {
	nScan := int(c.n.AttrInt("num_scan_inputs", 0))
	nState := c.nin() - nScan
	if c.opset < 9 || nScan <= 0 || nState < 0 {
		return nil
	}
	inAxes := c.n.AttrInts("scan_input_axes")
	outAxes := c.n.AttrInts("scan_output_axes")
	states := make([]tinfo, nState)
	for i := range states {
		if x := c.in(i); x != nil {
			states[i] = tinfo{dt: x.dt, shape: x.shape.Clone(), nonTensor: x.nonTensor}
		}
	}
	slices := make([]tinfo, nScan)
	seq := unknownDim
	for j := range slices {
		x := c.in(nState + j)
		if x == nil {
			continue
		}
		slices[j].dt = x.dt
		if x.shape == nil {
			continue
		}
		ax := int64(0)
		if j < len(inAxes) {
			ax = inAxes[j]
		}
		a, err := normAxis(ax, len(x.shape))
		if err != nil {
			return c.errorf("%v", err)
		}
		if j == 0 || !seq.Known() {
			seq = x.shape[a]
		}
		slices[j].shape = append(x.shape[:a:a], x.shape[a+1:]...)
	}
	states, outs := c.loopCarried(nil, states, slices, 0)
	c.recordTrips(seq)
	if outs == nil {
		outs = c.declaredOutputs("body")
	}
	for i := 0; i < c.nout(); i++ {
		if i < nState {
			c.set(i, states[i].dt, states[i].shape)
			continue
		}
		if i >= len(outs) {
			continue
		}
		o := outs[i]
		if o.shape == nil {
			c.set(i, o.dt, nil)
			continue
		}
		ax := int64(0)
		if k := i - nState; k < len(outAxes) {
			ax = outAxes[k]
		}
		a, err := normAxis(ax, len(o.shape)+1)
		if err != nil {
			return c.errorf("%v", err)
		}
		s := append(append(o.shape[:a:a], seq), o.shape[a:]...)
		c.set(i, o.dt, s)
	}
	return nil
}

func quantize(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	dt := graph.Uint8
	if zp := c.in(2); zp != nil {
		dt = zp.dt
	} else if od := c.n.AttrInt("output_dtype", 0); od != 0 {
		dt = graph.DType(od)
	}
	c.set(0, dt, x.shape.Clone())
	return nil
}

func dequantize(c *nctx) error {
	x, scale := c.in(0), c.in(1)
	if x == nil {
		return nil
	}
	dt := graph.Float
	if od := c.n.AttrInt("output_dtype", 0); od != 0 {
		dt = graph.DType(od) // opset 23+
	} else if scale != nil && scale.dt != graph.Undefined {
		dt = scale.dt
	}
	c.set(0, dt, x.shape.Clone())
	return nil
}

func dynQuantize(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	c.set(0, graph.Uint8, x.shape.Clone())
	c.set(1, graph.Float, graph.Shape{})
	c.set(2, graph.Uint8, graph.Shape{})
	return nil
}

func compress(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	a := c.n.Attr("axis")
	if x.shape == nil || a == nil {
		c.set(0, x.dt, graph.Shape{unknownDim})
		return nil
	}
	axis, err := normAxis(a.Int, len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	out := x.shape.Clone()
	out[axis] = unknownDim
	c.set(0, x.dt, out)
	return nil
}

func nms(c *nctx) error {
	c.set(0, graph.Int64, graph.Shape{unknownDim, graph.Static(3)})
	return nil
}

func eyeLike(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	dt := x.dt
	if d := c.n.AttrInt("dtype", 0); d != 0 {
		dt = graph.DType(d)
	}
	c.set(0, dt, x.shape.Clone())
	return nil
}

func randomLike(c *nctx) error { return eyeLike(c) }

// multinomial draws sample_size class indices per batch row: [batch, sample_size].
func multinomial(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	dt := graph.DType(c.n.AttrInt("dtype", int64(graph.Int32)))
	if x.shape == nil || len(x.shape) != 2 {
		c.set(0, dt, graph.Shape{unknownDim, unknownDim})
		return nil
	}
	c.set(0, dt, graph.Shape{x.shape[0], graph.Static(c.n.AttrInt("sample_size", 1))})
	return nil
}

func randomShape(c *nctx) error {
	dt := graph.DType(c.n.AttrInt("dtype", int64(graph.Float)))
	c.set(0, dt, graph.ShapeOf(c.n.AttrInts("shape")...))
	return nil
}

// --- less common operators ---------------------------------------------------------------

// intInput returns the single known integer of input i (a scalar or a 1-element tensor).
func (c *nctx) intInput(i int) (int64, bool) {
	v, ok := c.in(i).ints()
	if !ok || len(v) != 1 {
		return 0, false
	}
	return v[0], true
}

// affineGrid: theta [N,2,3] or [N,3,4], size [N,C,H,W] or [N,C,D,H,W] → [N,H,W,2] or
// [N,D,H,W,3].
func affineGrid(c *nctx) error {
	theta, size := c.in(0), c.in(1)
	if theta == nil || size == nil {
		return nil
	}
	if size.ival == nil || len(size.ival) < 4 {
		c.set(0, theta.dt, nil)
		return nil
	}
	sp := dimsOfVals(size.ival[2:])
	out := append(graph.Shape{dimOfVal(size.ival[0])}, sp...)
	out = append(out, graph.Static(int64(len(sp))))
	c.set(0, theta.dt, out)
	return nil
}

// centerCropPad: the axes given take the sizes in shape.
func centerCropPad(c *nctx) error {
	x, sh := c.in(0), c.in(1)
	if x == nil || sh == nil {
		return nil
	}
	if x.shape == nil {
		c.set(0, x.dt, nil)
		return nil
	}
	r := len(x.shape)
	axes := c.n.AttrInts("axes")
	if axes == nil {
		axes = make([]int64, r)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	out := x.shape.Clone()
	for i, ax := range axes {
		a, err := normAxis(ax, r)
		if err != nil {
			return c.errorf("%v", err)
		}
		out[a] = unknownDim
		if i < len(sh.ival) {
			out[a] = dimOfVal(sh.ival[i])
		}
	}
	c.set(0, x.dt, out)
	return nil
}

// gridSample: X [N,C,D1..Dr], grid [N,O1..Or,r] → [N,C,O1..Or].
func gridSample(c *nctx) error {
	x, grid := c.in(0), c.in(1)
	if x == nil || grid == nil {
		return nil
	}
	if x.shape == nil || grid.shape == nil || len(x.shape) < 2 || len(grid.shape) < 2 {
		c.set(0, x.dt, nil)
		return nil
	}
	out := graph.Shape{x.shape[0], x.shape[1]}
	out = append(out, grid.shape[1:len(grid.shape)-1]...)
	c.set(0, x.dt, out)
	return nil
}

// col2Im: input [N, C·Π(block), L], image_shape → [N, C, image_shape...].
func col2Im(c *nctx) error {
	x, img, blk := c.in(0), c.in(1), c.in(2)
	if x == nil || img == nil || blk == nil {
		return nil
	}
	if x.shape == nil || len(x.shape) != 3 || img.ival == nil {
		c.set(0, x.dt, nil)
		return nil
	}
	ch := unknownDim
	if b, ok := blk.ints(); ok {
		p := int64(1)
		for _, v := range b {
			p *= v
		}
		if p > 0 {
			ch = dimDiv(x.shape[1], graph.Static(p))
		}
	}
	c.set(0, x.dt, append(graph.Shape{x.shape[0], ch}, dimsOfVals(img.ival)...))
	return nil
}

// dft (opset 17: axis attribute, default 1; opset 20: axis input, default -2): the DFT axis
// becomes dft_length (floor(n/2)+1 one-sided) and the last dim 2 (complex).
func dft(c *nctx) error {
	x := c.shapedInput(2, math.MaxInt)
	if x == nil {
		return nil
	}
	r := len(x.shape)
	axis := c.n.AttrInt("axis", 1)
	if c.opset >= 20 {
		axis = -2
		if c.in(2) != nil {
			v, ok := c.intInput(2)
			if !ok {
				c.set(0, x.dt, nil)
				return nil
			}
			axis = v
		}
	}
	a, err := normAxis(axis, r)
	if err != nil || a == r-1 {
		return c.errorf("DFT axis %d invalid for rank %d", axis, r)
	}
	n := x.shape[a]
	if c.in(1) != nil {
		n = unknownDim
		if v, ok := c.intInput(1); ok {
			n = graph.Static(v)
		}
	}
	out := x.shape.Clone()
	onesided, inverse := c.n.AttrInt("onesided", 0) != 0, c.n.AttrInt("inverse", 0) != 0
	switch {
	case onesided && inverse:
		c.set(0, x.dt, nil) // inverse real FFT: not in the opsets ORT implements
		return nil
	case onesided && n.Known():
		n = graph.Static(n.Value/2 + 1)
	case onesided:
		n = unknownDim
	}
	out[a] = n
	out[r-1] = graph.Static(2)
	c.set(0, x.dt, out)
	return nil
}

// stft: signal [B, L, 1|2] → [B, frames, bins, 2] with frames = (L − frame_length)/step + 1
// and bins = frame_length/2 + 1 when onesided.
func stft(c *nctx) error {
	x := c.shapedInput(3, 3)
	if x == nil {
		return nil
	}
	fl := unknownDim
	if v, ok := c.intInput(3); ok {
		fl = graph.Static(v)
	} else if w := c.in(2); c.in(3) == nil && w != nil && len(w.shape) == 1 {
		fl = w.shape[0]
	}
	frames, bins := unknownDim, unknownDim
	step, okStep := c.intInput(1)
	if fl.Known() {
		bins = fl
		if c.n.AttrInt("onesided", 1) != 0 {
			bins = graph.Static(fl.Value/2 + 1)
		}
		if okStep && step > 0 && x.shape[1].Known() {
			frames = graph.Static(floorDiv(x.shape[1].Value-fl.Value, step) + 1)
		}
	}
	c.set(0, x.dt, graph.Shape{x.shape[0], frames, bins, graph.Static(2)})
	return nil
}

// window: HannWindow, HammingWindow, BlackmanWindow: [size] of output_datatype.
func window(c *nctx) error {
	dt := graph.DType(c.n.AttrInt("output_datatype", int64(graph.Float)))
	n := unknownDim
	if v, ok := c.intInput(0); ok {
		n = graph.Static(v)
	}
	c.set(0, dt, graph.Shape{n})
	return nil
}

// melWeightMatrix: [dft_length/2 + 1, num_mel_bins].
func melWeightMatrix(c *nctx) error {
	dt := graph.DType(c.n.AttrInt("output_datatype", int64(graph.Float)))
	bins, rows := unknownDim, unknownDim
	if v, ok := c.intInput(0); ok {
		bins = graph.Static(v)
	}
	if v, ok := c.intInput(1); ok {
		rows = graph.Static(v/2 + 1)
	}
	c.set(0, dt, graph.Shape{rows, bins})
	return nil
}

// maxUnpool: out = (in − 1)·stride + kernel − pads, or output_shape.
func maxUnpool(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if os := c.in(2); os != nil {
		if os.ival != nil {
			c.set(0, x.dt, dimsOfVals(os.ival))
		} else {
			c.set(0, x.dt, nil)
		}
		return nil
	}
	if x.shape == nil || len(x.shape) < 3 {
		c.set(0, x.dt, nil)
		return nil
	}
	nsp := len(x.shape) - 2
	kernel := c.n.AttrInts("kernel_shape")
	if len(kernel) != nsp {
		return c.errorf("kernel_shape has %d entries for %d spatial axes", len(kernel), nsp)
	}
	strides, _, pads, _ := spatialParams(c, nsp, kernel)
	out := graph.Shape{x.shape[0], x.shape[1]}
	for i := 0; i < nsp; i++ {
		d := x.shape[2+i]
		if d.Known() {
			d = graph.Static((d.Value-1)*strides[i] + kernel[i] - pads[i] - pads[nsp+i])
		} else {
			d = unknownDim
		}
		out = append(out, d)
	}
	c.set(0, x.dt, out)
	return nil
}

// roiAlign: [num_rois, C, output_height, output_width]; MaxRoiPool: pooled_shape.
func roiPool(c *nctx) error {
	x, rois := c.in(0), c.in(1)
	if x == nil || rois == nil {
		return nil
	}
	r, ch := unknownDim, unknownDim
	if rois.shape != nil && len(rois.shape) == 2 {
		r = rois.shape[0]
	}
	if x.shape != nil && len(x.shape) == 4 {
		ch = x.shape[1]
	}
	h, w := c.n.AttrInt("output_height", 1), c.n.AttrInt("output_width", 1)
	if c.n.OpType == optype.MaxRoiPool {
		ps := c.n.AttrInts("pooled_shape")
		if len(ps) != 2 {
			return c.errorf("pooled_shape needs 2 entries")
		}
		h, w = ps[0], ps[1]
	}
	c.set(0, x.dt, graph.Shape{r, ch, graph.Static(h), graph.Static(w)})
	return nil
}

// unique: the number of unique values U depends on the data.
func unique(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	u := unknownDim
	if a := c.n.Attr("axis"); a != nil && x.shape != nil {
		axis, err := normAxis(a.Int, len(x.shape))
		if err != nil {
			return c.errorf("%v", err)
		}
		y := x.shape.Clone()
		y[axis] = u
		c.set(0, x.dt, y)
		c.set(2, graph.Int64, graph.Shape{x.shape[axis]})
	} else {
		c.set(0, x.dt, graph.Shape{u})
		if x.shape != nil {
			c.set(2, graph.Int64, graph.Shape{product(x.shape)})
		} else {
			c.set(2, graph.Int64, graph.Shape{unknownDim})
		}
		if a != nil {
			c.set(0, x.dt, nil)
		}
	}
	c.set(1, graph.Int64, graph.Shape{u})
	c.set(3, graph.Int64, graph.Shape{u})
	return nil
}

// det: [*, M, M] → [*].
func det(c *nctx) error {
	x := c.shapedInput(2, math.MaxInt)
	if x == nil {
		return nil
	}
	c.set(0, x.dt, x.shape[:len(x.shape)-2].Clone())
	return nil
}

// lossOp: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss. scores [N, C, d...],
// labels [N, d...]: the loss is a scalar, or the labels' shape with reduction "none";
// SoftmaxCrossEntropyLoss's log_prob has the scores' shape.
func lossOp(c *nctx) error {
	x, lab := c.in(0), c.in(1)
	if x == nil || lab == nil {
		return nil
	}
	if c.n.AttrString("reduction", "mean") == "none" {
		c.set(0, x.dt, lab.shape.Clone())
	} else {
		c.set(0, x.dt, graph.Shape{})
	}
	c.set(1, x.dt, x.shape.Clone())
	return nil
}

// attention (opset 23): Q, K, V as [B, heads, S, head] or [B, S, heads·head].
func attention(c *nctx) error {
	q, k, v := c.in(0), c.in(1), c.in(2)
	if q == nil || k == nil || v == nil {
		return nil
	}
	if q.shape == nil || k.shape == nil || v.shape == nil || len(q.shape) != len(k.shape) || len(k.shape) != len(v.shape) ||
		(len(q.shape) != 3 && len(q.shape) != 4) {
		for i := 0; i < c.nout(); i++ {
			c.set(i, q.dt, nil)
		}
		return nil
	}
	b, sq, skv := q.shape[0], q.shape[len(q.shape)-2], k.shape[len(k.shape)-2]
	var hq, hkv, dk, dv graph.Dim
	if len(q.shape) == 4 {
		hq, hkv, dk, dv = q.shape[1], k.shape[1], k.shape[3], v.shape[3]
		sq, skv = q.shape[2], k.shape[2]
	} else {
		hq, hkv = graph.Static(c.n.AttrInt("q_num_heads", 0)), graph.Static(c.n.AttrInt("kv_num_heads", 0))
		if hq.Value <= 0 || hkv.Value <= 0 {
			return c.errorf("3-D Attention needs q_num_heads and kv_num_heads")
		}
		dk, dv = dimDiv(k.shape[2], hkv), dimDiv(v.shape[2], hkv)
	}
	total := skv
	if pk := c.in(4); pk != nil {
		total = unknownDim
		if pk.shape != nil && len(pk.shape) == 4 {
			total = dimAdd(pk.shape[2], skv)
		}
	}
	if len(q.shape) == 4 {
		c.set(0, q.dt, graph.Shape{b, hq, sq, dv})
	} else {
		c.set(0, q.dt, graph.Shape{b, sq, dimMul(hq, dv)})
	}
	c.set(1, k.dt, graph.Shape{b, hkv, total, dk})
	c.set(2, v.dt, graph.Shape{b, hkv, total, dv})
	c.set(3, q.dt, graph.Shape{b, hq, sq, total})
	return nil
}

// --- sequences and optionals ----------------------------------------------------------

func seqType(dt graph.DType) string { return "seq(tensor(" + dt.String() + "))" }

// setSeq records output i as a sequence whose elements are described by elem (dtype and
// the shape they all share) and whose length is n.
func (c *nctx) setSeq(i int, elem tinfo, n graph.Dim) {
	t := c.set(i, graph.Undefined, nil)
	if t == nil {
		return
	}
	e := elem
	e.ival, e.fval = nil, nil
	t.nonTensor, t.elem, t.seqLen = seqType(elem.dt), &e, n
}

// seqOf returns the element info and length of a sequence input.
func (c *nctx) seqOf(i int) (tinfo, graph.Dim, bool) {
	s := c.in(i)
	if s == nil || s.elem == nil {
		return tinfo{}, unknownDim, false
	}
	return *s.elem, s.seqLen, true
}

func sequenceOp(c *nctx) error {
	switch c.n.OpType {
	case optype.SequenceEmpty:
		c.setSeq(0, tinfo{dt: graph.DType(c.n.AttrInt("dtype", int64(graph.Float)))}, graph.Static(0))
	case optype.SequenceConstruct:
		var e tinfo
		for i := 0; i < c.nin(); i++ {
			x := c.in(i)
			if x == nil {
				return nil
			}
			if i == 0 {
				e = tinfo{dt: x.dt, shape: x.shape.Clone()}
			} else {
				e = mergeInfo(e, *x)
			}
		}
		c.setSeq(0, e, graph.Static(int64(c.nin())))
	case optype.SequenceInsert:
		e, n, ok := c.seqOf(0)
		x := c.in(1)
		if !ok || x == nil {
			return nil
		}
		if n.Known() && n.Value == 0 {
			e = tinfo{dt: x.dt, shape: x.shape.Clone()}
		} else {
			e = mergeInfo(e, *x)
		}
		c.setSeq(0, e, dimAdd(n, graph.Static(1)))
	case optype.SequenceErase:
		e, n, ok := c.seqOf(0)
		if !ok {
			return nil
		}
		if n.Known() && n.Value > 0 {
			n = graph.Static(n.Value - 1)
		} else {
			n = unknownDim
		}
		c.setSeq(0, e, n)
	case optype.SequenceAt:
		e, _, ok := c.seqOf(0)
		if ok {
			c.set(0, e.dt, e.shape.Clone())
		}
	case optype.SequenceLength:
		_, n, ok := c.seqOf(0)
		var val []graph.Dim
		if ok && n.Known() {
			val = []graph.Dim{n}
		}
		c.setInts(0, graph.Int64, graph.Shape{}, val)
	case optype.ConcatFromSequence:
		e, n, ok := c.seqOf(0)
		if !ok {
			return nil
		}
		if e.shape == nil {
			c.set(0, e.dt, nil)
			return nil
		}
		axis := c.n.AttrInt("axis", 0)
		if c.n.AttrInt("new_axis", 0) != 0 {
			a, err := normAxis(axis, len(e.shape)+1)
			if err != nil {
				return c.errorf("%v", err)
			}
			c.set(0, e.dt, append(append(e.shape[:a:a], n), e.shape[a:]...))
			return nil
		}
		a, err := normAxis(axis, len(e.shape))
		if err != nil {
			return c.errorf("%v", err)
		}
		out := e.shape.Clone()
		out[a] = dimMul(n, e.shape[a])
		c.set(0, e.dt, out)
	case optype.SplitToSequence:
		return splitToSequence(c)
	}
	return nil
}

func splitToSequence(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil {
		c.setSeq(0, tinfo{dt: x.dt}, unknownDim)
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", 0), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	d := x.shape[axis]
	e := tinfo{dt: x.dt, shape: x.shape.Clone()}
	n := unknownDim
	sp := c.in(1)
	switch {
	case sp == nil:
		// Pieces of size 1; keepdims=0 drops the axis.
		n = d
		e.shape[axis] = graph.Static(1)
		if c.n.AttrInt("keepdims", 1) == 0 {
			e.shape = append(e.shape[:axis:axis], e.shape[axis+1:]...)
		}
	case sp.shape != nil && len(sp.shape) == 0:
		// A scalar: chunks of that size, the last one possibly smaller.
		e.shape[axis] = unknownDim
		if v, ok := sp.ints(); ok && len(v) == 1 && v[0] > 0 && d.Known() {
			n = graph.Static(ceilDiv(d.Value, v[0]))
			if d.Value%v[0] == 0 {
				e.shape[axis] = graph.Static(v[0])
			}
		}
	default:
		e.shape[axis] = unknownDim
		if v, ok := sp.ints(); ok {
			n = graph.Static(int64(len(v)))
			same := len(v) > 0
			for _, s := range v {
				same = same && s == v[0]
			}
			if same {
				e.shape[axis] = graph.Static(v[0])
			}
		} else if sp.shape != nil && len(sp.shape) == 1 {
			n = sp.shape[0]
		}
	}
	c.setSeq(0, e, n)
	return nil
}

func optionalOp(c *nctx) error {
	switch c.n.OpType {
	case optype.Optional:
		x := c.in(0)
		if x == nil {
			if tp := c.attrProto("type"); tp != nil && tp.GetTp() != nil {
				dt, s, _ := c.m.typeInfo(tp.GetTp())
				t := c.set(0, graph.Undefined, nil)
				if t != nil {
					t.nonTensor = "optional(" + describeType(tp.GetTp()) + ")"
					t.elem = &tinfo{dt: dt, shape: s}
				}
			}
			return nil
		}
		t := c.set(0, graph.Undefined, nil)
		if t != nil {
			e := tinfo{dt: x.dt, shape: x.shape.Clone(), nonTensor: x.nonTensor, elem: x.elem, seqLen: x.seqLen}
			desc := "tensor(" + x.dt.String() + ")"
			if x.nonTensor != "" {
				desc = x.nonTensor
			}
			t.nonTensor, t.elem = "optional("+desc+")", &e
		}
	case optype.OptionalHasElement:
		c.set(0, graph.Bool, graph.Shape{})
	case optype.OptionalGetElement:
		x := c.in(0)
		if x == nil {
			return nil
		}
		if x.elem == nil || !strings.HasPrefix(x.nonTensor, "optional(") {
			return identity(c) // a plain tensor passes through (opset 18)
		}
		e := *x.elem
		if t := c.set(0, e.dt, e.shape.Clone()); t != nil {
			t.nonTensor, t.elem, t.seqLen = e.nonTensor, e.elem, e.seqLen
		}
	}
	return nil
}

// --- strings -----------------------------------------------------------------------------

func stringOp(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	switch c.n.OpType {
	case optype.RegexFullMatch:
		c.set(0, graph.Bool, x.shape.Clone())
	case optype.StringConcat:
		return elementwise2(c, graph.String, nil, nil)
	case optype.StringSplit:
		// The number of substrings depends on the data.
		if x.shape != nil {
			c.set(0, graph.String, append(x.shape.Clone(), unknownDim))
		} else {
			c.set(0, graph.String, nil)
		}
		c.set(1, graph.Int64, x.shape.Clone())
	case optype.StringNormalizer:
		// Stop words remove elements: the last dim depends on the data then.
		s := x.shape.Clone()
		if a := c.n.Attr("stopwords"); a != nil && len(a.Strings) > 0 && len(s) > 0 {
			s[len(s)-1] = unknownDim
		}
		c.set(0, graph.String, s)
	}
	return nil
}
