package ingest

import (
	"fmt"
	"math"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// shapeFunc infers a node's output types, shapes and (for small integer tensors) values.
// It leaves outputs unknown when its inputs are unknown; a *shapeError reports inputs that
// contradict the operator's rules.
type shapeFunc func(c *nctx) error

// shapeRules binds the registry's shape rules (ops.Entry.Shape) to their functions.
var shapeRules map[ops.ShapeRule]shapeFunc

func init() {
	shapeRules = map[ops.ShapeRule]shapeFunc{
		"affineGrid":                affineGrid,
		"argReduce":                 argReduce,
		"arith":                     func(c *nctx) error { return binaryArith(intArith[c.n.OpType])(c) },
		"attention":                 attention,
		"batchNorm":                 batchNorm,
		"boolSame":                  boolSame,
		"cast":                      cast,
		"castLike":                  castLike,
		"centerCropPad":             centerCropPad,
		"col2Im":                    col2Im,
		"compare":                   func(c *nctx) error { return compare(intCompare[c.n.OpType])(c) },
		"compress":                  compress,
		"concat":                    concat,
		"constant":                  constant,
		"constantOfShape":           constantOfShape,
		"conv":                      conv,
		"convTranspose":             convTranspose,
		"depthToSpace":              depthToSpace,
		"dequantize":                dequantize,
		"det":                       det,
		"dft":                       dft,
		"dropout":                   dropout,
		"dynQuantize":               dynQuantize,
		"einsum":                    einsum,
		"expand":                    expand,
		"eyeLike":                   eyeLike,
		"flatten":                   flatten,
		"fusedMatmul":               fusedMatmul,
		"gather":                    gather,
		"gatherElements":            gatherElements,
		"gatherND":                  gatherND,
		"gemm":                      gemm,
		"globalPool":                globalPool,
		"gridSample":                gridSample,
		"groupNorm":                 groupNorm,
		"identity":                  identity,
		"ifOp":                      ifOp,
		"layerNorm":                 layerNorm,
		"loopOp":                    loopOp,
		"lossOp":                    lossOp,
		"matmul":                    matmul(graph.Undefined),
		"matmulInteger":             matmul(graph.Int32),
		"maxUnpool":                 maxUnpool,
		"melWeightMatrix":           melWeightMatrix,
		"minMax":                    minMax,
		"multinomial":               multinomial,
		"nms":                       nms,
		"nonZero":                   nonZero,
		"not":                       not,
		"oneHot":                    oneHot,
		"optionalOp":                optionalOp,
		"pad":                       pad,
		"pool":                      pool,
		"qlinearMatmul":             qlinearMatmul,
		"quantize":                  quantize,
		"randomLike":                randomLike,
		"randomShape":               randomShape,
		"rangeOp":                   rangeOp,
		"reduce":                    reduce,
		"reshape":                   reshape,
		"resize":                    resize,
		"rnn":                       rnn,
		"roiPool":                   roiPool,
		"sameAsInput0":              sameAsInput0,
		"scanOp":                    scanOp,
		"sequenceOp":                sequenceOp,
		"shapeOp":                   shapeOp,
		"sizeOp":                    sizeOp,
		"skipLayerNorm":             skipLayerNorm,
		"slice":                     slice,
		"spaceToDepth":              spaceToDepth,
		"split":                     split,
		"squeeze":                   squeeze,
		"stft":                      stft,
		"stringOp":                  stringOp,
		"tile":                      tile,
		"topK":                      topK,
		"transpose":                 transpose,
		"unaryFold":                 unaryFold,
		"unique":                    unique,
		"unsqueeze":                 unsqueeze,
		"variadicArith":             variadicArith,
		"where":                     where,
		"groupQueryAttention":       groupQueryAttention,
		"multiHeadAttention":        multiHeadAttention,
		"msAttention":               msAttention,
		"matMulNBits":               matMulNBits,
		"gatherBlockQuantized":      gatherBlockQuantized,
		"embedLayerNorm":            embedLayerNorm,
		"matMulToFloat":             matMulToFloat,
		"qGemm":                     qGemm,
		"nhwcConv":                  nhwcConv,
		"qlinearBinary":             qlinearBinary,
		"qlinearConcat":             qlinearConcat,
		"biasSplitGelu":             biasSplitGelu,
		"packedMultiHeadAttention":  packedMultiHeadAttention,
		"decoderMaskedMHA":          decoderMaskedMHA,
		"gatedRelativePositionBias": gatedRelativePositionBias,
		"sparseAttention":           sparseAttention,
		"qlinearPool":               qlinearPool,
		"window":                    window,
	}
}

// opShapeFunc is the shape function of op in domain, nil when the registry has no shape
// rule for it.
func opShapeFunc(domain, op string) shapeFunc {
	if e := ops.Lookup(domain, op, 0); e != nil {
		return shapeRules[e.Shape]
	}
	return nil
}

// --- elementwise -----------------------------------------------------------------------

func sameAsInput0(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	c.set(0, x.dt, x.shape.Clone())
	return nil
}

// unaryFloat and unaryInt fold elementwise ops on small known values (shape arithmetic
// such as floor(S/2) computed in floats).
var unaryFloat = map[string]func(float64) float64{
	optype.Floor: math.Floor, optype.Ceil: math.Ceil, optype.Round: math.RoundToEven, optype.Neg: func(x float64) float64 { return -x },
	optype.Abs: math.Abs, optype.Sqrt: math.Sqrt, optype.Reciprocal: func(x float64) float64 { return 1 / x },
	optype.Relu: func(x float64) float64 { return math.Max(x, 0) },
	optype.Sign: func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	},
}

