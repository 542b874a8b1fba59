package fusion

import (
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph/dag"

	"fmt"
	"math"
	"sort"

	"github.com/onnxpart/onnxpart/graph"
)

// Domain is the operator domain of coarse nodes that stand for a fused group; their OpType
// is the rule's name.
const Domain = "onnxpart.fusion"

// Grouping is the original nodes grouped into fused kernels: the coarsened graph, one node
// per group, and its mapping back to the original nodes.
//
// Contract:
//   - Graph has one node per group, in a topological order of the groups (ties: the group
//     whose earliest member comes first in Orig.TopoOrder). It is a valid graph.Graph: acyclic,
//     with the original graph inputs and outputs, every tensor carrying its original name,
//     dtype, shape and bytes.
//   - Groups[i] are the primary members of coarse node i, ascending. Over all groups they
//     partition the original nodes: every original node is in exactly one group (GroupOf).
//   - An absorbed node (a constant, shape arithmetic, a weight-only subgraph: Absorbed[v]) is
//     also recomputed in every other group that uses it, listed in Dup[v] (ascending,
//     primary excluded). Its primary group is the earliest of them. Non-absorbed nodes have
//     no Dup entry.
//   - Coarse node i reads: the activations and graph inputs its members read from outside the
//     group (the tensors' producers are in other groups), and as initializers the constants
//     its kernel reads (original initializers, and the outputs of absorbed members, which a
//     backend folds before run time). It writes the tensors its members produce that another
//     group reads or that are graph outputs. Tensors internal to the group do not appear.
//   - Cost fields price the fused kernel: FLOPs sum over the non-absorbed members (absorbed
//     ones are folded before run time); InputBytes counts the non-constant tensors the
//     non-absorbed members read from outside; ParamBytes the distinct constants they read;
//     OutputBytes the tensors leaving the group. Intermediates are neither read nor written.
//     A roofline over these fields is the roofline of the fused kernel.
type Grouping struct {
	// Graph is the coarse graph, one node per group; Orig the graph that was coarsened.
	Graph *graph.Graph
	Orig  *graph.Graph
	// RuleSet names the rule set used.
	RuleSet string
	// Groups[i] are the primary members of coarse node i (original node indices, ascending).
	Groups [][]int
	// Rule is the rule that formed each group: a rule's name, "views" for a node with folded
	// views only, "" for a single node (possibly with absorbed constants).
	Rule []string
	// GroupOf[v] is the group holding original node v as a primary member.
	GroupOf []int
	// Dup[v] lists the other groups that recompute absorbed node v (ascending).
	Dup map[int][]int
	// Absorbed[v] marks original nodes absorbed as constants (folded before run time).
	Absorbed []bool

	dupIn [][]int // per group: the absorbed nodes it recomputes besides its primaries
	// invisible and pos are the coarsening's: nodes that name no group, and each node's
	// position in the order the rules were applied (for naming groups).
	invisible []bool
	pos       []int
	stats     stats
}

// stats records the work of a run, for tests and benchmarks.
type stats struct {
	merges   int // contractions made (views, binds, fusions)
	refused  int // contractions refused because they would close a cycle
	searched int // vertices visited by cycle checks
}

// Coarsen groups the nodes of g by the rule set: absorption of nodes known before run time
// (when rs.Absorb), folding of views, then GCOF (seed 004, Algorithm 1) with rs.Rules. g is
// not modified. It fails only on an internal inconsistency (the coarse graph would not be a
// DAG), which is a bug.
func Coarsen(g *graph.Graph, rs *RuleSet) (*Grouping, error) {
	w := newWork(g, rs)
	w.foldViews(rs.Views)
	w.e.index()
	w.gcof(rs.Rules)
	groups, rules := w.unbind()
	c, err := w.build(rs.Name, groups, rules)
	if err != nil {
		return nil, err
	}
	c.stats = stats{merges: len(w.members) - w.d.vertices0, refused: w.d.refused, searched: w.d.searched}
	return c, nil
}

