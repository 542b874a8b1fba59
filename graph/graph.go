// Package graph is the operator DAG that every phase of onnxpart works on.
//
// What goes in: nodes (operators) and tensors (values), built with a Builder, usually by
// package ingest from an ONNX model. What comes out: a validated, immutable Graph with
// producers, consumers, node-level adjacency, deterministic topological orders, Kahn's
// algorithm with priorities, reachability, and the checks that a stage assignment of the
// nodes is acyclic. The package knows nothing of ONNX protobufs or devices.
//
// Identifiers are dense indices: node i is g.Nodes[i], tensor j is g.Tensors[j]. Node order is
// the order of the source model; every ordering the package produces breaks ties by it, so
// results are reproducible.
package graph

import (
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"
	"github.com/onnxpart/onnxpart/internal/ops/optype"

	"fmt"
)

// TensorKind says where a tensor's value comes from.
type TensorKind uint8

// Tensor kinds.
const (
	Activation  TensorKind = iota // produced by a node
	Input                         // graph input fed at run time
	Initializer                   // weight stored in the model
)

// String returns input, initializer or activation.
func (k TensorKind) String() string {
	switch k {
	case Input:
		return "input"
	case Initializer:
		return "initializer"
	default:
		return "activation"
	}
}

// Tensor is a named value of the graph.
type Tensor struct {
	ID    int
	Name  string
	Kind  TensorKind
	DType DType
	// Shape is nil when the rank is unknown. Symbolic dimensions keep their names.
	Shape Shape
	// Bytes is the storage size, or -1 when the shape or element size is unknown.
	Bytes int64
	// NonTensor describes a value that is not a plain tensor (a sequence, map or optional),
	// e.g. "seq(tensor(float32))"; empty for tensors.
	NonTensor string
	// Producer is the producing node, or -1 for inputs and initializers.
	Producer int
	// Consumers are the nodes reading the tensor (as an input or as a capture of a subgraph),
	// ascending and without repetition.
	Consumers []int
	// IsOutput marks a graph output.
	IsOutput bool
	// Value holds the contents of small integer tensors known before run time (constants and
	// folded shape computations); nil otherwise.
	Value []int64
}

// AttrKind is the type of an attribute value.
type AttrKind uint8

// Attribute kinds (the ones onnxpart reads; tensors and graphs are only recorded as present).
const (
	AttrUndefined AttrKind = iota
	AttrFloat
	AttrInt
	AttrString
	AttrTensor
	AttrGraph
	AttrFloats
	AttrInts
	AttrStrings
	AttrTensors
	AttrGraphs
	AttrOther
)

// Attr is one node attribute.
type Attr struct {
	Name    string
	Kind    AttrKind
	Float   float64
	Int     int64
	Str     string
	Floats  []float64
	Ints    []int64
	Strings []string
}

// Node is one operator application.
type Node struct {
	ID     int
	Name   string
	OpType string
	Domain string // "" for the default ONNX domain
	// Inputs and Outputs are tensor IDs in operator order; -1 marks an omitted optional one.
	Inputs  []int
	Outputs []int
	// Captures are outer-scope tensors read by the node's subgraphs (If/Loop/Scan bodies); they
	// are dependencies of the node like its inputs.
	Captures []int
	Attrs    []Attr
	// Cost figures, filled by ingest. FLOPs counts multiply and add separately (2 per MAC).
	FLOPs       int64
	InputBytes  int64 // bytes of activations and graph inputs read
	ParamBytes  int64 // bytes of weights read: initializers, Constant values, SubgraphParamBytes
	OutputBytes int64
	// Static marks a node whose outputs depend only on initializers and constants (Constant
	// nodes, weight-only subgraphs, shape arithmetic on constants): its value is known before
	// run time.
	Static bool
	// Subgraphs counts the graph-valued attributes (bodies of control flow).
	Subgraphs int
	// SubgraphParamBytes are the bytes of the weights stored inside the node's subgraphs
	// (their initializers and Constant values, every branch's), part of ParamBytes.
	SubgraphParamBytes int64
}

