package fusion

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
)

// checkCoarse verifies the contract documented on Grouping.
func checkCoarse(c *Grouping, rs *RuleSet) error {
	g, cg := c.Orig, c.Graph
	if len(cg.Nodes) != len(c.Groups) || len(c.Rule) != len(c.Groups) || len(c.GroupOf) != len(g.Nodes) {
		return fmt.Errorf("sizes: %d coarse nodes, %d groups, %d rules, %d GroupOf for %d nodes",
			len(cg.Nodes), len(c.Groups), len(c.Rule), len(c.GroupOf), len(g.Nodes))
	}
	// Groups partition the nodes; GroupOf agrees.
	count := make([]int, len(g.Nodes))
	for i, grp := range c.Groups {
		kernel := 0
		for j, v := range grp {
			if j > 0 && grp[j-1] >= v {
				return fmt.Errorf("group %d is not ascending: %v", i, grp)
			}
			count[v]++
			if c.GroupOf[v] != i {
				return fmt.Errorf("node %s is in group %d but GroupOf says %d", g.Nodes[v].Label(), i, c.GroupOf[v])
			}
			if !c.Absorbed[v] {
				kernel++
			}
		}
		if kernel == 0 {
			return fmt.Errorf("group %d has no kernel node", i)
		}
	}
	for v, n := range count {
		if n != 1 {
			return fmt.Errorf("node %s is in %d groups", g.Nodes[v].Label(), n)
		}
	}
	// Absorbed nodes only are duplicated; the primary is the earliest group; every group
	// holding a consumer of an absorbed node holds the node.
	holds := make([]map[int]bool, len(g.Nodes))
	for v := range g.Nodes {
		holds[v] = map[int]bool{c.GroupOf[v]: true}
		for _, x := range c.Dup[v] {
			if !c.Absorbed[v] {
				return fmt.Errorf("node %s is duplicated but not absorbed", g.Nodes[v].Label())
			}
			if x <= c.GroupOf[v] {
				return fmt.Errorf("absorbed %s: primary %d, duplicate in %d", g.Nodes[v].Label(), c.GroupOf[v], x)
			}
			holds[v][x] = true
		}
	}
	for v := range g.Nodes {
		if !c.Absorbed[v] {
			continue
		}
		if !absorbable(g, &g.Nodes[v]) || rs == nil || !rs.Absorb {
			return fmt.Errorf("node %s is absorbed but not known before run time", g.Nodes[v].Label())
		}
		for _, x := range g.Succs(v) {
			for gi := range holds[x] {
				if !holds[v][gi] {
					return fmt.Errorf("group %d holds %s but not the absorbed %s it reads", gi, g.Nodes[x].Label(), g.Nodes[v].Label())
				}
			}
		}
	}
	// The coarse graph is in topological order and keeps the graph's inputs and outputs.
	for i := range cg.Nodes {
		for _, p := range cg.Preds(i) {
			if p >= i {
				return fmt.Errorf("coarse node %d reads from coarse node %d", i, p)
			}
		}
	}
	names := func(gr *graph.Graph, ids []int) string {
		s := ""
		for _, t := range ids {
			s += gr.Tensors[t].Name + ","
		}
		return s
	}
	if names(g, g.Outputs) != names(cg, cg.Outputs) || names(g, g.Inputs) != names(cg, cg.Inputs) {
		return fmt.Errorf("graph inputs/outputs changed")
	}
	// Tensors keep their identity; costs price the fused kernel.
	var flops, kernelFlops int64
	for v := range g.Nodes {
		if !c.Absorbed[v] {
			kernelFlops += g.Nodes[v].FLOPs
		}
	}
	for i := range cg.Nodes {
		n := &cg.Nodes[i]
		flops += n.FLOPs
		var params, acts, outs int64
		for _, t := range n.Inputs {
			ct := &cg.Tensors[t]
			ot, ok := g.TensorByName(ct.Name)
			if !ok || g.Tensors[ot].Bytes != ct.Bytes {
				return fmt.Errorf("coarse tensor %s does not match the original", ct.Name)
			}
			if ct.Kind == graph.Initializer {
				params += ct.Bytes
			} else {
				acts += ct.Bytes
			}
		}
		for _, t := range n.Outputs {
			outs += cg.Tensors[t].Bytes
		}
		if n.ParamBytes != params || n.OutputBytes != outs || n.InputBytes > acts {
			return fmt.Errorf("coarse node %s: param %d/%d in %d/%d out %d/%d", n.Name, n.ParamBytes, params, n.InputBytes, acts, n.OutputBytes, outs)
		}
	}
	if flops != kernelFlops {
		return fmt.Errorf("coarse FLOPs %d, kernel FLOPs %d", flops, kernelFlops)
	}
	// Valid connections: everything a group exports comes from one exit node (through views
	// inside the group).
	views := map[string]bool{}
	if rs != nil {
		for _, v := range rs.Views {
			views[v] = true
		}
	}
	for i := range cg.Nodes {
		exit := -1
		for _, t := range cg.Nodes[i].Outputs {
			ot, _ := g.TensorByName(cg.Tensors[t].Name)
			p := g.Tensors[ot].Producer
			if c.Absorbed[p] {
				continue // a constant that is a graph output
			}
			for views[opKey(&g.Nodes[p])] && len(g.Nodes[p].Inputs) > 0 && g.Nodes[p].Inputs[0] >= 0 {
				q := g.Tensors[g.Nodes[p].Inputs[0]].Producer
				if q < 0 || c.GroupOf[q] != i || c.Absorbed[q] {
					break
				}
				p = q
			}
			if exit >= 0 && p != exit {
				return fmt.Errorf("group %d (%s) exports tensors of %s and of %s", i, c.Rule[i], g.Nodes[exit].Label(), g.Nodes[p].Label())
			}
			exit = p
		}
	}
	// Expanding a pipeline assignment of the coarse graph gives one of the original graph.
	r := rand.New(rand.NewSource(int64(len(cg.Nodes))))
	for trial := 0; trial < 3; trial++ {
		stage := make([]int, len(cg.Nodes))
		for i := range cg.Nodes {
			for _, p := range cg.Preds(i) {
				stage[i] = max(stage[i], stage[p])
			}
			if r.Intn(4) == 0 {
				stage[i]++
			}
		}
		ex, err := c.Expand(stage)
		if err != nil {
			return err
		}
		if err := g.CheckStageOrder(ex); err != nil {
			return fmt.Errorf("expanded assignment: %v", err)
		}
	}
	return nil
}

