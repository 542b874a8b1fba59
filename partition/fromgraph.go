package partition

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
)

// GraphCosts turn the FLOP and byte counts that ingest puts on a graph into MTPP costs for
// FromGraph. Zero fields take the defaults in brackets.
type GraphCosts struct {
	// FLOPS is the device's compute rate in FLOP/s [1e12].
	FLOPS float64
	// MemBandwidth is the device memory bandwidth in bytes/s for a roofline: work(v) =
	// max(FLOPs/FLOPS, (input+param+output bytes)/MemBandwidth) [0: compute only].
	MemBandwidth float64
	// LinkBandwidth is B, in bytes/s, for tensors between stages [1e10].
	LinkBandwidth float64
	// FastMemory is M in bytes for parameters [0: unlimited].
	FastMemory float64
	// MemoryCap is a hard per-stage cap on parameter bytes [0: none].
	MemoryCap float64
	// Work, when set, gives the per-node running time directly (len = nodes), e.g. from a
	// profile; FLOPS and MemBandwidth are then ignored.
	Work []float64
}

// FromGraph builds a homogeneous MTPP problem with k stages from an operator graph. Every
// node is an MTPP node; every activation tensor with a producing node and at least one
// consumer is one tensor of the graph's byte size (unknown sizes count as 0); graph inputs
// and initializers are not nodes, so they are never charged as communication (seed 000's
// model: pipeline inputs are free). Each weight's bytes (initializer or Constant-node value)
// are split evenly among the nodes that read it, so the parameter total is not double
// counted; outputs of weight-only (Static) nodes are not tensors, as emit duplicates those
// nodes into every stage that reads them.
func FromGraph(g *graph.Graph, k int, gc GraphCosts) (*Problem, error) {
	n := len(g.Nodes)
	if n == 0 {
		return nil, fmt.Errorf("partition: graph %q has no nodes", g.Name)
	}
	if gc.FLOPS <= 0 {
		gc.FLOPS = 1e12
	}
	if gc.LinkBandwidth <= 0 {
		gc.LinkBandwidth = 1e10
	}
	if gc.Work != nil && len(gc.Work) != n {
		return nil, fmt.Errorf("partition: %d work values for %d nodes", len(gc.Work), n)
	}
	p := &Problem{Name: g.Name, Work: make([]float64, n), Params: make([]float64, n), NodeNames: make([]string, n),
		K: k, Bandwidth: gc.LinkBandwidth, FastMemory: gc.FastMemory, MemoryCap: gc.MemoryCap}
	for v := range g.Nodes {
		nd := &g.Nodes[v]
		p.NodeNames[v] = nd.Label()
		if gc.Work != nil {
			p.Work[v] = gc.Work[v]
			continue
		}
		w := float64(max(nd.FLOPs, 0)) / gc.FLOPS
		if gc.MemBandwidth > 0 {
			bytes := float64(max(nd.InputBytes, 0) + max(nd.ParamBytes, 0) + max(nd.OutputBytes, 0))
			w = math.Max(w, bytes/gc.MemBandwidth)
		}
		p.Work[v] = w
	}
	for t := range g.Tensors {
		tn := &g.Tensors[t]
		switch {
		case g.IsParam(t):
			if len(tn.Consumers) > 0 && tn.Bytes > 0 {
				share := float64(tn.Bytes) / float64(len(tn.Consumers))
				for _, c := range tn.Consumers {
					p.Params[c] += share
				}
			}
		case tn.Producer >= 0 && g.Nodes[tn.Producer].Static:
			// Weight-only nodes are emitted again in every stage that reads them (emit's
			// classify): their outputs never cross a stage boundary.
		case tn.Producer >= 0 && len(tn.Consumers) > 0:
			p.Tensors = append(p.Tensors, Tensor{Name: tn.Name, Producer: tn.Producer, Consumers: tn.Consumers,
				Size: math.Max(float64(tn.Bytes), 0)})
		}
	}
	for v := range g.Nodes {
		p.Params[v] += float64(max(g.Nodes[v].SubgraphParamBytes, 0)) // weights inside its bodies
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}
