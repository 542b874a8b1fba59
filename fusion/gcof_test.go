package fusion

import (
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
)

// table1 are the only rules seed 004 gives (TABLE I, "Eigen on a GPU kernel").
const table1 = `
name: table1
absorb: false
rules:
  - name: r1
    steps: [{op: Conv}, {op: BatchNormalization}]
  - name: r2
    steps: [{op: Conv}, {op: BatchNormalization}, {op: Relu}]
  - name: r3
    steps: [{op: Conv}, {op: BatchNormalization}, {op: Add}, {op: Relu}]
`

func convBN(x *gb, in string) string {
	return x.op("BatchNormalization", x.op("Conv", in, x.weight("w"+in)), x.weight("s"+in), x.weight("b"+in), x.weight("m"+in), x.weight("v"+in))
}

// runPasses runs Coarsen's passes and returns the state before unbind, to inspect tags.
func runPasses(g *graph.Graph, rs *RuleSet) *work {
	w := newWork(g, rs)
	w.foldViews(rs.Views)
	w.e.index()
	w.gcof(rs.Rules)
	return w
}

func boundSeen(w *work) bool {
	for _, tg := range w.tags {
		if tg == tagBound {
			return true
		}
	}
	return false
}

func TestGCOFChainRule(t *testing.T) {
	x := newGB(t)
	out := x.op("Relu", convBN(x, x.input("in")))
	g := x.build(out)
	c := mustCoarsen(t, g, mustRules(t, table1))
	i := sameGroup(t, c, "Conv0", "BatchNormalization1", "Relu2")
	if c.Rule[i] != "r2" || len(c.Groups) != 1 {
		t.Errorf("groups %v rules %v, want one r2 group", c.Groups, c.Rule)
	}
}

// TestGCOFMultiInput: the add∘relu pair is bound first (its DFS branch comes first), then
// conv∘bn (fused by r1) joins it over the multi-input connection to complete r3 (Fig. 7).
func TestGCOFMultiInput(t *testing.T) {
	x := newGB(t)
	skip := x.op("Relu", x.input("in0"))
	bn := convBN(x, x.input("in1"))
	out := x.op("Relu", x.op("Add", skip, bn))
	g := x.build(out)
	rs := mustRules(t, table1)
	if !boundSeen(runPasses(g, rs)) {
		t.Fatal("the add∘relu pair was never bound: the test no longer exercises bind")
	}
	c := mustCoarsen(t, g, rs)
	i := sameGroup(t, c, "Conv1", "BatchNormalization2", "Add3", "Relu4")
	if c.Rule[i] != "r3" || groupOfName(t, c, "Relu0") == i || len(c.Groups) != 2 {
		t.Errorf("groups %v rules %v", c.Groups, c.Rule)
	}
}

// TestGCOFMultiOutput: an Add read by two nodes is never fused with either (the paper's
// multi-output connection); the bound conv∘bn∘add is released, conv∘bn (r1) survives.
func TestGCOFMultiOutput(t *testing.T) {
	x := newGB(t)
	add := x.op("Add", convBN(x, x.input("in")), x.input("in2"))
	r := x.op("Relu", add)
	th := x.op("Tanh", add)
	g := x.build(r, th)
	rs := mustRules(t, table1)
	if !boundSeen(runPasses(g, rs)) {
		t.Fatal("conv∘bn∘add was never bound: the test no longer exercises unbind")
	}
	c := mustCoarsen(t, g, rs)
	i := sameGroup(t, c, "Conv0", "BatchNormalization1")
	if c.Rule[i] != "r1" || len(c.Groups) != 4 {
		t.Errorf("groups %v rules %v, want conv∘bn (r1), add, relu, tanh", c.Groups, c.Rule)
	}
}

// TestGCOFRefusesCycle: binding a→b would close the cycle {a,b}→c→{a,b} through the side
// path a→c→b; the merge is refused.
func TestGCOFRefusesCycle(t *testing.T) {
	rs := mustRules(t, `
name: fork
absorb: false
rules:
  - name: f
    steps: [{op: Abs}, {op: Neg}, {op: Exp, from: [0]}]
`)
	x := newGB(t)
	a := x.op("Abs", x.input("in"))
	cc := x.op("Exp", a)
	b := x.op("Neg", a, cc)
	g := x.build(b)
	c := mustCoarsen(t, g, rs)
	if len(c.Groups) != 3 || c.stats.refused != 1 {
		t.Errorf("groups %v, %d refusals; want 3 singletons and 1 refusal", c.Groups, c.stats.refused)
	}
	if err := checkWorkingDAG(g, rs); err != nil {
		t.Error(err)
	}
}

