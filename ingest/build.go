package ingest

import (
	"sort"

	"github.com/onnxpart/onnxpart/diag"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// build turns the protobuf graph into a graph.Graph, then infers shapes and costs.
func (m *Model) build() error {
	pg := m.proto.Graph
	b := graph.NewBuilder(pg.GetName())
	for _, op := range m.proto.OpsetImport {
		b.SetOpset(op.GetDomain(), op.GetVersion())
	}
	m.inits = map[string]*onnxpb.TensorProto{}
	for i, t := range pg.Initializer {
		name := t.GetName()
		if name == "" {
			return diag.Input("initializer %d has no name", i)
		}
		if _, dup := m.inits[name]; dup {
			return diag.Input("initializer %q is defined twice", name).About(diag.Tensor, name)
		}
		if err := m.checkInitializer(t); err != nil {
			return err
		}
		m.inits[name] = t
		b.AddInitializer(name)
	}
	sparse := map[string]*onnxpb.SparseTensorProto{}
	for i, st := range pg.SparseInitializer {
		name := st.GetValues().GetName()
		if name == "" {
			return diag.Input("sparse initializer %d has no name", i)
		}
		if _, dup := m.inits[name]; dup {
			return diag.Input("initializer %q is defined twice", name).About(diag.Tensor, name)
		}
		if _, dup := sparse[name]; dup {
			return diag.Input("initializer %q is defined twice", name).About(diag.Tensor, name)
		}
		sparse[name] = st
		b.AddInitializer(name)
	}
	for _, vi := range pg.Input {
		name := vi.GetName()
		if name == "" {
			return diag.Input("a graph input has no name")
		}
		if _, ok := m.inits[name]; ok {
			continue // IR < 4: initializers are also listed as inputs; the weight is the value
		}
		if _, ok := sparse[name]; ok {
			continue
		}
		if b.TensorRef(b.Tensor(name)).Kind == graph.Input {
			return diag.Input("graph input %q is declared twice", name).About(diag.Tensor, name)
		}
		b.AddInput(name)
	}
	for _, n := range pg.Node {
		var captures []string
		attrs := make([]graph.Attr, 0, len(n.Attribute))
		subgraphs := 0
		for _, a := range n.Attribute {
			attrs = append(attrs, convertAttr(a))
			if g := a.GetG(); g != nil {
				subgraphs++
				captures = append(captures, freeNames(g, nil)...)
			}
			for _, g := range a.GetGraphs() {
				subgraphs++
				captures = append(captures, freeNames(g, nil)...)
			}
		}
		captures = dedupSorted(captures)
		id := b.AddNode(n.GetName(), n.GetOpType(), n.GetDomain(), n.Input, n.Output, captures, attrs)
		b.NodeRef(id).Subgraphs = subgraphs
	}
	for _, vi := range pg.Output {
		if vi.GetName() == "" {
			return diag.Input("a graph output has no name")
		}
		b.AddOutput(vi.GetName())
	}
	g, err := b.Build()
	if err != nil {
		return err
	}
	m.Graph = g
	for _, t := range m.inits {
		if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
			m.ExternalData = true
		}
	}
	if err := m.inferShapes(sparse); err != nil {
		return err
	}
	if !m.shapesOnly {
		m.countCosts()
		m.markStatic()
	}
	return nil
}

// Proto returns the decoded protobuf of the model: node i of Graph is Proto().Graph.Node[i].
// It is the model as loaded, shared, not a copy: read it, never modify it (clone it with
// proto.Clone to make a changed model, as emit and verify do).
func (m *Model) Proto() *onnxpb.ModelProto { return m.proto }

// Initializer returns the initializer of the main graph called name, or nil. Like Proto it is
// shared: read only.
func (m *Model) Initializer(name string) *onnxpb.TensorProto { return m.inits[name] }

// FreeNames returns the names a subgraph (an If branch, a Loop or Scan body) reads from
// enclosing scopes, its nested subgraphs included, in order of use with repetitions: the
// outer-scope captures that make the node holding the subgraph depend on their producers.
func FreeNames(g *onnxpb.GraphProto) []string { return freeNames(g, nil) }