// motif appends a typical fusible subgraph reading x and returns its output.
func motif(x *gb, r *rand.Rand, in string) string {
	w := func() string { return x.weight(fmt.Sprintf("w%d", x.n)) }
	c := func() string { return x.constant() }
	switch r.Intn(9) {
	case 0: // conv-bn-relu
		return x.op("Relu", x.op("BatchNormalization", x.op("Conv", in, w()), w(), w(), w(), w()))
	case 1: // residual
		return x.op("Relu", x.op("Add", x.op("Conv", in, w()), in))
	case 2: // decomposed LayerNorm
		m := x.op("ReduceMean", in)
		d := x.op("Sub", in, m)
		v := x.op("ReduceMean", x.op("Pow", d, c()))
		s := x.op("Sqrt", x.op("Add", v, c()))
		return x.op("Add", x.op("Mul", x.op("Div", d, s), w()), w())
	case 3: // GELU (erf)
		e := x.op("Add", x.op("Erf", x.op("Div", in, c())), c())
		return x.op("Mul", x.op("Mul", in, e), c())
	case 4: // attention core
		s := x.op("Mul", x.op("MatMul", in, x.op("Transpose", in)), c())
		return x.op("MatMul", x.op("Softmax", x.op("Add", s, in)), in)
	case 5: // SiLU
		return x.op("Mul", in, x.op("Sigmoid", in))
	case 6: // MatMul + bias + act
		return x.op("Relu", x.op("Add", x.op("MatMul", in, w()), w()))
	case 7: // views and shape arithmetic
		sh := x.shapeOf(in)
		return x.op("Transpose", x.op("Reshape", x.op("Transpose", in), x.op("Gather", sh, c())))
	default: // elementwise chain
		return x.op("Tanh", x.op("Sigmoid", x.op("Mul", in, c())))
	}
}

var randomOps = []string{"Relu", "Add", "Mul", "MatMul", "Sigmoid", "Conv", "Concat", "Sub", "Div",
	"Transpose", "Reshape", "Softmax", "Clip", "Tanh", "Gemm", "Erf", "Where", "Identity", "Squeeze"}