func TestViews(t *testing.T) {
	build := func() *graph.Graph {
		x := newGB(t)
		in := x.input("in")
		conv := x.op("Conv", in, x.weight("w"))
		relu := x.op("Relu", x.op("Reshape", conv, x.constant()))
		add := x.op("Add", relu, in)
		th := x.op("Tanh", add)
		sg := x.op("Sigmoid", x.op("Flatten", add))
		return x.build(th, sg)
	}
	g := build()
	// ORT: the Reshape joins the Conv, but ORT does not fuse Conv and Relu across it.
	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cpu"))
	i := sameGroup(t, c, "Conv0", "Reshape2", "Constant1")
	if c.Rule[i] != "views" || groupOfName(t, c, "Relu3") == i {
		t.Errorf("ort-cpu: group %v rule %q; Relu in %d", groupNames(c, i), c.Rule[i], groupOfName(t, c, "Relu3"))
	}
	// The Flatten cannot join the Add (read twice): it joins its reader.
	if j := sameGroup(t, c, "Flatten6", "Sigmoid7"); c.Rule[j] != "views" {
		t.Errorf("ort-cpu: flatten group rule %q", c.Rule[j])
	}
	// TensorRT removes no-op shuffles before fusing: Conv and Relu fuse through the view.
	c = mustCoarsen(t, g, mustBuiltin(t, "tensorrt"))
	if i := sameGroup(t, c, "Conv0", "Reshape2", "Relu3"); c.Rule[i] != "conv-act" {
		t.Errorf("tensorrt: rule %q for %v", c.Rule[i], groupNames(c, i))
	}
}

func TestAbsorption(t *testing.T) {
	x := newGB(t)
	in := x.input("in")
	k := x.constant()                    // Constant0: read by two groups
	w2 := x.op("Sigmoid", x.weight("w")) // Sigmoid1: weight-only subgraph
	relu := x.op("Relu", in)             // Relu2
	mul := x.op("Mul", relu, k, w2)      // Mul3
	tanh := x.op("Tanh", in)             // Tanh4
	sh := x.shapeOf(relu)                // Shape5: shape arithmetic on an activation
	add := x.op("Add", tanh, k, sh)      // Add6
	lone := x.constant()                 // Constant7: a graph output nothing reads
	g := x.build(mul, add, lone)

	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cpu"))
	id := func(n string) int { v, _ := g.NodeByName(n); return v }
	for _, n := range []string{"Constant0", "Sigmoid1", "Shape5"} {
		if !c.Absorbed[id(n)] {
			t.Errorf("%s not absorbed", n)
		}
	}
	if c.Absorbed[id("Constant7")] || len(c.Groups) != 5 {
		t.Errorf("dead-end constant absorbed or wrong groups: %v", c.Groups)
	}
	gm, ga := groupOfName(t, c, "Mul3"), groupOfName(t, c, "Add6")
	if p := c.GroupOf[id("Constant0")]; p != min(gm, ga) || !reflect.DeepEqual(c.Dup[id("Constant0")], []int{max(gm, ga)}) {
		t.Errorf("Constant0: primary %d dup %v; groups Mul %d Add %d", p, c.Dup[id("Constant0")], gm, ga)
	}
	if m := c.Members(ga); !reflect.DeepEqual(m, []int{id("Constant0"), id("Shape5"), id("Add6")}) {
		t.Errorf("members of the Add group: %v", m)
	}
	// The Add group depends on Relu's output (the Shape reads it) without reading its data.
	cn := &c.Graph.Nodes[ga]
	var ins []string
	for _, ti := range cn.Inputs {
		ins = append(ins, c.Graph.Tensors[ti].Name+":"+c.Graph.Tensors[ti].Kind.String())
	}
	if strings.Join(ins, " ") != "Relu2:activation Tanh4:activation Constant0:initializer Shape5:initializer" {
		t.Errorf("Add group inputs: %v", ins)
	}
	if cn.InputBytes != 100 || cn.ParamBytes != 200 || cn.FLOPs != 1000 || cn.OutputBytes != 100 {
		t.Errorf("Add group costs: in %d param %d flops %d out %d", cn.InputBytes, cn.ParamBytes, cn.FLOPs, cn.OutputBytes)
	}
	// Expand: the shared constant goes to the earliest stage that uses it.
	stage := make([]int, len(c.Groups))
	stage[gm], stage[ga] = 2, 1
	st, err := c.Expand(stage)
	if err != nil {
		t.Fatal(err)
	}
	if st[id("Constant0")] != 1 || st[id("Mul3")] != 2 || !reflect.DeepEqual(c.Stages(id("Constant0"), stage), []int{1, 2}) {
		t.Errorf("expanded %v", st)
	}
	if _, err := c.Expand(stage[1:]); err == nil {
		t.Error("Expand accepted a short assignment")
	}
	// Without absorption every node is its own group.
	c = mustCoarsen(t, g, mustBuiltin(t, "none"))
	if len(c.Groups) != len(g.Nodes) || len(c.Dup) != 0 {
		t.Errorf("none: %d groups for %d nodes", len(c.Groups), len(g.Nodes))
	}
}