// build orders the groups, attaches the absorbed nodes and makes the coarse graph.
func (w *work) build(ruleSet string, groups [][]int, rules []string) (*Grouping, error) {
	g, e := w.g, w.e
	n := len(g.Nodes)
	// Order the groups topologically (Kahn, ties by earliest member).
	k := len(groups)
	tmp := make([]int, n)
	key := make([]int, k)
	for i, mem := range groups {
		key[i] = len(g.Nodes)
		for _, v := range mem {
			tmp[v] = i
			key[i] = min(key[i], w.pos[v])
		}
	}
	var edges [][2]int
	for v, rd := range w.hRd {
		if e.absorbed[v] {
			continue
		}
		for _, x := range rd {
			if a, b := tmp[v], tmp[x]; a != b {
				edges = append(edges, [2]int{a, b})
			}
		}
	}
	prio := make([]float64, k)
	for i, x := range key {
		prio[i] = float64(x)
	}
	succ := dag.FromEdges(k, edges)
	var kahn dag.Kahn
	var order []int
	for _, i := range kahn.Sort(succ, succ.Reverse(), prio, dag.MinFirst, nil) {
		order = append(order, int(i))
	}
	if len(order) != k {
		return nil, diag.Internal("fusion: internal error: the groups of %s form a cycle", g.Name)
	}
	c := &Grouping{Orig: g, RuleSet: ruleSet, Groups: make([][]int, k), Rule: make([]string, k),
		GroupOf: make([]int, n), Dup: map[int][]int{}, Absorbed: append([]bool(nil), e.absorbed...)}
	for i, old := range order {
		c.Groups[i] = groups[old]
		c.Rule[i] = rules[old]
		for _, v := range groups[old] {
			c.GroupOf[v] = i
		}
	}
	// Absorbed nodes join every group that uses them, directly or through other absorbed
	// nodes; the earliest is primary.
	in := make([][]int, n) // node → all groups holding it, ascending
	topo := g.TopoOrder()
	for i := len(topo) - 1; i >= 0; i-- {
		v := topo[i]
		if !e.absorbed[v] {
			in[v] = []int{c.GroupOf[v]}
			continue
		}
		var s []int
		for _, x := range g.Succs(v) {
			s = append(s, in[x]...)
		}
		in[v] = sortedUnique(s)
	}
	for i := len(topo) - 1; i >= 0; i-- {
		v := topo[i]
		if !e.absorbed[v] {
			continue
		}
		c.GroupOf[v] = in[v][0]
		c.Groups[in[v][0]] = append(c.Groups[in[v][0]], v)
		if len(in[v]) > 1 {
			c.Dup[v] = in[v][1:]
		}
	}
	c.dupIn = make([][]int, k)
	for i := len(topo) - 1; i >= 0; i-- {
		v := topo[i]
		for _, gi := range c.Dup[v] {
			c.dupIn[gi] = append(c.dupIn[gi], v)
		}
	}
	for i := range c.Groups {
		sort.Ints(c.Groups[i])
	}
	c.invisible, c.pos = w.e.invisible, w.pos
	cg, err := c.makeGraph(in)
	if err != nil {
		return nil, err
	}
	c.Graph = cg
	return c, nil
}

