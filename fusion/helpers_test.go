package fusion

import (
	"fmt"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// gb builds small graphs for tests: every node has one output named after the node, every
// tensor 100 bytes unless set, every node 1000 FLOPs; Static is computed as ingest does.
type gb struct {
	t     testing.TB
	b     *graph.Builder
	n     int
	bytes map[string]int64
	vals  map[string][]int64
}

func newGB(t *testing.T) *gb {
	return &gb{t: t, b: graph.NewBuilder("test"), bytes: map[string]int64{}, vals: map[string][]int64{}}
}

func (x *gb) input(name string) string { x.b.AddInput(name); return name }
func (x *gb) weight(name string) string {
	x.b.AddInitializer(name)
	return name
}

// op adds a node and returns its output tensor's name (the node's name).
func (x *gb) op(op string, ins ...string) string {
	name := fmt.Sprintf("%s%d", op, x.n)
	x.n++
	x.b.AddNode(name, op, "", ins, []string{name}, nil, nil)
	return name
}

// opA adds a node with attributes.
func (x *gb) opA(op string, attrs []graph.Attr, ins ...string) string {
	name := fmt.Sprintf("%s%d", op, x.n)
	x.n++
	x.b.AddNode(name, op, "", ins, []string{name}, nil, attrs)
	return name
}

// constant adds a Constant node.
func (x *gb) constant() string { return x.op("Constant") }

// shapeOf adds a Shape node whose output has a known value (as ingest folds it).
func (x *gb) shapeOf(in string) string {
	s := x.op("Shape", in)
	x.vals[s] = []int64{1, 2}
	return s
}

func (x *gb) build(outputs ...string) *graph.Graph {
	x.t.Helper()
	for _, o := range outputs {
		x.b.AddOutput(o)
	}
	g, err := x.b.Build()
	if err != nil {
		x.t.Fatal(err)
	}
	finishGraph(g, x.bytes, x.vals)
	return g
}

// finishGraph fills bytes, values, FLOPs, the byte counts of nodes and Static like ingest.
func finishGraph(g *graph.Graph, bytes map[string]int64, vals map[string][]int64) {
	for i := range g.Tensors {
		t := &g.Tensors[i]
		t.Bytes = 100
		if b, ok := bytes[t.Name]; ok {
			t.Bytes = b
		}
		t.Value = vals[t.Name]
	}
	static := make([]bool, len(g.Tensors))
	for i := range g.Tensors {
		static[i] = g.Tensors[i].Kind == graph.Initializer
	}
	for _, v := range g.TopoOrder() {
		n := &g.Nodes[v]
		n.FLOPs = 1000
		if n.OpType == "Constant" || n.OpType == "Shape" {
			n.FLOPs = 0
		}
		n.InputBytes, n.ParamBytes, n.OutputBytes = 0, 0, 0
		ok := true
		for _, t := range n.Deps() {
			if g.Tensors[t].Kind == graph.Initializer {
				n.ParamBytes += g.Tensors[t].Bytes
			} else {
				n.InputBytes += g.Tensors[t].Bytes
			}
			if !static[t] {
				ok = false
			}
		}
		for _, t := range n.Outputs {
			n.OutputBytes += g.Tensors[t].Bytes
		}
		n.Static = ok
		if ok {
			for _, t := range n.Outputs {
				static[t] = true
			}
		}
	}
}

func mustRules(t *testing.T, yaml string) *RuleSet {
	t.Helper()
	rs, err := ParseRuleSet([]byte(yaml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func mustBuiltin(t testing.TB, name string) *RuleSet {
	t.Helper()
	rs, err := Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func mustCoarsen(t testing.TB, g *graph.Graph, rs *RuleSet) *Grouping {
	t.Helper()
	c, err := Coarsen(g, rs)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkCoarse(c, rs); err != nil {
		t.Fatal(err)
	}
	return c
}

// groupOfName returns the group holding the node called name.
func groupOfName(t *testing.T, c *Grouping, name string) int {
	t.Helper()
	v, ok := c.Orig.NodeByName(name)
	if !ok {
		t.Fatalf("no node %s", name)
	}
	return c.GroupOf[v]
}

// sameGroup asserts that the named nodes share a group and returns it.
func sameGroup(t *testing.T, c *Grouping, names ...string) int {
	t.Helper()
	g0 := groupOfName(t, c, names[0])
	for _, n := range names[1:] {
		if gi := groupOfName(t, c, n); gi != g0 {
			t.Fatalf("%s is in group %d (%s), %s in group %d (%s)", names[0], g0, c.Rule[g0], n, gi, c.Rule[gi])
		}
	}
	return g0
}

func groupNames(c *Grouping, i int) []string {
	var out []string
	for _, v := range c.Groups[i] {
		out = append(out, c.Orig.Nodes[v].Name)
	}
	return out
}