// TestAbsorbedGraphOutput: a constant that is a graph output and read by two groups is
// produced by its primary group, which the other reads it from.
func TestAbsorbedGraphOutput(t *testing.T) {
	x := newGB(t)
	in := x.input("in")
	k := x.constant()
	a := x.op("Mul", x.op("Relu", in), k)
	b := x.op("Add", x.op("Tanh", in), k)
	g := x.build(a, b, k)
	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cuda"))
	id, _ := c.Graph.TensorByName(k)
	p := c.Graph.Tensors[id].Producer
	if p < 0 || p != c.GroupOf[0] || len(c.Graph.Tensors[id].Consumers) != 1 {
		t.Errorf("constant output produced by %d (primary %d), read by %v", p, c.GroupOf[0], c.Graph.Tensors[id].Consumers)
	}
}

func TestFusedKernelCost(t *testing.T) {
	x := newGB(t)
	x.bytes["in"], x.bytes["Conv0"], x.bytes["BatchNormalization1"], x.bytes["Relu2"] = 1000, 800, 800, 800
	out := x.op("Relu", convBN(x, x.input("in")))
	g := x.build(out)
	c := mustCoarsen(t, g, mustBuiltin(t, "ort-cpu"))
	if len(c.Groups) != 1 || c.Rule[0] != "conv-bn-act" {
		t.Fatalf("groups %v rules %v", c.Groups, c.Rule)
	}
	n := &c.Graph.Nodes[0]
	// Reads the input and five weights (100 bytes each), writes the Relu output; the Conv
	// and BN outputs are never materialised.
	if n.FLOPs != 3000 || n.InputBytes != 1000 || n.ParamBytes != 500 || n.OutputBytes != 800 {
		t.Errorf("costs: flops %d in %d param %d out %d", n.FLOPs, n.InputBytes, n.ParamBytes, n.OutputBytes)
	}
	if n.OpType != "conv-bn-act" || n.Domain != Domain || n.Name != "conv-bn-act:Conv0" {
		t.Errorf("identity: %s %s %s", n.Name, n.Domain, n.OpType)
	}
	roof := func(_ int, members []int, n *graph.Node) float64 {
		if len(members) != 3 {
			t.Errorf("estimate got members %v", members)
		}
		return float64(n.InputBytes + n.ParamBytes + n.OutputBytes)
	}
	if got := c.Times(roof, nil); got[0] != 2300 {
		t.Errorf("estimated time %v", got)
	}
	if got := c.Times(roof, MeasuredShares([]float64{1, 2, 4})); got[0] != 7 {
		t.Errorf("measured time %v, want the members' shares summed", got)
	}
	if got := c.Times(roof, MeasuredShares([]float64{1, math.NaN(), 4})); got[0] != 2300 {
		t.Errorf("a group with an unmeasured member: %v, want the estimate", got)
	}
	if got := c.Times(roof, MeasuredShares([]float64{1})); got[0] != 2300 {
		t.Errorf("short measurements: %v, want the estimate", got)
	}
}