var unaryInt = map[string]func(int64) int64{
	optype.Neg: func(x int64) int64 { return -x },
	optype.Abs: func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	},
	optype.Relu: func(x int64) int64 { return max(x, 0) },
	optype.Sign: func(x int64) int64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	},
	optype.Floor: func(x int64) int64 { return x }, optype.Ceil: func(x int64) int64 { return x },
	optype.Round: func(x int64) int64 { return x },
}

func unaryFold(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	t := c.set(0, x.dt, x.shape.Clone())
	if t == nil {
		return nil
	}
	if f := unaryInt[c.n.OpType]; f != nil && x.ival != nil && !x.dt.IsFloat() {
		t.ival = mapKnown(x.ival, f)
	} else if f := unaryFloat[c.n.OpType]; x.fval != nil && x.dt.IsFloat() {
		t.fval = make([]float64, len(x.fval))
		for i, v := range x.fval {
			t.fval[i] = f(v)
		}
	}
	return nil
}

func identity(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	t := c.set(0, x.dt, x.shape.Clone())
	if t != nil {
		t.ival, t.fval, t.nonTensor, t.elem, t.seqLen = x.ival, x.fval, x.nonTensor, x.elem, x.seqLen
	}
	return nil
}

func boolSame(c *nctx) error {
	if x := c.in(0); x != nil {
		c.set(0, graph.Bool, x.shape.Clone())
	}
	return nil
}

func not(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	var val []graph.Dim
	if v, ok := x.ints(); ok {
		val = make([]graph.Dim, len(v))
		for i, e := range v {
			val[i] = graph.Static(b2i(e == 0))
		}
	}
	c.setInts(0, graph.Bool, x.shape.Clone(), val)
	return nil
}

func dropout(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	c.set(0, x.dt, x.shape.Clone())
	mask := graph.Bool
	if c.opset < 10 {
		mask = x.dt // Dropout-7 masks have the input's type
	}
	c.set(1, mask, x.shape.Clone())
	return nil
}

func batchNorm(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	c.set(0, x.dt, x.shape.Clone())
	if s := c.in(3); s != nil { // training mode outputs: running mean and var, shape [C]
		c.set(1, s.dt, s.shape.Clone())
		c.set(2, s.dt, s.shape.Clone())
	}
	return nil
}

func layerNorm(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	c.set(0, x.dt, x.shape.Clone())
	if c.nout() == 1 || x.shape == nil {
		return nil
	}
	axis, err := normAxis(c.n.AttrInt("axis", -1), len(x.shape))
	if err != nil {
		return c.errorf("%v", err)
	}
	stat := x.shape.Clone()
	for i := axis; i < len(stat); i++ {
		stat[i] = graph.Static(1)
	}
	st := graph.DType(c.n.AttrInt("stash_type", 1))
	c.set(1, st, stat)
	c.set(2, st, stat.Clone())
	return nil
}

func groupNorm(c *nctx) error { return sameAsInput0(c) }

// skipLayerNorm (com.microsoft): output, mean and inverse std dev over the last axis
// (float, last dim 1), and the sum input + skip (+ bias).
func skipLayerNorm(c *nctx) error {
	x := c.in(0)
	if x == nil {
		return nil
	}
	c.set(0, x.dt, x.shape.Clone())
	if x.shape != nil && len(x.shape) > 0 {
		stat := x.shape.Clone()
		stat[len(stat)-1] = graph.Static(1)
		c.set(1, graph.Float, stat)
		c.set(2, graph.Float, stat.Clone())
	}
	c.set(3, x.dt, x.shape.Clone())
	return nil
}

