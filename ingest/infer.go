package ingest

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// tinfo is what shape inference knows of a tensor.
type tinfo struct {
	dt    graph.DType
	shape graph.Shape // nil: rank unknown
	// ival is the value of a small integer or bool tensor, element by element in row-major
	// order, in value encoding (see valDim): an element is a number (any sign), or unknown
	// and then possibly named by a symbolic dimension (the output of Shape on a tensor of
	// shape [batch,3] is [batch, 3]).
	ival []graph.Dim
	// fval is the value of a small floating-point tensor.
	fval []float64
	// nonTensor describes sequences, maps and optionals.
	nonTensor string
	// elem describes the elements of a sequence (what they all share) or the content of an
	// optional; seqLen is a sequence's length.
	elem   *tinfo
	seqLen graph.Dim
}

func (t *tinfo) hasShape() bool { return t != nil && t.shape != nil }

// valueKnown reports whether every element of the integer value is a concrete number.
func (t *tinfo) valueKnown() bool {
	if t == nil || t.ival == nil {
		return false
	}
	for _, d := range t.ival {
		if !vKnown(d) {
			return false
		}
	}
	return true
}

// Value encoding of integer tensor elements: a known element is Dim{Value: v} for any v
// (negative numbers are ordinary values such as Reshape's -1); an unknown element has
// Value == unknownValue and carries the symbolic dimension name it equals, if any.
const unknownValue = math.MinInt64

// knownMinParam marks a known element equal to math.MinInt64, the one number whose Value
// collides with unknownValue (exporters write INT64_MIN as the end of reversing Slices).
const knownMinParam = "\x00min"

func vKnown(d graph.Dim) bool { return d.Value != unknownValue || d.Param == knownMinParam }

// vInt makes a known value element.
func vInt(v int64) graph.Dim {
	if v == unknownValue {
		return graph.Dim{Value: v, Param: knownMinParam}
	}
	return graph.Static(v)
}

func vUnknown(param string) graph.Dim { return graph.Dim{Value: unknownValue, Param: param} }

// valOfDim turns a shape dimension into a value element.
func valOfDim(d graph.Dim) graph.Dim {
	if d.Known() {
		return d
	}
	return vUnknown(d.Param)
}

// dimOfVal turns a value element into a shape dimension; negative numbers become unknown.
func dimOfVal(d graph.Dim) graph.Dim {
	if vKnown(d) && d.Value >= 0 {
		return graph.Static(d.Value)
	}
	if vKnown(d) {
		return unknownDim
	}
	return graph.Symbolic(d.Param)
}

func dimsOfVals(v []graph.Dim) graph.Shape {
	s := make(graph.Shape, len(v))
	for i, d := range v {
		s[i] = dimOfVal(d)
	}
	return s
}

// ints returns the integer value when fully known.
func (t *tinfo) ints() ([]int64, bool) {
	if !t.valueKnown() {
		return nil, false
	}
	out := make([]int64, len(t.ival))
	for i, d := range t.ival {
		out[i] = d.Value
	}
	return out, true
}

// numbers returns the value as float64s (from ival or fval) when fully known.
func (t *tinfo) numbers() ([]float64, bool) {
	if t == nil {
		return nil, false
	}
	if t.fval != nil {
		return t.fval, true
	}
	if v, ok := t.ints(); ok {
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = float64(x)
		}
		return f, true
	}
	return nil, false
}

// inferer runs shape inference over the whole graph.
type inferer struct {
	m    *Model
	g    *graph.Graph
	info []tinfo
	// declared types from value_info and graph outputs, by tensor name.
	declared    map[string]*onnxpb.TypeProto
	unsupported map[string]bool
	// parent is the enclosing scope's inferer when this one infers a subgraph.
	parent *inferer
	depth  int
	// subWork counts the subgraph nodes inferred so far, shared by the whole model (nested
	// loops multiply the passes; see maxSubgraphWork).
	subWork *int
	// failed marks, by node, the nodes whose shape function reported a shape error: they
	// cannot run with the shapes inference found (an If whose branch taken cannot run is one;
	// a Loop or Scan body that cannot run is not counted, as it may run no iteration).
	failed []bool
}

// nctx is the view of one node that an op's shape function gets.
type nctx struct {
	*inferer
	n     *graph.Node
	np    *onnxpb.NodeProto
	opset int64
}

// in returns input i, or nil when absent or omitted.
func (c *nctx) in(i int) *tinfo {
	if i >= len(c.n.Inputs) || c.n.Inputs[i] < 0 {
		return nil
	}
	return &c.info[c.n.Inputs[i]]
}