// TestPatterns: each transformer pattern, built as PyTorch exports it, becomes one group.
func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		name, set, rule string
		build           func(x *gb, in string) string
	}{
		{"gelu", "ort-cuda", "gelu", func(x *gb, in string) string {
			e := x.op("Add", x.op("Erf", x.op("Div", in, x.constant())), x.constant())
			return x.op("Mul", x.op("Mul", in, e), x.constant())
		}},
		{"gelu-half-first", "ort-cuda", "gelu-half-first", func(x *gb, in string) string {
			h := x.op("Mul", in, x.constant())
			e := x.op("Add", x.op("Erf", x.op("Div", in, x.constant())), x.constant())
			return x.op("Mul", h, e)
		}},
		{"fast-gelu", "ort-cpu", "fast-gelu", func(x *gb, in string) string {
			p := x.op("Mul", x.op("Pow", in, x.constant()), x.constant())
			th := x.op("Tanh", x.op("Mul", x.op("Add", in, p), x.constant()))
			return x.op("Mul", x.op("Mul", in, x.op("Add", th, x.constant())), x.constant())
		}},
		{"silu", "ort-cuda", "silu", func(x *gb, in string) string {
			return x.op("Mul", in, x.op("Sigmoid", in))
		}},
		{"quick-gelu", "ort-cpu", "quick-gelu-alpha", func(x *gb, in string) string {
			return x.op("Mul", in, x.op("Sigmoid", x.op("Mul", in, x.constant())))
		}},
		{"layernorm", "ort-cuda", "layernorm", func(x *gb, in string) string {
			m := x.op("ReduceMean", in)
			d := x.op("Sub", in, m)
			v := x.op("ReduceMean", x.op("Pow", d, x.constant()))
			s := x.op("Sqrt", x.op("Add", v, x.constant()))
			return x.op("Add", x.op("Mul", x.op("Div", d, s), x.weight("gamma")), x.weight("beta"))
		}},
		{"attention", "ort-cuda", "attention-core", func(x *gb, in string) string {
			s := x.op("Mul", x.op("MatMul", in, x.input("kt")), x.constant())
			return x.op("MatMul", x.op("Softmax", x.op("Add", s, x.input("mask"))), x.input("v"))
		}},
		{"conv-silu", "tensorrt", "conv-silu", func(x *gb, in string) string {
			cv := x.op("Conv", in, x.weight("w"))
			return x.op("Mul", cv, x.op("Sigmoid", cv))
		}},
		{"conv-bn-clip", "ort-cpu", "conv-bn-act", func(x *gb, in string) string {
			return x.op("Clip", convBN(x, in), x.constant(), x.constant())
		}},
		{"conv-bn-silu", "tensorrt", "conv-bn-silu", func(x *gb, in string) string {
			bn := convBN(x, in)
			return x.op("Mul", bn, x.op("Sigmoid", bn))
		}},
		{"conv-bn-leakyrelu", "tensorrt", "conv-bn-act", func(x *gb, in string) string {
			return x.op("LeakyRelu", convBN(x, in))
		}},
		{"residual", "ort-cuda", "conv-add-relu", func(x *gb, in string) string {
			return x.op("Relu", x.op("Add", x.op("Conv", in, x.weight("w")), in))
		}},
		{"matmul-bias-relu", "ort-cpu", "matmul-bias-act", func(x *gb, in string) string {
			return x.op("Relu", x.op("Add", x.op("MatMul", in, x.weight("w")), x.weight("b")))
		}},
		{"gemm-relu-cpu", "ort-cpu", "gemm-act", func(x *gb, in string) string {
			return x.op("Relu", x.op("Gemm", in, x.weight("w"), x.weight("b")))
		}},
		{"skip-layernorm-op", "ort-cuda", "skip-layernorm-op", func(x *gb, in string) string {
			return x.op("LayerNormalization", x.op("Add", in, x.input("res")), x.weight("g"), x.weight("b"))
		}},
		{"bias-gelu", "ort-cuda", "bias-gelu", func(x *gb, in string) string {
			f := x.op("Add", in, x.weight("bias"))
			e := x.op("Add", x.op("Erf", x.op("Div", f, x.constant())), x.constant())
			return x.op("Mul", x.op("Mul", f, e), x.constant())
		}},
		{"matmul-bias-gelu", "tensorrt", "matmul-bias-gelu", func(x *gb, in string) string {
			f := x.op("Add", x.op("MatMul", in, x.weight("w")), x.weight("bias"))
			e := x.op("Add", x.op("Erf", x.op("Div", f, x.constant())), x.constant())
			return x.op("Mul", x.op("Mul", f, e), x.constant())
		}},
		{"pointwise", "tensorrt", "pointwise-chain", func(x *gb, in string) string {
			return x.op("Exp", x.op("Neg", x.op("Abs", in)))
		}},
		{"shuffles", "tensorrt", "shuffle-chain", func(x *gb, in string) string {
			return x.op("Transpose", x.op("Transpose", in))
		}},
		{"injective", "generic", "injective-chain", func(x *gb, in string) string {
			return x.op("Tanh", x.op("Slice", x.op("Exp", in), x.constant(), x.constant()))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newGB(t)
			in := x.op("Identity", x.input("in"))
			start := x.n
			out := tc.build(x, in)
			end := x.n
			// A second reader of the pattern's input, as in real models.
			g := x.build(out, x.op("Relu", in))
			c := mustCoarsen(t, g, mustBuiltin(t, tc.set))
			i := groupOfName(t, c, out)
			for u := start; u < end; u++ {
				if !c.Absorbed[u] && c.GroupOf[u] != i {
					t.Errorf("%s: %s is not in the pattern's group %v", tc.set, g.Nodes[u].Name, groupNames(c, i))
				}
			}
			if c.Rule[i] != tc.rule {
				t.Errorf("%s: group %v rule %q, want %q", tc.set, groupNames(c, i), c.Rule[i], tc.rule)
			}
			if j := groupOfName(t, c, "Identity0"); j == i {
				t.Errorf("%s: the pattern's input producer joined the pattern", tc.set)
			}
		})
	}
}