// Attr returns the attribute called name, or nil.
func (n *Node) Attr(name string) *Attr {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			return &n.Attrs[i]
		}
	}
	return nil
}

// AttrInt returns an integer attribute or def when absent.
func (n *Node) AttrInt(name string, def int64) int64 {
	if a := n.Attr(name); a != nil && a.Kind == AttrInt {
		return a.Int
	}
	return def
}

// AttrFloat returns a float attribute or def when absent.
func (n *Node) AttrFloat(name string, def float64) float64 {
	if a := n.Attr(name); a != nil && a.Kind == AttrFloat {
		return a.Float
	}
	return def
}

// AttrInts returns an integer-list attribute or nil when absent.
func (n *Node) AttrInts(name string) []int64 {
	if a := n.Attr(name); a != nil && a.Kind == AttrInts {
		return a.Ints
	}
	return nil
}

// AttrString returns a string attribute or def when absent.
func (n *Node) AttrString(name string, def string) string {
	if a := n.Attr(name); a != nil && a.Kind == AttrString {
		return a.Str
	}
	return def
}

// Deps returns the tensors the node depends on: its present inputs and its captures.
func (n *Node) Deps() []int {
	out := make([]int, 0, len(n.Inputs)+len(n.Captures))
	for _, t := range n.Inputs {
		if t >= 0 {
			out = append(out, t)
		}
	}
	return append(out, n.Captures...)
}

// Label is a human-readable name for messages: the node's name, or op#id when unnamed.
func (n *Node) Label() string {
	if n.Name != "" {
		return n.Name
	}
	return fmt.Sprintf("%s#%d", n.OpType, n.ID)
}

// Graph is a validated operator DAG. It is immutable after Build except for the cost and
// shape fields of nodes and tensors, which ingest fills in.
type Graph struct {
	Name    string
	Nodes   []Node
	Tensors []Tensor
	// Inputs are the graph inputs fed at run time (not initializers), in model order.
	Inputs []int
	// Outputs are the graph outputs, in model order.
	Outputs []int
	// Opsets maps an operator domain ("" for ONNX) to its imported version.
	Opsets map[string]int64

	byName map[string]int
	preds  [][]int
	succs  [][]int
	topo   []int
	// succRows and predRows are the same adjacency as graph/dag rows.
	succRows, predRows dag.CSR
}

// TensorByName returns the tensor ID of name.
func (g *Graph) TensorByName(name string) (int, bool) {
	id, ok := g.byName[name]
	return id, ok
}

// NodeByName returns the first node with that name.
func (g *Graph) NodeByName(name string) (int, bool) {
	for i := range g.Nodes {
		if g.Nodes[i].Name == name {
			return i, true
		}
	}
	return -1, false
}

// Preds returns the distinct nodes producing a dependency of node v, ascending.
func (g *Graph) Preds(v int) []int { return g.preds[v] }

// Succs returns the distinct nodes consuming an output of node v, ascending.
func (g *Graph) Succs(v int) []int { return g.succs[v] }

// TopoOrder returns a topological order of the nodes; among ready nodes the one earliest in
// the model comes first, so a model already in topological order keeps its order.
func (g *Graph) TopoOrder() []int { return append([]int(nil), g.topo...) }

// Opset returns the imported version of a domain ("" or "ai.onnx" for ONNX), 0 if absent.
func (g *Graph) Opset(domain string) int64 {
	if domain == "ai.onnx" {
		domain = ""
	}
	return g.Opsets[domain]
}

// NumEdges counts node-to-node edges (pairs, not tensors).
func (g *Graph) NumEdges() int {
	n := 0
	for _, s := range g.succs {
		n += len(s)
	}
	return n
}

// TotalFLOPs sums the nodes' FLOPs.
func (g *Graph) TotalFLOPs() int64 {
	var s int64
	for i := range g.Nodes {
		s += g.Nodes[i].FLOPs
	}
	return s
}