// freeNames returns the names a subgraph reads from enclosing scopes: names used by its nodes
// (including nested subgraphs) or listed as its outputs that the subgraph does not define
// itself (as an input, initializer or node output). bound holds names defined by enclosing
// subgraphs between the outer graph and this one.
func freeNames(g *onnxpb.GraphProto, bound map[string]bool) []string {
	local := map[string]bool{}
	for k := range bound {
		local[k] = true
	}
	for _, vi := range g.Input {
		local[vi.GetName()] = true
	}
	for _, t := range g.Initializer {
		local[t.GetName()] = true
	}
	for _, st := range g.SparseInitializer {
		local[st.GetValues().GetName()] = true
	}
	for _, n := range g.Node {
		for _, o := range n.Output {
			if o != "" {
				local[o] = true
			}
		}
	}
	var free []string
	use := func(name string) {
		if name != "" && !local[name] {
			free = append(free, name)
		}
	}
	for _, n := range g.Node {
		for _, in := range n.Input {
			use(in)
		}
		for _, a := range n.Attribute {
			if sg := a.GetG(); sg != nil {
				for _, f := range freeNames(sg, local) {
					use(f)
				}
			}
			for _, sg := range a.GetGraphs() {
				for _, f := range freeNames(sg, local) {
					use(f)
				}
			}
		}
	}
	for _, o := range g.Output {
		use(o.GetName())
	}
	return free
}

func dedupSorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	sort.Strings(s)
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

func convertAttr(a *onnxpb.AttributeProto) graph.Attr {
	out := graph.Attr{Name: a.GetName()}
	typ := a.GetType()
	if typ == onnxpb.AttributeProto_UNDEFINED {
		typ = guessAttrType(a)
	}
	switch typ {
	case onnxpb.AttributeProto_FLOAT:
		out.Kind, out.Float = graph.AttrFloat, float64(a.GetF())
	case onnxpb.AttributeProto_INT:
		out.Kind, out.Int = graph.AttrInt, a.GetI()
	case onnxpb.AttributeProto_STRING:
		out.Kind, out.Str = graph.AttrString, string(a.GetS())
	case onnxpb.AttributeProto_TENSOR, onnxpb.AttributeProto_SPARSE_TENSOR:
		out.Kind = graph.AttrTensor
	case onnxpb.AttributeProto_GRAPH:
		out.Kind = graph.AttrGraph
	case onnxpb.AttributeProto_FLOATS:
		out.Kind = graph.AttrFloats
		out.Floats = make([]float64, len(a.Floats))
		for i, f := range a.Floats {
			out.Floats[i] = float64(f)
		}
	case onnxpb.AttributeProto_INTS:
		out.Kind, out.Ints = graph.AttrInts, append([]int64{}, a.Ints...)
	case onnxpb.AttributeProto_STRINGS:
		out.Kind = graph.AttrStrings
		for _, s := range a.Strings {
			out.Strings = append(out.Strings, string(s))
		}
	case onnxpb.AttributeProto_TENSORS, onnxpb.AttributeProto_SPARSE_TENSORS:
		out.Kind = graph.AttrTensors
	case onnxpb.AttributeProto_GRAPHS:
		out.Kind = graph.AttrGraphs
	default:
		out.Kind = graph.AttrOther
	}
	return out
}

// guessAttrType handles IR 1 attributes that carry no type discriminator.
func guessAttrType(a *onnxpb.AttributeProto) onnxpb.AttributeProto_AttributeType {
	switch {
	case a.F != nil:
		return onnxpb.AttributeProto_FLOAT
	case a.I != nil:
		return onnxpb.AttributeProto_INT
	case a.S != nil:
		return onnxpb.AttributeProto_STRING
	case a.T != nil:
		return onnxpb.AttributeProto_TENSOR
	case a.G != nil:
		return onnxpb.AttributeProto_GRAPH
	case len(a.Floats) > 0:
		return onnxpb.AttributeProto_FLOATS
	case len(a.Ints) > 0:
		return onnxpb.AttributeProto_INTS
	case len(a.Strings) > 0:
		return onnxpb.AttributeProto_STRINGS
	case len(a.Tensors) > 0:
		return onnxpb.AttributeProto_TENSORS
	case len(a.Graphs) > 0:
		return onnxpb.AttributeProto_GRAPHS
	}
	return onnxpb.AttributeProto_UNDEFINED
}

// markStatic flags nodes whose outputs are known before run time: every dependency is an
// initializer or the output of another static node, and the op is deterministic.
func (m *Model) markStatic() {
	g := m.Graph
	static := make([]bool, len(g.Tensors))
	for i := range g.Tensors {
		static[i] = g.Tensors[i].Kind == graph.Initializer
	}
	for _, v := range g.TopoOrder() {
		n := &g.Nodes[v]
		ok := !nondeterministic[n.OpType] && n.Domain == ""
		for _, t := range n.Deps() {
			if !static[t] {
				ok = false
				break
			}
		}
		n.Static = ok
		if ok {
			for _, t := range n.Outputs {
				if t >= 0 {
					static[t] = true
				}
			}
		}
	}
}

var nondeterministic = map[string]bool{
	optype.RandomNormal: true, optype.RandomUniform: true, optype.RandomNormalLike: true,
	optype.RandomUniformLike: true, optype.Multinomial: true, optype.Bernoulli: true,
}