// TestPatternsNotFused: fusions a backend does not do stay apart.
func TestPatternsNotFused(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		build     func(x *gb, in string) (a, b string)
	}{
		{"cuda conv+clip", "ort-cuda", func(x *gb, in string) (string, string) {
			cv := x.op("Conv", in, x.weight("w"))
			return cv, x.op("Clip", cv, x.constant(), x.constant())
		}},
		{"cuda gemm+relu", "ort-cuda", func(x *gb, in string) (string, string) {
			gm := x.op("Gemm", in, x.weight("w"), x.weight("b"))
			return gm, x.op("Relu", gm)
		}},
		{"cuda conv+residual add without relu", "ort-cuda", func(x *gb, in string) (string, string) {
			cv := x.op("Conv", in, x.weight("w"))
			return cv, x.op("Add", cv, in)
		}},
		{"clip with a computed bound", "ort-cpu", func(x *gb, in string) (string, string) {
			cv := x.op("Conv", in, x.weight("w"))
			return cv, x.op("Clip", cv, x.op("Relu", in), x.constant())
		}},
		{"layernorm whose centred value is read elsewhere", "ort-cuda", func(x *gb, in string) (string, string) {
			m := x.op("ReduceMean", in)
			d := x.op("Sub", in, m)
			x.b.AddOutput(d)
			v := x.op("ReduceMean", x.op("Pow", d, x.constant()))
			s := x.op("Sqrt", x.op("Add", v, x.constant()))
			return m, x.op("Add", x.op("Mul", x.op("Div", d, s), x.weight("g")), x.weight("b"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newGB(t)
			in := x.op("Identity", x.input("in"))
			a, b := tc.build(x, in)
			g := x.build(b, x.op("Relu", in))
			c := mustCoarsen(t, g, mustBuiltin(t, tc.set))
			if ga, gb := groupOfName(t, c, a), groupOfName(t, c, b); ga == gb {
				t.Errorf("%s: %s and %s fused (%s: %v)", tc.set, a, b, c.Rule[ga], groupNames(c, ga))
			}
		})
	}
}

func TestEdgeCases(t *testing.T) {
	for _, set := range BuiltinNames() {
		rs := mustBuiltin(t, set)
		// No nodes; an output that is an input.
		x := newGB(t)
		in := x.input("in")
		g := x.build(in)
		c := mustCoarsen(t, g, rs)
		if len(c.Groups) != 0 || len(c.Graph.Outputs) != 1 {
			t.Errorf("%s: empty graph gives %d groups, %d outputs", set, len(c.Groups), len(c.Graph.Outputs))
		}
		// A node with a subgraph capturing an outer tensor and a constant; a two-output node.
		x = newGB(t)
		in = x.input("in")
		r := x.op("Relu", in)
		k := x.constant()
		x.b.AddNode("If0", "If", "", []string{x.input("cond")}, []string{"if_out"}, []string{r, k}, nil)
		x.b.AddNode("Split0", "Split", "", []string{"if_out"}, []string{"sa", "sb"}, nil, nil)
		out := x.op("Add", "sa", x.op("Tanh", "sb"))
		g = x.build(out, "sa")
		if v, _ := g.NodeByName("If0"); true {
			g.Nodes[v].Subgraphs = 1
		}
		c = mustCoarsen(t, g, rs)
		gi := groupOfName(t, c, "If0")
		var ins []string
		for _, ti := range c.Graph.Nodes[gi].Inputs {
			ins = append(ins, c.Graph.Tensors[ti].Name+":"+c.Graph.Tensors[ti].Kind.String())
		}
		sort.Strings(ins)
		// The capture is a dependency; the constant is folded into the If's kernel unless
		// nothing is absorbed.
		want := "Constant1:initializer Relu0:activation cond:input"
		if set == "none" {
			want = "Constant1:activation Relu0:activation cond:input"
		}
		if strings.Join(ins, " ") != want {
			t.Errorf("%s: If group reads %v, want %s", set, ins, want)
		}
	}
}