// shapedInput returns input 0 when it is present with a known rank in [lo, hi]. When it is
// present but its rank is unknown or out of range, output 0 gets the input's dtype and an
// unknown shape; either way nil tells the shape function to stop.
func (c *nctx) shapedInput(lo, hi int) *tinfo {
	x := c.in(0)
	if x == nil {
		return nil
	}
	if x.shape == nil || len(x.shape) < lo || len(x.shape) > hi {
		c.set(0, x.dt, nil)
		return nil
	}
	return x
}

func (c *nctx) nin() int  { return len(c.n.Inputs) }
func (c *nctx) nout() int { return len(c.n.Outputs) }

// set records output i's dtype and shape (a nil shape leaves it unknown).
func (c *nctx) set(i int, dt graph.DType, shape graph.Shape) *tinfo {
	if i >= len(c.n.Outputs) || c.n.Outputs[i] < 0 {
		return nil
	}
	t := &c.info[c.n.Outputs[i]]
	t.dt = dt
	t.shape = shape
	return t
}

// setVal records output i with a folded integer value; the shape is 1-D unless given.
func (c *nctx) setInts(i int, dt graph.DType, shape graph.Shape, val []graph.Dim) {
	t := c.set(i, dt, shape)
	if t != nil && len(val) <= maxFoldElements {
		t.ival = val
	}
}

func (c *nctx) setFloats(i int, dt graph.DType, shape graph.Shape, val []float64) {
	t := c.set(i, dt, shape)
	if t != nil && len(val) <= maxFoldElements {
		t.fval = val
	}
}

// errShape marks inconsistent shapes found by inference.
type shapeError struct{ msg string }

func (e *shapeError) Error() string { return e.msg }

func (c *nctx) errorf(format string, a ...any) error {
	return &shapeError{msg: fmt.Sprintf("node %s (%s): ", c.n.Label(), c.n.OpType) + fmt.Sprintf(format, a...)}
}

// inferShapes assigns dtype, shape and byte size to every tensor of the graph.
func (m *Model) inferShapes(sparse map[string]*onnxpb.SparseTensorProto) error {
	g := m.Graph
	pg := m.proto.Graph
	inf := &inferer{m: m, g: g, info: make([]tinfo, len(g.Tensors)),
		declared: map[string]*onnxpb.TypeProto{}, unsupported: map[string]bool{}, subWork: new(int)}
	m.sub = newSubgraphCosts()
	for _, vi := range pg.ValueInfo {
		inf.declared[vi.GetName()] = vi.GetType()
	}
	for _, vi := range pg.Output {
		inf.declared[vi.GetName()] = vi.GetType()
	}
	// Initializers.
	for name, t := range m.inits {
		id, _ := g.TensorByName(name)
		ti := &inf.info[id]
		ti.dt = graph.DType(t.GetDataType())
		ti.shape, _ = tensorShape(t)
		ti.ival, ti.fval = m.initializerValue(t)
		if n, err := ti.shape.NumElements(); err == nil && n == 0 && ti.ival == nil && ti.fval == nil {
			ti.ival, ti.fval = emptyValue(ti.dt) // e.g. empty Reduce axes or Resize roi
		}
	}
	for name, st := range sparse {
		id, _ := g.TensorByName(name)
		ti := &inf.info[id]
		ti.dt = graph.DType(st.GetValues().GetDataType())
		ti.shape = make(graph.Shape, len(st.Dims))
		for i, d := range st.Dims {
			if d < 0 {
				return diag.Input("sparse initializer %q has a negative dimension", name).About(diag.Tensor, name)
			}
			ti.shape[i] = graph.Static(d)
		}
	}
	// Graph inputs.
	for _, vi := range pg.Input {
		id, ok := g.TensorByName(vi.GetName())
		if !ok || g.Tensors[id].Kind != graph.Input {
			continue
		}
		dt, shape, nt := m.typeInfo(vi.GetType())
		inf.info[id] = tinfo{dt: dt, shape: m.boundInputShape(vi.GetName(), shape), nonTensor: nt}
	}
	if err := inf.runNodes(pg.Node); err != nil {
		return err
	}
	// Write back.
	symbolic := map[string]bool{}
	for id := range g.Tensors {
		t := &g.Tensors[id]
		ti := &inf.info[id]
		t.DType, t.Shape, t.NonTensor = ti.dt, ti.shape, ti.nonTensor
		for _, d := range ti.shape {
			if !d.Known() && d.Param != "" && t.Kind == graph.Input {
				symbolic[d.Param] = true
			}
		}
		b, err := graph.ByteSize(ti.dt, ti.shape)
		if err != nil {
			return diag.Input("tensor %q of shape %v has a byte size that overflows int64", t.Name, ti.shape).About(diag.Tensor, t.Name)
		}
		t.Bytes = b
		if v, ok := ti.ints(); ok && (ti.dt.IsInteger() || ti.dt == graph.Bool) {
			t.Value = v
		}
	}
	for k := range inf.unsupported {
		m.Unsupported = append(m.Unsupported, k)
	}
	sort.Strings(m.Unsupported)
	for k := range symbolic {
		m.SymbolicDims = append(m.SymbolicDims, k)
	}
	sort.Strings(m.SymbolicDims)
	return nil
}