// randomGraph makes a random DAG of about n nodes: random ops reading 1-3 earlier tensors
// (recent ones more often), constants and weights, motifs, shape arithmetic, multi-output
// nodes, several graph outputs.
func randomGraph(t testing.TB, r *rand.Rand, n int) *graph.Graph {
	x := &gb{t: t, b: graph.NewBuilder(fmt.Sprintf("random%d", n)), bytes: map[string]int64{}, vals: map[string][]int64{}}
	var pool []string
	for i := 0; i <= r.Intn(3); i++ {
		pool = append(pool, x.input(fmt.Sprintf("in%d", i)))
	}
	pick := func() string {
		k := len(pool) - 1 - int(r.ExpFloat64()*3)
		if k < 0 {
			k = r.Intn(len(pool))
		}
		return pool[k]
	}
	for x.n < n {
		switch k := r.Intn(10); {
		case k < 3:
			pool = append(pool, motif(x, r, pick()))
		case k == 3: // constant arithmetic and a weight-only subgraph
			pool = append(pool, x.op("Mul", pick(), x.op("Sigmoid", x.weight(fmt.Sprintf("w%d", x.n)))))
		case k == 4: // a two-output node
			name := fmt.Sprintf("Split%d", x.n)
			x.n++
			x.b.AddNode(name, "Split", "", []string{pick()}, []string{name + "_a", name + "_b"}, nil, nil)
			pool = append(pool, name+"_a", name+"_b")
		default:
			ins := []string{pick()}
			for j := r.Intn(3); j > 0; j-- {
				switch r.Intn(3) {
				case 0:
					ins = append(ins, x.constant())
				default:
					ins = append(ins, pick())
				}
			}
			pool = append(pool, x.op(randomOps[r.Intn(len(randomOps))], ins...))
		}
	}
	// Outputs: the last tensor, a few random ones, and every unread tensor.
	read := map[string]bool{}
	g0, err := x.b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range g0.Tensors {
		if len(g0.Tensors[i].Consumers) > 0 {
			read[g0.Tensors[i].Name] = true
		}
	}
	x2 := &gb{b: graph.NewBuilder(g0.Name), bytes: map[string]int64{}, vals: x.vals}
	for _, in := range g0.Inputs {
		x2.b.AddInput(g0.Tensors[in].Name)
	}
	for i := range g0.Tensors {
		if g0.Tensors[i].Kind == graph.Initializer {
			x2.b.AddInitializer(g0.Tensors[i].Name)
		}
	}
	for i := range g0.Nodes {
		nd := &g0.Nodes[i]
		var ins, outs []string
		for _, t := range nd.Inputs {
			ins = append(ins, g0.Tensors[t].Name)
		}
		for _, t := range nd.Outputs {
			outs = append(outs, g0.Tensors[t].Name)
		}
		x2.b.AddNode(nd.Name, nd.OpType, nd.Domain, ins, outs, nil, nd.Attrs)
	}
	outs := map[string]bool{pool[len(pool)-1]: true}
	for i := r.Intn(3); i > 0; i-- {
		outs[pool[r.Intn(len(pool))]] = true
	}
	for i := range g0.Tensors {
		tt := &g0.Tensors[i]
		if tt.Producer >= 0 && (outs[tt.Name] || !read[tt.Name]) {
			x2.b.AddOutput(tt.Name)
		}
	}
	g, err := x2.b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for i := range g.Tensors {
		x2.bytes[g.Tensors[i].Name] = int64(4 << r.Intn(10))
	}
	finishGraph(g, x2.bytes, x2.vals)
	return g
}

// TestPropertyRandomDAGs: on thousands of random DAGs and every built-in rule set, the
// coarse graph is acyclic, every node is in exactly one group, costs price the fused
// kernel, groups have one exit, and expanded pipeline assignments stay pipelines.
func TestPropertyRandomDAGs(t *testing.T) {
	graphs := 2000
	if testing.Short() {
		graphs = 300
	}
	var sets []*RuleSet
	for _, name := range BuiltinNames() {
		sets = append(sets, mustBuiltin(t, name))
	}
	sets = append(sets, mustRules(t, stressRules))
	r := rand.New(rand.NewSource(1))
	merged, refused := 0, 0
	for k := 0; k < graphs; k++ {
		g := randomGraph(t, r, 10+r.Intn(120))
		for _, rs := range sets {
			if err := checkWorkingDAG(g, rs); err != nil {
				t.Fatalf("graph %d, %s: %v", k, rs.Name, err)
			}
			c, err := Coarsen(g, rs)
			if err != nil {
				t.Fatalf("graph %d, %s: %v", k, rs.Name, err)
			}
			if err := checkCoarse(c, rs); err != nil {
				t.Fatalf("graph %d (%d nodes), %s: %v", k, len(g.Nodes), rs.Name, err)
			}
			merged += len(g.Nodes) - len(c.Groups)
			refused += c.stats.refused
		}
	}
	if merged == 0 {
		t.Fatal("no random graph was coarsened at all: the generator or the rules are broken")
	}
	if refused == 0 {
		t.Fatal("no merge was refused for closing a cycle: the stress rules no longer exercise the check")
	}
	t.Logf("%d nodes merged away, %d merges refused for closing a cycle", merged, refused)
}

