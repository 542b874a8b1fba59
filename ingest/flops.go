package ingest

import (
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops"
)

// FLOPs and bytes. Each node's FLOPs come from its operator's entry in the registry
// (internal/ops, which documents the formulas). Bytes: InputBytes sums the activations and
// graph inputs a node reads, ParamBytes the weights (initializers and Constant-node values),
// OutputBytes what it writes; unknown sizes count 0.

func (m *Model) countCosts() {
	g := m.Graph
	for i := range g.Nodes {
		n := &g.Nodes[i]
		n.FLOPs = nodeFLOPs(g, n)
		if n.Subgraphs > 0 && i < len(m.proto.GetGraph().GetNode()) {
			f, note := m.sub.controlFLOPs(n, m.proto.Graph.Node[i])
			n.FLOPs = addSat(max(n.FLOPs, 0), f)
			if note != "" {
				m.Notes = append(m.Notes, diag.Notef(diag.NoteApprox, "%s", note).About(diag.Node, n.Label()))
			}
			_, n.SubgraphParamBytes = subgraphWeights(m.proto.Graph.Node[i])
		}
		n.InputBytes, n.ParamBytes, n.OutputBytes = 0, 0, 0
		seen := map[int]bool{}
		for _, t := range n.Deps() {
			if seen[t] {
				continue
			}
			seen[t] = true
			b := max(g.Tensors[t].Bytes, 0)
			if isParam(g, t) {
				n.ParamBytes += b
			} else {
				n.InputBytes += b
			}
		}
		n.ParamBytes += n.SubgraphParamBytes
		for _, t := range n.Outputs {
			if t >= 0 {
				n.OutputBytes += max(g.Tensors[t].Bytes, 0)
			}
		}
	}
}

// isParam reports whether tensor t is a weight stored in the model: an initializer, or the
// value of a Constant node (graph.Graph.IsParam).
func isParam(g *graph.Graph, t int) bool { return g.IsParam(t) }

// ParamBytes sums the sizes of the weights some node reads, each once: initializers and
// Constant-node values (graph.Graph.ParamBytes).
func (m *Model) ParamBytes() int64 { return m.Graph.ParamBytes() }

// nodeFLOPs counts node n's operations by the registry; 0 when shapes are unknown.
func nodeFLOPs(g *graph.Graph, n *graph.Node) int64 { return ops.FLOPs(g, n) }