// runNodes infers every node of inf.g (nodes are its protobufs, in the same order) in
// topological order, then completes unknowns from declared value_info.
func (inf *inferer) runNodes(nodes []*onnxpb.NodeProto) error {
	g := inf.g
	inf.failed = make([]bool, len(g.Nodes))
	for _, v := range g.TopoOrder() {
		n := &g.Nodes[v]
		c := &nctx{inferer: inf, n: n, np: nodes[v], opset: g.Opset(n.Domain)}
		fn := opShapeFunc(n.Domain, n.OpType)
		if fn == nil {
			inf.unsupported[qualifiedOp(n.Domain, n.OpType)] = true
		} else if err := fn(c); err != nil {
			var se *shapeError
			if errors.As(err, &se) {
				inf.failed[v] = true
				inf.m.Warnings = append(inf.m.Warnings, err.Error())
				if inf.parent == nil {
					inf.m.ShapeErrors = append(inf.m.ShapeErrors, err.Error())
				}
			} else {
				return err
			}
		}
		// Fill in what inference left unknown from declared value_info.
		for _, t := range n.Outputs {
			if t >= 0 {
				inf.mergeDeclared(t)
			}
		}
	}
	for id := range g.Tensors {
		if g.Tensors[id].Kind == graph.Input {
			continue
		}
		inf.mergeDeclared(id)
	}
	return nil
}