// makeGraph builds the coarse graph.Graph; in lists the groups holding each node.
func (c *Grouping) makeGraph(in [][]int) (*graph.Graph, error) {
	g, absorbed := c.Orig, c.Absorbed
	b := graph.NewBuilder(g.Name)
	for d, v := range g.Opsets {
		b.SetOpset(d, v)
	}
	used := map[int]bool{}
	for _, t := range g.Inputs {
		b.AddInput(g.Tensors[t].Name)
		used[t] = true
	}
	holds := func(i, v int) bool { return contains(in[v], i) }
	for i, prim := range c.Groups {
		members := c.Members(i)
		var ins, consts, outs []int
		seenIn := map[int]bool{}
		var flops, inBytes, paramBytes, outBytes int64
		static := true
		compute := 0
		for _, v := range members {
			nd := &g.Nodes[v]
			kernel := !absorbed[v]
			if kernel {
				compute++
				flops += nd.FLOPs
				static = static && nd.Static
			}
			for _, t := range nd.Deps() {
				tt := &g.Tensors[t]
				if tt.Producer >= 0 && holds(i, tt.Producer) {
					// Internal, unless a kernel member reads an absorbed member's output:
					// then it is a folded constant of the kernel.
					if !kernel || !absorbed[tt.Producer] || seenIn[t] {
						continue
					}
					seenIn[t] = true
					switch {
					case tt.IsOutput && c.GroupOf[tt.Producer] == i:
						// The primary group produces it as a graph output: internal.
					case tt.IsOutput:
						// A graph output is produced once, by the primary group: read it
						// from there like an activation.
						ins = append(ins, t)
						inBytes += max(tt.Bytes, 0)
					default:
						consts = append(consts, t)
						paramBytes += max(tt.Bytes, 0)
					}
					continue
				}
				if seenIn[t] {
					continue
				}
				if tt.Kind == graph.Initializer {
					if !kernel {
						continue // weights of absorbed nodes are folded away
					}
					seenIn[t] = true
					consts = append(consts, t)
					paramBytes += max(tt.Bytes, 0)
					continue
				}
				if kernel {
					seenIn[t] = true
					inBytes += max(tt.Bytes, 0)
					ins = append(ins, t)
				}
			}
		}
		// Activation inputs read only by absorbed members (shape arithmetic on activations)
		// are dependencies without data traffic.
		for _, v := range members {
			if !absorbed[v] {
				continue
			}
			for _, t := range g.Nodes[v].Deps() {
				tt := &g.Tensors[t]
				if seenIn[t] || tt.Kind == graph.Initializer || (tt.Producer >= 0 && holds(i, tt.Producer)) {
					continue
				}
				seenIn[t] = true
				ins = append(ins, t)
			}
		}
		for _, v := range prim {
			for _, t := range g.Nodes[v].Outputs {
				if t < 0 {
					continue
				}
				tt := &g.Tensors[t]
				leaves := tt.IsOutput
				if !absorbed[v] {
					for _, x := range tt.Consumers {
						for _, j := range in[x] {
							if j != i {
								leaves = true
							}
						}
					}
				}
				if leaves {
					outs = append(outs, t)
					outBytes += max(tt.Bytes, 0)
				}
			}
		}
		sort.Ints(ins)
		sort.Ints(consts)
		sort.Ints(outs)
		var inNames, outNames []string
		for _, t := range ins {
			inNames = append(inNames, g.Tensors[t].Name)
			used[t] = true
		}
		for _, t := range consts {
			inNames = append(inNames, g.Tensors[t].Name)
			b.AddInitializer(g.Tensors[t].Name)
			used[t] = true
		}
		for _, t := range outs {
			outNames = append(outNames, g.Tensors[t].Name)
			used[t] = true
		}
		name, op, dom, attrs := c.describe(i)
		id := b.AddNode(name, op, dom, inNames, outNames, nil, attrs)
		nr := b.NodeRef(id)
		nr.FLOPs, nr.InputBytes, nr.ParamBytes, nr.OutputBytes = flops, inBytes, paramBytes, outBytes
		nr.Static = static && compute > 0
	}
	for _, t := range g.Outputs {
		b.AddOutput(g.Tensors[t].Name)
		used[t] = true
	}
	for t := range g.Tensors {
		if !used[t] {
			continue
		}
		src := &g.Tensors[t]
		dst := b.TensorRef(b.Tensor(src.Name))
		dst.DType, dst.Shape, dst.Bytes, dst.NonTensor, dst.Value = src.DType, src.Shape, src.Bytes, src.NonTensor, src.Value
	}
	cg, err := b.Build()
	if err != nil {
		return nil, diag.Internal("fusion: internal error: the coarse graph of %s is invalid: %w", g.Name, err)
	}
	return cg, nil
}

// describe names coarse node i: a fused group is "<rule>:<first kernel node>" of op type
// <rule> in Domain; any other group keeps the identity (name, op, attributes) of its one
// visible kernel node.
func (c *Grouping) describe(i int) (name, op, domain string, attrs []graph.Attr) {
	var visible []int
	for _, v := range c.Groups[i] {
		if !c.Absorbed[v] && !c.invisible[v] {
			visible = append(visible, v)
		}
	}
	if len(visible) == 0 { // a group of absorbed nodes only cannot occur; be safe
		visible = c.Groups[i][:1]
	}
	if c.Rule[i] != "" && c.Rule[i] != "views" {
		first := visible[0]
		for _, v := range visible {
			if c.pos[v] < c.pos[first] {
				first = v
			}
		}
		return c.Rule[i] + ":" + c.Orig.Nodes[first].Label(), c.Rule[i], Domain, nil
	}
	nd := &c.Orig.Nodes[visible[0]]
	return nd.Label(), nd.OpType, nd.Domain, nd.Attrs
}