// stressRules fork and join over common ops, so that partial matches bind across fan-outs
// whose other readers lie on side paths: merges that would close cycles.
const stressRules = `
name: stress
views: [Identity, Reshape]
transparent_views: true
rules:
  - name: fork-join
    steps:
      - op: [Relu, Add, Mul, Sigmoid, Conv, Transpose]
      - op: [Add, Mul, Sub, Div, MatMul, Softmax]
      - op: [Tanh, Add, Mul, Relu, Concat, Sigmoid, MatMul, Softmax]
        from: [0]
      - op: [Add, Mul, Concat, Sub, MatMul]
        from: [1, 2]
  - name: chain
    steps:
      - op: [Relu, Add, Mul, Sigmoid, Tanh, Sub, Div, Erf]
        repeat: true
`

// checkWorkingDAG runs the passes of Coarsen and checks, before unbind releases anything,
// that the working graph is acyclic and its labelling topological: the invariant every
// cycle check relies on.
func checkWorkingDAG(g *graph.Graph, rs *RuleSet) error {
	w := newWork(g, rs)
	w.foldViews(rs.Views)
	w.e.index()
	w.gcof(rs.Rules)
	d := &w.d
	indeg := map[int]int{}
	alive := 0
	for v := range d.alive {
		if !d.alive[v] {
			continue
		}
		alive++
		for x := range d.out[v] {
			if !d.alive[x] {
				return fmt.Errorf("edge to dead vertex %d", x)
			}
			if _, ok := d.in[x][v]; !ok {
				return fmt.Errorf("edge %d->%d missing from in-lists", v, x)
			}
			if d.ord[v] >= d.ord[x] {
				return fmt.Errorf("edge %d->%d against the topological labels %d, %d", v, x, d.ord[v], d.ord[x])
			}
			indeg[x]++
		}
	}
	var ready []int
	for v := range d.alive {
		if d.alive[v] && indeg[v] == 0 {
			ready = append(ready, v)
		}
	}
	seen := 0
	for len(ready) > 0 {
		v := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		seen++
		for x := range d.out[v] {
			if indeg[x]--; indeg[x] == 0 {
				ready = append(ready, x)
			}
		}
	}
	if seen != alive {
		return fmt.Errorf("the working graph has a cycle")
	}
	return nil
}

// corpus returns the models of the shared corpus, skipping the test when it is absent.
func corpus(t testing.TB) []string {
	dir := filepath.Join("..", "..", "shared", "models")
	files, _ := filepath.Glob(filepath.Join(dir, "*.onnx"))
	if len(files) == 0 {
		t.Skip("model corpus not found at " + dir)
	}
	return files
}

func loadModel(t testing.TB, path string) *graph.Graph {
	t.Helper()
	opts := ingest.Options{}
	if filepath.Base(path) == "mobilenet_v2_small_dynbatch.onnx" {
		opts.Dims = map[string]int64{"batch": 1}
	}
	m, err := ingest.Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m.Graph
}

// TestPropertyCorpus checks the same contract on every corpus model and rule set.
func TestPropertyCorpus(t *testing.T) {
	for _, f := range corpus(t) {
		g := loadModel(t, f)
		for _, name := range BuiltinNames() {
			rs := mustBuiltin(t, name)
			c, err := Coarsen(g, rs)
			if err != nil {
				t.Fatalf("%s, %s: %v", filepath.Base(f), name, err)
			}
			if err := checkCoarse(c, rs); err != nil {
				t.Errorf("%s, %s: %v", filepath.Base(f), name, err)
			}
		}
	}
	_ = os.Getenv
}