func cast(c *nctx) error {
	x := c.in(0)
	to := graph.DType(c.n.AttrInt("to", 0))
	if x == nil {
		return nil
	}
	t := c.set(0, to, x.shape.Clone())
	if t == nil {
		return nil
	}
	switch {
	case to.IsInteger() || to == graph.Bool:
		if x.ival != nil {
			t.ival = x.ival
			if to == graph.Bool {
				t.ival = mapKnown(x.ival, func(v int64) int64 { return b2i(v != 0) })
			}
		} else if x.fval != nil {
			t.ival = make([]graph.Dim, len(x.fval))
			for i, f := range x.fval {
				if math.IsNaN(f) || math.IsInf(f, 0) {
					t.ival = nil
					break
				}
				v := int64(f) // truncation toward zero, as C casts
				if to == graph.Bool {
					v = b2i(f != 0)
				}
				t.ival[i] = graph.Static(v)
			}
		}
	case to.IsFloat():
		if f, ok := x.numbers(); ok {
			t.fval = f
		}
	}
	return nil
}

func castLike(c *nctx) error {
	x, like := c.in(0), c.in(1)
	if x == nil || like == nil {
		return nil
	}
	c.set(0, like.dt, x.shape.Clone())
	return nil
}

func mapKnown(v []graph.Dim, f func(int64) int64) []graph.Dim {
	out := make([]graph.Dim, len(v))
	for i, d := range v {
		if vKnown(d) {
			out[i] = graph.Static(f(d.Value))
		} else {
			out[i] = vUnknown("")
		}
	}
	return out
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// intArith folds integer elementwise arithmetic on small values (shape computations), in
// value encoding: unknown operands give unknown results except where an identity keeps a
// symbolic name (x·1, x+0, x−0, x/1).
var intArith = map[string]func(a, b graph.Dim) graph.Dim{
	optype.Add: func(a, b graph.Dim) graph.Dim {
		switch {
		case vKnown(a) && vKnown(b):
			return vInt(a.Value + b.Value)
		case vKnown(a) && a.Value == 0:
			return b
		case vKnown(b) && b.Value == 0:
			return a
		}
		return symValue('+', a, b)
	},
	optype.Sub: func(a, b graph.Dim) graph.Dim {
		switch {
		case vKnown(a) && vKnown(b):
			return vInt(a.Value - b.Value)
		case vKnown(b) && b.Value == 0:
			return a
		case !vKnown(a) && a == b && a.Param != "":
			return graph.Static(0)
		}
		return symValue('-', a, b)
	},
	optype.Mul: func(a, b graph.Dim) graph.Dim {
		switch {
		case vKnown(a) && vKnown(b):
			return vInt(a.Value * b.Value)
		case vKnown(a) && a.Value == 1:
			return b
		case vKnown(b) && b.Value == 1:
			return a
		case (vKnown(a) && a.Value == 0) || (vKnown(b) && b.Value == 0):
			return graph.Static(0)
		}
		return symValue('*', a, b)
	},
	optype.Div: func(a, b graph.Dim) graph.Dim { // ONNX integer Div truncates toward zero
		switch {
		case vKnown(a) && vKnown(b) && b.Value != 0:
			return vInt(a.Value / b.Value)
		case vKnown(b) && b.Value == 1:
			return a
		case !vKnown(a) && a == b && a.Param != "":
			return graph.Static(1)
		}
		return symValue('/', a, b) // exact quotients only (2*batch / 2)
	},
	optype.Mod: func(a, b graph.Dim) graph.Dim {
		if vKnown(a) && vKnown(b) && b.Value != 0 {
			r := a.Value % b.Value
			if r != 0 && (r < 0) != (b.Value < 0) {
				r += b.Value // fmod=0: sign of the divisor
			}
			return vInt(r)
		}
		return vUnknown("")
	},
}

// symValue computes a value element symbolically (see symexpr.go), or unknown.
func symValue(op byte, a, b graph.Dim) graph.Dim {
	if r, ok := symArith(op, a, b, true); ok {
		return r
	}
	return vUnknown("")
}

func fmodInt(a, b graph.Dim) graph.Dim {
	if vKnown(a) && vKnown(b) && b.Value != 0 {
		return vInt(a.Value % b.Value)
	}
	return vUnknown("")
}

var intCompare = map[string]func(a, b int64) bool{
	optype.Equal:          func(a, b int64) bool { return a == b },
	optype.Less:           func(a, b int64) bool { return a < b },
	optype.Greater:        func(a, b int64) bool { return a > b },
	optype.LessOrEqual:    func(a, b int64) bool { return a <= b },
	optype.GreaterOrEqual: func(a, b int64) bool { return a >= b },
	optype.And:            func(a, b int64) bool { return a != 0 && b != 0 },
	optype.Or:             func(a, b int64) bool { return a != 0 || b != 0 },
	optype.Xor:            func(a, b int64) bool { return (a != 0) != (b != 0) },
}

// elementwise2 broadcasts two inputs and folds their values with f when both are known.
func elementwise2(c *nctx, outType graph.DType, f func(a, b graph.Dim) graph.Dim,
	ff func(a, b float64) float64) error {
	a, b := c.in(0), c.in(1)
	if a == nil || b == nil {
		return nil
	}
	shape, err := broadcast(a.shape, b.shape)
	if err != nil {
		return c.errorf("%v", err)
	}
	if outType == graph.Undefined {
		outType = a.dt
	}
	t := c.set(0, outType, shape)
	if t == nil || !shape.Known() {
		return nil
	}
	n, err := shape.NumElements()
	if err != nil || n > maxFoldElements {
		return nil
	}
	if !a.shape.Known() || !b.shape.Known() {
		return nil
	}
	if f != nil && a.ival != nil && b.ival != nil {
		t.ival = broadcastValues(a.shape, a.ival, b.shape, b.ival, shape, f)
		return nil
	}
	if ff != nil && (outType.IsFloat()) {
		av, aok := a.numbers()
		bv, bok := b.numbers()
		if aok && bok {
			t.fval = broadcastFloats(a.shape, av, b.shape, bv, shape, ff)
		}
	}
	return nil
}

// broadcastValues applies f over broadcast element pairs.
func broadcastValues(as graph.Shape, av []graph.Dim, bs graph.Shape, bv []graph.Dim, out graph.Shape, f func(a, b graph.Dim) graph.Dim) []graph.Dim {
	n, _ := out.NumElements()
	res := make([]graph.Dim, n)
	dims := out.Dims()
	for i := int64(0); i < n; i++ {
		res[i] = f(av[bcastIndex(i, dims, as)], bv[bcastIndex(i, dims, bs)])
	}
	return res
}

func broadcastFloats(as graph.Shape, av []float64, bs graph.Shape, bv []float64, out graph.Shape, f func(a, b float64) float64) []float64 {
	n, _ := out.NumElements()
	res := make([]float64, n)
	dims := out.Dims()
	for i := int64(0); i < n; i++ {
		res[i] = f(av[bcastIndex(i, dims, as)], bv[bcastIndex(i, dims, bs)])
	}
	return res
}

// bcastIndex maps a flat index of the output to the flat index in an input of shape s.
func bcastIndex(i int64, out []int64, s graph.Shape) int64 {
	var idx, stride int64 = 0, 1
	r := len(out)
	for k := r - 1; k >= 0; k-- {
		coord := i % out[k]
		i /= out[k]
		j := k - (r - len(s))
		if j < 0 {
			continue
		}
		d := s[j].Value
		if d != 1 {
			idx += coord * stride
		}
		stride *= d
	}
	return idx
}

var floatArith = map[string]func(a, b float64) float64{
	optype.Add: func(a, b float64) float64 { return a + b },
	optype.Sub: func(a, b float64) float64 { return a - b },
	optype.Mul: func(a, b float64) float64 { return a * b },
	optype.Div: func(a, b float64) float64 { return a / b },
}

func binaryArith(f func(a, b graph.Dim) graph.Dim) shapeFunc {
	return func(c *nctx) error {
		var ff func(a, b float64) float64
		if c.n.OpType != "" {
			ff = floatArith[c.n.OpType]
		}
		fi := f
		if c.n.OpType == optype.Mod && c.n.AttrInt("fmod", 0) != 0 {
			fi = fmodInt // the remainder takes the dividend's sign
		}
		return elementwise2(c, graph.Undefined, fi, ff)
	}
}

func compare(f func(a, b int64) bool) shapeFunc {
	return func(c *nctx) error {
		return elementwise2(c, graph.Bool, func(a, b graph.Dim) graph.Dim {
			switch {
			case vKnown(a) && vKnown(b):
				return graph.Static(b2i(f(a.Value, b.Value)))
			case a == b && a.Param != "":
				return graph.Static(b2i(f(0, 0))) // a dim compared with itself
			}
			return vUnknown("")
		}, nil)
	}
}

func minMax(c *nctx) error {
	if c.nin() == 2 {
		return elementwise2(c, graph.Undefined, minMaxDim(c.n.OpType == optype.Max), nil)
	}
	return variadicArith(c)
}

func variadicArith(c *nctx) error {
	var shapes []graph.Shape
	var dt graph.DType
	for i := 0; i < c.nin(); i++ {
		x := c.in(i)
		if x == nil {
			return nil
		}
		if i == 0 {
			dt = x.dt
		}
		shapes = append(shapes, x.shape)
	}
	if len(shapes) == 0 {
		return nil
	}
	s, err := broadcast(shapes...)
	if err != nil {
		return c.errorf("%v", err)
	}
	t := c.set(0, dt, s)
	// Fold Sum, Min and Max of small integer values pairwise.
	var f func(a, b graph.Dim) graph.Dim
	switch c.n.OpType {
	case optype.Sum:
		f = intArith[optype.Add]
	case optype.Min, optype.Max:
		f = minMaxDim(c.n.OpType == optype.Max)
	}
	if _, small := foldSize(s); t == nil || f == nil || !small || dt.IsFloat() {
		return nil
	}
	acc := c.in(0)
	accShape, accVal := acc.shape, acc.ival
	for i := 1; i < c.nin() && accVal != nil; i++ {
		x := c.in(i)
		if x.ival == nil || !x.shape.Known() || !accShape.Known() {
			return nil
		}
		bs, _ := broadcast(accShape, x.shape)
		accVal = broadcastValues(accShape, accVal, x.shape, x.ival, bs, f)
		accShape = bs
	}
	t.ival = accVal
	return nil
}

// minMaxDim folds Min or Max of two value elements.
func minMaxDim(isMax bool) func(a, b graph.Dim) graph.Dim {
	return func(a, b graph.Dim) graph.Dim {
		switch {
		case vKnown(a) && vKnown(b):
			if (a.Value > b.Value) == isMax {
				return a
			}
			return b
		case a == b && a.Param != "":
			return a
		}
		return vUnknown("")
	}
}

func where(c *nctx) error {
	cond, x, y := c.in(0), c.in(1), c.in(2)
	if cond == nil || x == nil || y == nil {
		return nil
	}
	s, err := broadcast(cond.shape, x.shape, y.shape)
	if err != nil {
		return c.errorf("%v", err)
	}
	t := c.set(0, x.dt, s)
	if t == nil || !s.Known() {
		return nil
	}
	n, _ := s.NumElements()
	if n > maxFoldElements || cond.ival == nil || x.ival == nil || y.ival == nil {
		return nil
	}
	dims := s.Dims()
	val := make([]graph.Dim, n)
	for i := int64(0); i < n; i++ {
		cv := cond.ival[bcastIndex(i, dims, cond.shape)]
		xv, yv := x.ival[bcastIndex(i, dims, x.shape)], y.ival[bcastIndex(i, dims, y.shape)]
		switch {
		case vKnown(cv) && cv.Value != 0:
			val[i] = xv
		case vKnown(cv):
			val[i] = yv
		case xv == yv && (vKnown(xv) || xv.Param != ""):
			val[i] = xv // either way
		default:
			val[i] = vUnknown("")
		}
	}
	t.ival = val
	return nil
}

// --- linear algebra --------------------------------------------------------------------

// matmulShape applies numpy matmul rules: 1-D operands are promoted and the promoted axis
// removed; batch dimensions broadcast.
func matmulShape(a, b graph.Shape) (graph.Shape, error) {
	if a == nil || b == nil {
		return nil, nil
	}
	if len(a) == 0 || len(b) == 0 {
		return nil, errorString("MatMul operands cannot be scalars")
	}
	aa, bb := a, b
	if len(a) == 1 {
		aa = graph.Shape{graph.Static(1), a[0]}
	}
	if len(b) == 1 {
		bb = graph.Shape{b[0], graph.Static(1)}
	}
	ka, kb := aa[len(aa)-1], bb[len(bb)-2]
	if ka.Known() && kb.Known() && ka.Value != kb.Value {
		return nil, errorString("inner dimensions " + ka.String() + " and " + kb.String() + " differ")
	}
	batch, err := broadcast(aa[:len(aa)-2], bb[:len(bb)-2])
	if err != nil {
		return nil, err
	}
	out := append(graph.Shape{}, batch...)
	if len(a) != 1 {
		out = append(out, aa[len(aa)-2])
	}
	if len(b) != 1 {
		out = append(out, bb[len(bb)-1])
	}
	return out, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

func matmul(outType graph.DType) shapeFunc {
	return func(c *nctx) error {
		a, b := c.in(0), c.in(1)
		if a == nil || b == nil {
			return nil
		}
		s, err := matmulShape(a.shape, b.shape)
		if err != nil {
			return c.errorf("%v", err)
		}
		dt := outType
		if dt == graph.Undefined {
			dt = a.dt
		}
		c.set(0, dt, s)
		return nil
	}
}

func qlinearMatmul(c *nctx) error {
	a, b, zp := c.in(0), c.in(3), c.in(7)
	if a == nil || b == nil {
		return nil
	}
	s, err := matmulShape(a.shape, b.shape)
	if err != nil {
		return c.errorf("%v", err)
	}
	dt := a.dt
	if zp != nil {
		dt = zp.dt
	}
	c.set(0, dt, s)
	return nil
}

func fusedMatmul(c *nctx) error {
	a, b := c.in(0), c.in(1)
	if a == nil || b == nil || a.shape == nil || b.shape == nil {
		return nil
	}
	as, bs := a.shape.Clone(), b.shape.Clone()
	if c.n.AttrInt("transA", 0) != 0 && len(as) >= 2 {
		as[len(as)-1], as[len(as)-2] = as[len(as)-2], as[len(as)-1]
	}
	if c.n.AttrInt("transB", 0) != 0 && len(bs) >= 2 {
		bs[len(bs)-1], bs[len(bs)-2] = bs[len(bs)-2], bs[len(bs)-1]
	}
	s, err := matmulShape(as, bs)
	if err != nil {
		return c.errorf("%v", err)
	}
	c.set(0, a.dt, s)
	return nil
}

func gemm(c *nctx) error {
	a, b := c.in(0), c.in(1)
	if a == nil || b == nil {
		return nil
	}
	return gemmShape(c, a, b, a.dt)
}

// gemmShape sets output 0 of a Gemm-like node (Gemm, QGemm) to a·b with the node's transA and
// transB, of type dt: [M, N] from 2-D operands whose inner dimensions agree.
func gemmShape(c *nctx, a, b *tinfo, dt graph.DType) error {
	if a.shape == nil || b.shape == nil {
		c.set(0, dt, nil)
		return nil
	}
	if len(a.shape) != 2 || len(b.shape) != 2 {
		return c.errorf("%s needs 2-D operands, got %v and %v", c.n.OpType, a.shape, b.shape)
	}
	m, ka := a.shape[0], a.shape[1]
	if c.n.AttrInt("transA", 0) != 0 {
		m, ka = ka, m
	}
	kb, n := b.shape[0], b.shape[1]
	if c.n.AttrInt("transB", 0) != 0 {
		kb, n = n, kb
	}
	if ka.Known() && kb.Known() && ka.Value != kb.Value {
		return c.errorf("inner dimensions %v and %v differ", ka, kb)
	}
	c.set(0, dt, graph.Shape{m, n})
	return nil
}

// --- convolution and pooling -----------------------------------------------------------

// windowOut computes the output size of one spatial axis of a convolution or pool exactly
// as ONNX Runtime's kernels do (pool_attributes.h, conv_attributes.h), or says why ORT
// rejects the node:
//
//	dk = dilation·(k−1) + 1;  auto_pad SAME_*: pads = (ceil(in/stride)−1)·stride + k − in
//	(ORT pads for the undilated kernel), VALID: pads = 0
//	pool: out = trunc((in + pads − dk) / stride) + 1, with ceil_mode ceil(…) + 1, minus one
//	      when the last window would start past the input and its head padding; out < 0 is
//	      an error, out = 0 an empty tensor
//	conv: out = floor((in + pads − dk) / stride) + 1, which must be positive; SAME_* with
//	      a dilation other than 1 is an error
//	MaxPool: negative SAME_* pads (a kernel smaller than the stride) are an error
func windowOut(op string, in graph.Dim, k, stride, dil, padB, padE int64, autoPad string, ceilMode bool) (graph.Dim, error) {
	isPool := strings.HasSuffix(op, "Pool")
	same := autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"
	if same && !isPool && dil != 1 {
		return unknownDim, errorString("auto_pad " + autoPad + " with dilations other than 1 (ONNX Runtime rejects it)")
	}
	if !in.Known() {
		// With stride 1 the output is the input plus a constant (H - 2 for a 3-wide
		// unpadded window); a larger stride divides, which no symbolic name expresses.
		switch {
		case stride != 1:
			return unknownDim, nil
		case same && dil == 1:
			return in, nil
		case same:
			// ORT pads for the undilated kernel: pads k − 1 over in.
			return dimPlus(in, -(dil-1)*(k-1)), nil
		case autoPad == "VALID":
			return dimPlus(in, -dil*(k-1)), nil
		}
		return dimPlus(in, padB+padE-dil*(k-1)), nil
	}
	x := in.Value
	switch {
	case same:
		padB = (ceilDiv(x, stride)-1)*stride + k - x
		padE = 0
		if autoPad == "SAME_LOWER" {
			padB, padE = (padB+1)/2, padB-(padB+1)/2
		} else {
			padB, padE = padB/2, padB-padB/2
		}
		if op == optype.MaxPool && (padB < 0 || padE < 0) {
			return unknownDim, errorString(fmt.Sprintf("auto_pad %s gives negative pads (kernel %d smaller than stride %d; ONNX Runtime rejects it)", autoPad, k, stride))
		}
	case autoPad == "VALID":
		padB, padE = 0, 0
	}
	num := x + padB + padE - dil*(k-1) - 1
	tooLarge := func() (graph.Dim, error) {
		return unknownDim, errorString(fmt.Sprintf("the window (kernel %d, dilation %d, so %d wide) is larger than the padded input (%d + pads %d + %d)",
			k, dil, dil*(k-1)+1, x, padB, padE))
	}
	if !isPool {
		if num < 0 {
			return tooLarge()
		}
		return graph.Static(num/stride + 1), nil
	}
	out := num/stride + 1 // C++ integer division: toward zero
	if ceilMode {
		out = ceilDiv(num, stride) + 1
		// The last window must start inside the input or the head padding.
		if (out-1)*stride >= x+padB {
			out--
		}
	}
	if out < 0 {
		return tooLarge()
	}
	return graph.Static(out), nil
}

// spatialParams reads kernel, strides, dilations and pads for nsp spatial axes.
func spatialParams(c *nctx, nsp int, kernel []int64) (strides, dils, pads []int64, autoPad string) {
	strides = c.n.AttrInts("strides")
	dils = c.n.AttrInts("dilations")
	pads = c.n.AttrInts("pads")
	if len(strides) != nsp {
		strides = ones(nsp)
	}
	if len(dils) != nsp {
		dils = ones(nsp)
	}
	if len(pads) != 2*nsp {
		pads = make([]int64, 2*nsp)
	}
	autoPad = c.n.AttrString("auto_pad", "NOTSET")
	for i := range strides {
		if strides[i] <= 0 {
			strides[i] = 1 // invalid; ORT rejects the model, inference must not divide by zero
		}
	}
	return
}

func allOnes(v []int64) bool {
	for _, x := range v {
		if x != 1 {
			return false
		}
	}
	return true
}

func ones(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

func conv(c *nctx) error {
	x, w := c.in(0), c.in(1)
	if c.n.OpType == optype.QLinearConv {
		w = c.in(3)
	}
	if x == nil || w == nil {
		return nil
	}
	dt := x.dt
	switch c.n.OpType {
	case optype.ConvInteger:
		dt = graph.Int32
	case optype.QLinearConv:
		if zp := c.in(7); zp != nil {
			dt = zp.dt
		}
	}
	if x.shape == nil || w.shape == nil || len(x.shape) < 3 {
		c.set(0, dt, nil)
		return nil
	}
	nsp := len(x.shape) - 2
	kernel := c.n.AttrInts("kernel_shape")
	if len(kernel) != nsp {
		if len(w.shape) != nsp+2 || !w.shape.Known() {
			c.set(0, dt, nil)
			return nil
		}
		kernel = w.shape.Dims()[2:]
	}
	strides, dils, pads, autoPad := spatialParams(c, nsp, kernel)
	out := graph.Shape{x.shape[0], w.shape[0]}
	for i := 0; i < nsp; i++ {
		d, err := windowOut(c.n.OpType, x.shape[2+i], kernel[i], strides[i], dils[i], pads[i], pads[nsp+i], autoPad, false)
		if err != nil {
			return c.errorf("spatial axis %d: %v", i, err)
		}
		out = append(out, d)
	}
	c.set(0, dt, out)
	return nil
}

func convTranspose(c *nctx) error {
	x, w := c.in(0), c.in(1)
	if x == nil || w == nil {
		return nil
	}
	if x.shape == nil || w.shape == nil || len(x.shape) < 3 || len(w.shape) != len(x.shape) {
		c.set(0, x.dt, nil)
		return nil
	}
	nsp := len(x.shape) - 2
	group := c.n.AttrInt("group", 1)
	cout := dimMul(w.shape[1], graph.Static(group))
	kernel := c.n.AttrInts("kernel_shape")
	if len(kernel) != nsp {
		if !w.shape.Known() {
			c.set(0, x.dt, nil)
			return nil
		}
		kernel = w.shape.Dims()[2:]
	}
	strides, dils, pads, autoPad := spatialParams(c, nsp, kernel)
	outPad := c.n.AttrInts("output_padding")
	if len(outPad) != nsp {
		outPad = make([]int64, nsp)
	}
	out := graph.Shape{x.shape[0], cout}
	given := c.n.AttrInts("output_shape")
	if len(given) >= nsp {
		given = given[len(given)-nsp:]
	} else {
		given = nil
	}
	same := autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"
	for i := 0; i < nsp; i++ {
		// out = stride·(in−1) + output_padding + dilation·(k−1) + 1 − pads. With auto_pad
		// SAME_* the pads make out = in·stride, but ORT never pads negatively, so a kernel
		// smaller than the stride gives min(in·stride, the unpadded size).
		in := x.shape[2+i]
		padSum := pads[i] + pads[nsp+i]
		if same || autoPad == "VALID" {
			padSum = 0
		}
		dk := (kernel[i]-1)*dils[i] + 1
		grow := outPad[i] + dk - 1 - padSum // out − in when stride is 1
		if !in.Known() {
			switch {
			case given != nil:
				out = append(out, graph.Static(given[i]))
			case strides[i] == 1 && same:
				out = append(out, in)
			case strides[i] == 1:
				out = append(out, dimPlus(in, grow))
			default:
				out = append(out, unknownDim)
			}
			continue
		}
		unpadded := strides[i]*(in.Value-1) + outPad[i] + dk
		o := unpadded - padSum
		switch {
		case given != nil:
			o, padSum = given[i], max(0, unpadded-given[i])
		case same:
			o = min(unpadded, in.Value*strides[i])
			padSum = unpadded - o
		}
		if o <= 0 {
			return c.errorf("spatial axis %d: the output size %d is not positive (ONNX Runtime rejects the node)", i, o)
		}
		// ORT checks that the convolution this one transposes maps the output back to the
		// input's size, which fails when output_padding reaches the stride.
		if back := floorDiv(o+padSum-dk, strides[i]) + 1; back != in.Value {
			return c.errorf("spatial axis %d: output size %d maps back to input size %d, not %d (output_padding %d must be smaller than stride %d; ONNX Runtime rejects the node)",
				i, o, back, in.Value, outPad[i], strides[i])
		}
		out = append(out, graph.Static(o))
	}
	c.set(0, x.dt, out)
	return nil
}

func pool(c *nctx) error {
	x := c.shapedInput(3, math.MaxInt)
	if x == nil {
		return nil
	}
	nsp := len(x.shape) - 2
	kernel := c.n.AttrInts("kernel_shape")
	if len(kernel) != nsp {
		return c.errorf("kernel_shape has %d entries for %d spatial axes", len(kernel), nsp)
	}
	strides, dils, pads, autoPad := spatialParams(c, nsp, kernel)
	for i, k := range kernel {
		if k <= 0 || pads[i] >= k || pads[nsp+i] >= k {
			return c.errorf("pads %v must be smaller than kernel_shape %v (ONNX Runtime rejects the node)", pads, kernel)
		}
	}
	ceilMode := c.n.AttrInt("ceil_mode", 0) != 0
	op := c.n.OpType
	if op == optype.MaxPool && (!allOnes(dils) || (c.nout() > 1 && c.n.Outputs[1] >= 0)) {
		// Only ORT's MLAS MaxPool (undilated, without indices) refuses negative pads.
		op = "DilatedMaxPool"
	}
	out := graph.Shape{x.shape[0], x.shape[1]}
	for i := 0; i < nsp; i++ {
		d, err := windowOut(op, x.shape[2+i], kernel[i], strides[i], dils[i], pads[i], pads[nsp+i], autoPad, ceilMode)
		if err != nil {
			return c.errorf("spatial axis %d: %v", i, err)
		}
		out = append(out, d)
	}
	c.set(0, x.dt, out)
	c.set(1, graph.Int64, out.Clone()) // MaxPool indices
	return nil
}

func globalPool(c *nctx) error {
	x := c.shapedInput(2, math.MaxInt)
	if x == nil {
		return nil
	}
	out := graph.Shape{x.shape[0], x.shape[1]}
	for i := 2; i < len(x.shape); i++ {
		out = append(out, graph.Static(1))
	}
	c.set(0, x.dt, out)
	return nil
}

// --- attribute helpers for tensor-valued attributes ------------------------------------

func (c *nctx) attrProto(name string) *onnxpb.AttributeProto {
	for _, a := range c.np.Attribute {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}