// ParamBytes sums the sizes of the weights that some node reads, each once: initializers, the
// values of Constant nodes (Paddle2ONNX and PyTorch write weights as Constant nodes; ONNX
// Runtime turns them into initializers when it loads the model) and the weights stored
// inside control-flow subgraphs (Node.SubgraphParamBytes).
func (g *Graph) ParamBytes() int64 {
	var s int64
	for i := range g.Tensors {
		if t := &g.Tensors[i]; g.IsParam(i) && len(t.Consumers) > 0 && t.Bytes > 0 {
			s += t.Bytes
		}
	}
	for i := range g.Nodes {
		s += max(g.Nodes[i].SubgraphParamBytes, 0)
	}
	return s
}

// IsParam reports whether tensor t is a weight stored in the model: an initializer, or the
// output of a Constant node of the default domain.
func (g *Graph) IsParam(t int) bool {
	tn := &g.Tensors[t]
	if tn.Kind == Initializer {
		return true
	}
	if tn.Producer < 0 {
		return false
	}
	n := &g.Nodes[tn.Producer]
	return n.OpType == optype.Constant && (n.Domain == "" || n.Domain == "ai.onnx")
}

// Builder assembles a Graph. Tensors are created on first mention by name.
type Builder struct {
	g   Graph
	err []string
}

// NewBuilder starts an empty graph.
func NewBuilder(name string) *Builder {
	return &Builder{g: Graph{Name: name, byName: map[string]int{}, Opsets: map[string]int64{}}}
}

// Tensor returns the ID of the tensor called name, creating it if needed.
func (b *Builder) Tensor(name string) int {
	if id, ok := b.g.byName[name]; ok {
		return id
	}
	id := len(b.g.Tensors)
	b.g.Tensors = append(b.g.Tensors, Tensor{ID: id, Name: name, Producer: -1, Bytes: -1})
	b.g.byName[name] = id
	return id
}

// TensorRef gives mutable access to a tensor while building.
func (b *Builder) TensorRef(id int) *Tensor { return &b.g.Tensors[id] }

// AddInput declares a graph input.
func (b *Builder) AddInput(name string) int {
	id := b.Tensor(name)
	b.g.Tensors[id].Kind = Input
	b.g.Inputs = append(b.g.Inputs, id)
	return id
}

// AddInitializer declares a weight.
func (b *Builder) AddInitializer(name string) int {
	id := b.Tensor(name)
	b.g.Tensors[id].Kind = Initializer
	return id
}

// AddOutput declares a graph output.
func (b *Builder) AddOutput(name string) int {
	id := b.Tensor(name)
	b.g.Tensors[id].IsOutput = true
	b.g.Outputs = append(b.g.Outputs, id)
	return id
}

// SetOpset records an imported operator set.
func (b *Builder) SetOpset(domain string, version int64) {
	if domain == "ai.onnx" {
		domain = ""
	}
	b.g.Opsets[domain] = version
}

// AddNode appends a node. Input and output names "" are omitted optional values (-1).
// captures are outer-scope names read by the node's subgraphs.
func (b *Builder) AddNode(name, opType, domain string, inputs, outputs, captures []string, attrs []Attr) int {
	id := len(b.g.Nodes)
	n := Node{ID: id, Name: name, OpType: opType, Domain: domain, Attrs: attrs}
	if n.Domain == "ai.onnx" {
		n.Domain = ""
	}
	for _, in := range inputs {
		if in == "" {
			n.Inputs = append(n.Inputs, -1)
			continue
		}
		n.Inputs = append(n.Inputs, b.Tensor(in))
	}
	for _, out := range outputs {
		if out == "" {
			n.Outputs = append(n.Outputs, -1)
			continue
		}
		t := b.Tensor(out)
		tt := &b.g.Tensors[t]
		switch {
		case tt.Producer == id: // the node is not in b.g.Nodes yet
			b.err = append(b.err, fmt.Sprintf("node %s lists output %q twice", labelOf(name, opType, id), out))
		case tt.Producer >= 0:
			b.err = append(b.err, fmt.Sprintf("tensor %q is produced twice: by node %s and by node %s",
				out, b.g.Nodes[tt.Producer].Label(), labelOf(name, opType, id)))
		case tt.Kind == Input:
			b.err = append(b.err, fmt.Sprintf("tensor %q is a graph input and is also produced by node %s", out, labelOf(name, opType, id)))
		case tt.Kind == Initializer:
			b.err = append(b.err, fmt.Sprintf("tensor %q is an initializer and is also produced by node %s", out, labelOf(name, opType, id)))
		default:
			tt.Producer = id
		}
		n.Outputs = append(n.Outputs, t)
	}
	seen := map[int]bool{}
	for _, c := range captures {
		t := b.Tensor(c)
		if !seen[t] {
			seen[t] = true
			n.Captures = append(n.Captures, t)
		}
	}
	b.g.Nodes = append(b.g.Nodes, n)
	return id
}

