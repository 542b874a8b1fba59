package ingest

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// subgraphCosts is what inference learns about control-flow subgraphs (If branches, Loop and
// Scan bodies) for costing the nodes that hold them: the FLOPs of each subgraph as last
// inferred (a Loop body's last pass has the shapes that hold on every iteration; nested
// control flow included), and the trip counts of Loop and Scan bodies where inference knows
// them. Subgraphs are keyed by their protobuf, which is unique per attribute.
type subgraphCosts struct {
	flops map[*onnxpb.GraphProto]int64
	trips map[*onnxpb.GraphProto]int64
}

func newSubgraphCosts() *subgraphCosts {
	return &subgraphCosts{flops: map[*onnxpb.GraphProto]int64{}, trips: map[*onnxpb.GraphProto]int64{}}
}

// graphFLOPs sums the FLOPs of the nodes of an inferred subgraph (nodes are its protobufs, in
// graph order), writing what inference found into the subgraph's tensors first.
func (inf *inferer) graphFLOPs(nodes []*onnxpb.NodeProto) int64 {
	g := inf.g
	for id := range g.Tensors {
		t, ti := &g.Tensors[id], &inf.info[id]
		t.DType, t.Shape = ti.dt, ti.shape
		if b, err := graph.ByteSize(ti.dt, ti.shape); err == nil {
			t.Bytes = b
		}
	}
	var s int64
	for v := range g.Nodes {
		n := &g.Nodes[v]
		f := nodeFLOPs(g, n)
		if v < len(nodes) { // (a subgraph's nodes do not count their Subgraphs)
			cf, _ := inf.m.sub.controlFLOPs(n, nodes[v])
			f = addSat(f, cf)
		}
		s = addSat(s, max(f, 0))
	}
	return s
}

// controlFLOPs returns the FLOPs of the subgraphs of node n (np its protobuf) and, where the
// count is a choice or a guess, a note saying so:
//
//	If    the costlier branch (one of the two runs; which one is known only at run time)
//	Loop  the body times the trip count when inference knows it (a constant M and a
//	      condition that stays true), otherwise the body once
//	Scan  the body times the scanned length when known, otherwise once
//	other each subgraph once
//
// A subgraph that inference could not analyse counts 0.
func (sc *subgraphCosts) controlFLOPs(n *graph.Node, np *onnxpb.NodeProto) (int64, string) {
	if sc == nil || np == nil {
		return 0, ""
	}
	sub := func(name string) (*onnxpb.GraphProto, int64) {
		for _, a := range np.Attribute {
			if a.GetName() == name && a.GetG() != nil {
				return a.GetG(), sc.flops[a.GetG()]
			}
		}
		return nil, 0
	}
	label := fmt.Sprintf("node %s (%s)", n.Label(), n.OpType)
	if n.Domain == "" || n.Domain == "ai.onnx" {
		switch n.OpType {
		case optype.If:
			_, th := sub("then_branch")
			_, el := sub("else_branch")
			return max(th, el), fmt.Sprintf("%s costs its costlier branch: then_branch %d FLOPs, else_branch %d FLOPs", label, th, el)
		case optype.Loop, optype.Scan:
			body, f := sub("body")
			if body == nil {
				return 0, ""
			}
			if trips, ok := sc.trips[body]; ok {
				return mulSat(f, trips), ""
			}
			what := "trip count"
			if n.OpType == optype.Scan {
				what = "scanned length"
			}
			return f, fmt.Sprintf("%s: %s unknown, its body (%d FLOPs) counted once", label, what, f)
		}
	}
	var s int64
	for _, a := range np.Attribute {
		if g := a.GetG(); g != nil {
			s = addSat(s, sc.flops[g])
		}
		for _, g := range a.GetGraphs() {
			s = addSat(s, sc.flops[g])
		}
	}
	return s, ""
}

// recordTrips notes the trip count of the body of the node c infers, when known.
func (c *nctx) recordTrips(d graph.Dim) {
	body := c.attrProto("body").GetG()
	if body != nil && d.Known() && c.m.sub != nil {
		c.m.sub.trips[body] = d.Value
	}
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// subgraphWeights sums the elements and bytes of the weights stored inside the subgraphs of
// node np (their initializers and the tensor values of their Constant nodes, nested subgraphs
// included). Every branch counts: all of them are loaded with the model.
func subgraphWeights(np *onnxpb.NodeProto) (elems, bytes int64) {
	var walk func(g *onnxpb.GraphProto, depth int)
	tensor := func(t *onnxpb.TensorProto) {
		if t == nil {
			return
		}
		shape, err := tensorShape(t)
		if err != nil {
			return
		}
		n, err := shape.NumElements()
		if err != nil {
			return
		}
		if b, err := graph.ByteSize(graph.DType(t.GetDataType()), shape); err == nil && b > 0 {
			elems, bytes = addSat(elems, n), addSat(bytes, b)
		}
	}
	walk = func(g *onnxpb.GraphProto, depth int) {
		if g == nil || depth > maxSubgraphDepth {
			return
		}
		for _, t := range g.Initializer {
			tensor(t)
		}
		for _, n := range g.Node {
			for _, a := range n.Attribute {
				if n.GetOpType() == optype.Constant && (n.GetDomain() == "" || n.GetDomain() == "ai.onnx") && a.GetName() == "value" {
					tensor(a.GetT())
				}
				walk(a.GetG(), depth+1)
				for _, sg := range a.GetGraphs() {
					walk(sg, depth+1)
				}
			}
		}
	}
	for _, a := range np.Attribute {
		walk(a.GetG(), 1)
		for _, sg := range a.GetGraphs() {
			walk(sg, 1)
		}
	}
	return elems, bytes
}