// Resized is the coarse graph of the same groups over h, the original graph sized at other
// dims (the same model loaded with other --dim sizes: the same nodes and tensors): its
// kernels' FLOPs and bytes are h's. A rule set may group h differently by itself (rules
// that look at sizes); Resized keeps this coarsening's groups, so that one plan prices
// alike at every size.
func (c *Grouping) Resized(h *graph.Graph) (*graph.Graph, error) {
	g := c.Orig
	if len(h.Nodes) != len(g.Nodes) || len(h.Tensors) != len(g.Tensors) {
		return nil, fmt.Errorf("fusion: %s has %d nodes and %d tensors, the coarsened graph %d and %d", h.Name, len(h.Nodes), len(h.Tensors), len(g.Nodes), len(g.Tensors))
	}
	for v := range g.Nodes {
		if h.Nodes[v].OpType != g.Nodes[v].OpType || h.Nodes[v].Name != g.Nodes[v].Name {
			return nil, fmt.Errorf("fusion: node %d is %s in %s, %s in the coarsened graph", v, h.Nodes[v].Label(), h.Name, g.Nodes[v].Label())
		}
	}
	in := make([][]int, len(g.Nodes))
	for v := range in {
		in[v] = append([]int{c.GroupOf[v]}, c.Dup[v]...)
		sort.Ints(in[v])
	}
	d := *c
	d.Orig = h
	return d.makeGraph(in)
}

// Members returns every original node coarse node i computes: its primary members and the
// absorbed nodes it recomputes, ascending.
func (c *Grouping) Members(i int) []int {
	out := append(append([]int(nil), c.Groups[i]...), c.dupIn[i]...)
	sort.Ints(out)
	return out
}

// Expand turns a stage (or device) per coarse node into one per original node: a node takes
// its group's stage; an absorbed node held by several groups takes the smallest of their
// stages (the earliest consumer stage: emit copies the constant into later stages itself).
// If coarseStage is a pipeline assignment of Graph (every tensor flows to the same or a later
// stage), the result is one of Orig.
func (c *Grouping) Expand(coarseStage []int) ([]int, error) {
	if len(coarseStage) != len(c.Groups) {
		return nil, fmt.Errorf("fusion: expand: %d stages for %d coarse nodes", len(coarseStage), len(c.Groups))
	}
	out := make([]int, len(c.GroupOf))
	for v, gi := range c.GroupOf {
		s := coarseStage[gi]
		for _, x := range c.Dup[v] {
			s = min(s, coarseStage[x])
		}
		out[v] = s
	}
	return out, nil
}

// Stages returns every stage that computes original node v under coarseStage: one for a
// node in a single group, several for an absorbed node recomputed in groups on different
// stages. Ascending, without repetition.
func (c *Grouping) Stages(v int, coarseStage []int) []int {
	s := []int{coarseStage[c.GroupOf[v]]}
	for _, x := range c.Dup[v] {
		s = append(s, coarseStage[x])
	}
	return sortedUnique(s)
}

// Times prices each coarse node: measured(i, members) when it reports a time (a measured
// fused kernel, see MeasuredShares), else estimate(i, members, kernel), where kernel is the
// coarse node, whose cost fields price the fused kernel (e.g. profile's
// CostModel.KernelTime(c.Orig, members, kernel, device)). members are Members(i). measured
// may be nil.
func (c *Grouping) Times(estimate func(group int, members []int, kernel *graph.Node) float64,
	measured func(group int, members []int) (float64, bool)) []float64 {
	out := make([]float64, len(c.Groups))
	for i := range out {
		members := c.Members(i)
		if measured != nil {
			if t, ok := measured(i, members); ok {
				out[i] = t
				continue
			}
		}
		out[i] = estimate(i, members, &c.Graph.Nodes[i])
	}
	return out
}

// MeasuredShares adapts per-node times measured with the backend's own fusions on to
// Times' measured hook. In such a profile a fused kernel's time is shared among the original
// nodes it replaced and folded nodes have 0 (profile.Measurement.NodeTimes of an optimised
// ONNX Runtime run), so a group's time is the sum over its members — the fused kernel's time
// when the backend fused exactly the group, the time of the kernels that ran for those nodes
// otherwise. A group with a member that has no measurement (NaN, or beyond nodeTimes) has none.
// Absorbed members recomputed in several groups are counted in each (they are 0 when folded).
func MeasuredShares(nodeTimes []float64) func(group int, members []int) (float64, bool) {
	return func(_ int, members []int) (float64, bool) {
		s := 0.0
		for _, v := range members {
			if v >= len(nodeTimes) || math.IsNaN(nodeTimes[v]) {
				return 0, false
			}
			s += nodeTimes[v]
		}
		return s, true
	}
}