// outputsFail reports whether a node that cannot run (see failed) computes one of the graph's
// outputs: then the graph cannot run either. A failing node nothing reads does not count, as
// a runtime may drop it.
func (inf *inferer) outputsFail() bool {
	g := inf.g
	seen := make([]bool, len(g.Nodes))
	var stack []int
	for _, t := range g.Outputs {
		if p := g.Tensors[t].Producer; p >= 0 && !seen[p] {
			seen[p] = true
			stack = append(stack, p)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if inf.failed[v] {
			return true
		}
		for _, u := range g.Preds(v) {
			if !seen[u] {
				seen[u] = true
				stack = append(stack, u)
			}
		}
	}
	return false
}

// maxSubgraphDepth bounds the nesting of subgraphs that inference enters, and
// maxSubgraphWork the subgraph nodes it infers per model (Loop bodies are inferred up to
// maxLoopPasses+1 times each, so nested loops multiply); beyond them subgraph outputs take
// their declared types.
const (
	maxSubgraphDepth = 6
	maxSubgraphWork  = 20000
)

// lookup finds what is known of a tensor by name in this scope or an enclosing one.
func (inf *inferer) lookup(name string) (*tinfo, bool) {
	for s := inf; s != nil; s = s.parent {
		if id, ok := s.g.TensorByName(name); ok {
			return &s.info[id], true
		}
	}
	return nil, false
}

// inferSubgraph infers a subgraph (an If branch, a Loop or Scan body). inputs are what is
// known of its formal inputs (missing ones come from their declared types); names it reads
// from enclosing scopes take what those scopes know. It returns what is known of each of the
// subgraph's outputs, or nil when the subgraph cannot be analysed, and whether the subgraph
// cannot run with these shapes (a node computing an output fails; see outputsFail).
func (inf *inferer) inferSubgraph(sg *onnxpb.GraphProto, inputs []tinfo) ([]tinfo, bool) {
	if sg == nil || inf.depth >= maxSubgraphDepth {
		return nil, false
	}
	// Charge the whole subtree: its nested subgraphs are walked (for their captures) too.
	if *inf.subWork += subgraphSize(sg, maxSubgraphWork); *inf.subWork > maxSubgraphWork {
		return nil, false
	}
	b := graph.NewBuilder(sg.GetName())
	for _, op := range inf.m.proto.OpsetImport {
		b.SetOpset(op.GetDomain(), op.GetVersion())
	}
	local := map[string]bool{}
	for _, t := range sg.Initializer {
		if t.GetName() == "" || local[t.GetName()] {
			return nil, false
		}
		local[t.GetName()] = true
		b.AddInitializer(t.GetName())
	}
	for _, vi := range sg.Input {
		if vi.GetName() == "" || local[vi.GetName()] {
			return nil, false
		}
		local[vi.GetName()] = true
		b.AddInput(vi.GetName())
	}
	captured := dedupSorted(freeNames(sg, nil))
	for _, name := range captured {
		if !local[name] {
			b.AddInput(name)
		}
	}
	for _, n := range sg.Node {
		var caps []string
		attrs := make([]graph.Attr, 0, len(n.Attribute))
		for _, a := range n.Attribute {
			attrs = append(attrs, convertAttr(a))
			if g := a.GetG(); g != nil {
				caps = append(caps, freeNames(g, nil)...)
			}
			for _, g := range a.GetGraphs() {
				caps = append(caps, freeNames(g, nil)...)
			}
		}
		b.AddNode(n.GetName(), n.GetOpType(), n.GetDomain(), n.Input, n.Output, dedupSorted(caps), attrs)
	}
	for _, vi := range sg.Output {
		b.AddOutput(vi.GetName())
	}
	g, err := b.Build()
	if err != nil {
		return nil, false
	}
	child := &inferer{m: inf.m, g: g, info: make([]tinfo, len(g.Tensors)), parent: inf, depth: inf.depth + 1,
		declared: map[string]*onnxpb.TypeProto{}, unsupported: inf.unsupported, subWork: inf.subWork}
	for _, vi := range sg.ValueInfo {
		child.declared[vi.GetName()] = vi.GetType()
	}
	for _, vi := range sg.Output {
		child.declared[vi.GetName()] = vi.GetType()
	}
	for _, t := range sg.Initializer {
		id, _ := g.TensorByName(t.GetName())
		ti := &child.info[id]
		ti.dt = graph.DType(t.GetDataType())
		ti.shape, _ = tensorShape(t)
		ti.ival, ti.fval = inf.m.initializerValue(t)
		if n, err := ti.shape.NumElements(); err == nil && n == 0 && ti.ival == nil && ti.fval == nil {
			ti.ival, ti.fval = emptyValue(ti.dt)
		}
	}
	for i, vi := range sg.Input {
		id, _ := g.TensorByName(vi.GetName())
		ti := &child.info[id]
		if i < len(inputs) {
			*ti = inputs[i]
			ti.shape = ti.shape.Clone()
		}
		// Declared types fill what the caller does not know.
		dt, shape, nt := inf.m.typeInfo(vi.GetType())
		if ti.dt == graph.Undefined {
			ti.dt = dt
		}
		if ti.shape == nil && ti.nonTensor == "" {
			ti.shape, ti.nonTensor = shape, nt
		}
	}
	for _, name := range captured {
		if local[name] {
			continue
		}
		id, _ := g.TensorByName(name)
		if outer, ok := inf.lookup(name); ok {
			child.info[id] = *outer
		}
	}
	if err := child.runNodes(sg.Node); err != nil {
		return nil, false
	}
	inf.m.sub.flops[sg] = child.graphFLOPs(sg.Node)
	out := make([]tinfo, len(sg.Output))
	for i, vi := range sg.Output {
		if id, ok := g.TensorByName(vi.GetName()); ok {
			out[i] = child.info[id]
		}
	}
	return out, child.outputsFail()
}

// subgraphSize counts the nodes of g and of its nested subgraphs, stopping past limit.
func subgraphSize(g *onnxpb.GraphProto, limit int) int {
	n := len(g.Node) + 1
	for _, nd := range g.Node {
		for _, a := range nd.Attribute {
			if n > limit {
				return n
			}
			if sg := a.GetG(); sg != nil {
				n += subgraphSize(sg, limit-n)
			}
			for _, sg := range a.GetGraphs() {
				n += subgraphSize(sg, limit-n)
			}
		}
	}
	return n
}

func qualifiedOp(domain, op string) string {
	if domain == "" {
		return op
	}
	return domain + "." + op
}

// mergeDeclared completes a tensor's type and shape from its declared value_info: an unknown
// dtype or rank is taken from the declaration, unknown dims from declared known dims. A
// declaration contradicting inference is reported as a warning and inference wins.
func (inf *inferer) mergeDeclared(id int) {
	t := &inf.g.Tensors[id]
	tp := inf.declared[t.Name]
	if tp == nil {
		return
	}
	dt, shape, nt := inf.m.typeInfo(tp)
	ti := &inf.info[id]
	if nt != "" && ti.nonTensor == "" && ti.shape == nil {
		ti.nonTensor = nt
	}
	if ti.dt == graph.Undefined {
		ti.dt = dt
	}
	if shape == nil {
		return
	}
	if ti.shape == nil {
		ti.shape = shape
		return
	}
	if len(ti.shape) != len(shape) {
		inf.m.Warnings = append(inf.m.Warnings, fmt.Sprintf("tensor %q: value_info declares rank %d, inference found %v", t.Name, len(shape), ti.shape))
		return
	}
	for i := range shape {
		switch {
		case !ti.shape[i].Known() && shape[i].Known():
			ti.shape[i] = shape[i]
		case !ti.shape[i].Known() && ti.shape[i].Param == "" && shape[i].Param != "":
			ti.shape[i] = shape[i]
		case ti.shape[i].Known() && shape[i].Known() && ti.shape[i].Value != shape[i].Value:
			inf.m.Warnings = append(inf.m.Warnings, fmt.Sprintf("tensor %q: value_info declares shape %v, inference found %v", t.Name, shape, ti.shape))
			return
		}
	}
}

// typeInfo converts a TypeProto into dtype and shape, applying --dim bindings.
func (m *Model) typeInfo(tp *onnxpb.TypeProto) (graph.DType, graph.Shape, string) {
	if tp == nil {
		return graph.Undefined, nil, ""
	}
	switch v := tp.Value.(type) {
	case *onnxpb.TypeProto_TensorType:
		return graph.DType(v.TensorType.GetElemType()), m.shapeOf(v.TensorType.Shape), ""
	case *onnxpb.TypeProto_SparseTensorType:
		return graph.DType(v.SparseTensorType.GetElemType()), m.shapeOf(v.SparseTensorType.Shape), ""
	default:
		return graph.Undefined, nil, describeType(tp)
	}
}

func (m *Model) shapeOf(sp *onnxpb.TensorShapeProto) graph.Shape {
	if sp == nil {
		return nil
	}
	s := make(graph.Shape, len(sp.Dim))
	for i, d := range sp.Dim {
		switch v := d.Value.(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue >= 0 {
				s[i] = graph.Static(v.DimValue)
			} else {
				s[i] = graph.Symbolic("")
			}
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			if b, ok := m.dims[v.DimParam]; ok {
				s[i] = graph.Static(b)
			} else {
				s[i] = graph.Symbolic(v.DimParam)
			}
		default:
			s[i] = graph.Symbolic("")
		}
	}
	return s
}

func describeType(tp *onnxpb.TypeProto) string {
	if tp == nil {
		return "unknown"
	}
	switch v := tp.Value.(type) {
	case *onnxpb.TypeProto_TensorType:
		return "tensor(" + graph.DType(v.TensorType.GetElemType()).String() + ")"
	case *onnxpb.TypeProto_SparseTensorType:
		return "sparse_tensor(" + graph.DType(v.SparseTensorType.GetElemType()).String() + ")"
	case *onnxpb.TypeProto_SequenceType:
		return "seq(" + describeType(v.SequenceType.GetElemType()) + ")"
	case *onnxpb.TypeProto_MapType:
		return "map(" + graph.DType(v.MapType.GetKeyType()).String() + "," + describeType(v.MapType.GetValueType()) + ")"
	case *onnxpb.TypeProto_OptionalType:
		return "optional(" + describeType(v.OptionalType.GetElemType()) + ")"
	case *onnxpb.TypeProto_OpaqueType:
		return "opaque(" + v.OpaqueType.GetDomain() + "." + v.OpaqueType.GetName() + ")"
	}
	return "unknown"
}

// emptyValue is the known value of a tensor with no elements.
func emptyValue(dt graph.DType) ([]graph.Dim, []float64) {
	if dt.IsFloat() {
		return nil, []float64{}
	}
	return []graph.Dim{}, nil
}

func dimsOf(v []int64) []graph.Dim {
	out := make([]graph.Dim, len(v))
	for i, x := range v {
		out[i] = vInt(x)
	}
	return out
}