func labelOf(name, op string, id int) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("%s#%d", op, id)
}

// NodeRef gives mutable access to a node while building.
func (b *Builder) NodeRef(id int) *Node { return &b.g.Nodes[id] }

// structureError is a structural defect of a graph (duplicate producers, names nothing
// produces): a *diag.Error of kind input with the first problem and the count of the others,
// each other problem a note.
func structureError(problems []string) *diag.Error {
	if len(problems) == 1 {
		return diag.Input("%s", problems[0])
	}
	e := diag.Input("%s (and %d more problems)", problems[0], len(problems)-1)
	for _, p := range problems[1:] {
		e.Note("%s", p)
	}
	return e
}

// CycleError reports that the graph is not a DAG; Nodes lists a cycle in dependency order
// (graph/dag's one cycle error).
type CycleError = dag.CycleError

// Build validates the graph and computes consumers, adjacency and a topological order.
// It reports tensors produced twice, tensors read but never produced (and not inputs or
// initializers), and cycles (with the nodes on one), as a *diag.Error of kind input; a
// cycle's cause is a *CycleError.
func (b *Builder) Build() (*Graph, error) {
	g := &b.g
	problems := append([]string(nil), b.err...)
	consumers := make([][]int, len(g.Tensors))
	for i := range g.Nodes {
		n := &g.Nodes[i]
		for _, t := range n.Deps() {
			if l := consumers[t]; len(l) == 0 || l[len(l)-1] != i {
				consumers[t] = append(consumers[t], i)
			}
		}
	}
	for i := range g.Tensors {
		t := &g.Tensors[i]
		t.Consumers = consumers[i]
		if t.Producer < 0 && t.Kind == Activation {
			if len(t.Consumers) > 0 {
				problems = append(problems, fmt.Sprintf("node %s reads tensor %q, which no node produces and is neither a graph input nor an initializer",
					g.Nodes[t.Consumers[0]].Label(), t.Name))
			} else if t.IsOutput {
				problems = append(problems, fmt.Sprintf("graph output %q is not produced by any node", t.Name))
			}
		}
	}
	if len(problems) > 0 {
		return nil, structureError(problems)
	}
	g.preds = make([][]int, len(g.Nodes))
	g.succs = make([][]int, len(g.Nodes))
	for i := range g.Nodes {
		var ps []int
		for _, t := range g.Nodes[i].Deps() {
			if p := g.Tensors[t].Producer; p >= 0 {
				ps = append(ps, p)
			}
		}
		g.preds[i] = dag.SortedUnique(ps)
	}
	for v, ps := range g.preds {
		for _, p := range ps {
			g.succs[p] = append(g.succs[p], v) // v ascending, so succs come out sorted
		}
	}
	g.succRows, g.predRows = dag.FromLists(g.succs), dag.FromLists(g.preds)
	order, ok := g.kahn(nil)
	if !ok {
		cyc := dag.NewCycleError("", dag.FindCycle(g.succRows), func(v int) string { return g.Nodes[v].Label() })
		e := diag.Wrap(diag.KindInput, cyc)
		if len(cyc.Nodes) > 0 {
			e.About(diag.Node, cyc.Nodes[0])
		}
		return nil, e
	}
	g.topo = order
	return g, nil
}
