package profile

import (
	"fmt"

	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
)

// The one cost path: the planner prices the nodes it places, a model's fused kernels, with
// KernelTimes, and `onnxpart profile` prices a model or a written stage file with PriceGraph,
// which coarsens it by the same rule set and sums the same KernelTimes. A stage file's
// Compute is therefore the manifest's compute_s for that stage, and Call its call_s.

// DefaultRuleSet is the fusion rule set the planner coarsens a model with when none is
// given, for the devices devs of c (nil: all of them): ONNX Runtime's CUDA fusions when any
// of them is a GPU, its CPU fusions otherwise. One plan has one coarsening, so a CPU that
// shares a plan with a GPU is priced on the CUDA rule set's groups.
func DefaultRuleSet(c *Cluster, devs []int) string {
	if devs == nil {
		for d := range c.Devices {
			devs = append(devs, d)
		}
	}
	for _, d := range devs {
		if c.Devices[d].Kind == GPU {
			return "ort-cuda"
		}
	}
	return "ort-cpu"
}

// KernelTimes prices every kernel of g on device: with c (a coarsening of g, or of the same
// model sized at other dimensions: see fusion.Grouping.Resized), one time per fused group,
// KernelTime of its members over the group's cost fields at g's sizes; with c nil, one time
// per node, NodeTime. These are the times the planner places and sums into a stage's compute.
func (m *CostModel) KernelTimes(g *graph.Graph, c *fusion.Grouping, device int) ([]float64, error) {
	if c == nil {
		out := make([]float64, len(g.Nodes))
		for v := range g.Nodes {
			out[v] = m.NodeTime(g, v, device)
		}
		return out, nil
	}
	kernels, err := kernelsOf(g, c)
	if err != nil {
		return nil, err
	}
	return c.Times(func(i int, members []int, _ *graph.Node) float64 {
		return m.KernelTime(g, members, &kernels.Nodes[i], device)
	}, nil), nil
}

// KernelOverheads is KernelTimes' fixed part per kernel (KernelOverhead, NodeOverhead): what
// a kernel costs once however many inputs it processes together.
func (m *CostModel) KernelOverheads(g *graph.Graph, c *fusion.Grouping, device int) ([]float64, error) {
	if c == nil {
		out := make([]float64, len(g.Nodes))
		for v := range g.Nodes {
			out[v] = m.NodeOverhead(g, v, device)
		}
		return out, nil
	}
	if _, err := kernelsOf(g, c); err != nil {
		return nil, err
	}
	return c.Times(func(_ int, members []int, _ *graph.Node) float64 {
		return m.KernelOverhead(g, members, device)
	}, nil), nil
}

// kernelsOf is c's coarse graph at g's sizes.
func kernelsOf(g *graph.Graph, c *fusion.Grouping) (*graph.Graph, error) {
	if g == c.Orig {
		return c.Graph, nil
	}
	return c.Resized(g)
}

// GraphPrice is the predicted time of one call of a graph (a model, or one stage file of a
// plan) on one device, in the planner's terms.
type GraphPrice struct {
	Device  int
	RuleSet string // the rule set the graph was coarsened with ("none": node by node)
	// Kernels are the graph's kernels in coarse-node order (nodes in graph order with "none").
	Kernels []KernelPrice
	// Compute is the sum of the kernels' times: what a stage holding the graph's nodes adds to
	// the plan's objective, a manifest stage's predicted compute_s.
	Compute float64
	// Call is the device's run overhead, paid once per call: a stage's call_s.
	Call float64
	// Binding is the time to pass the graph's inputs and outputs through the call's binding
	// (IOBandwidth). It belongs to a stage's boundary, not its compute: a plan charges it with
	// its transfers (comm_s) where it prices it, on host CPUs with calibrated call costs
	// (with the layout conversions a cut adds, which a stage file alone cannot show), and not
	// at all elsewhere.
	Binding float64
}

// Total is Compute + Call: a stage's total_s less its communication.
func (p *GraphPrice) Total() float64 { return p.Compute + p.Call }

// KernelPrice is one kernel of a GraphPrice.
type KernelPrice struct {
	Name    string  // the coarse node's name (the node's, for a single node)
	Op      string  // the fused group's rule, or the node's op type
	Class   OpClass // KernelClass of the members
	Members []int   // the graph's nodes the kernel computes, absorbed constants included
	FLOPs   int64
	Bytes   int64 // activations read and written, and weights
	Time    float64
}

// KernelClass is the op class a fused group of g is priced as (the class of the member with
// the most FLOPs, the first that is not a view when none has any, among those that run:
// KernelExplain's lead on a GPU), ClassStatic when every member is folded before run time.
// It does not depend on the device, so that a breakdown by class lines up across devices.
func KernelClass(g *graph.Graph, members []int) OpClass {
	lead := kernelLead(&Device{Kind: GPU}, g, members)
	if lead < 0 {
		lead = kernelLead(&Device{Kind: CPU}, g, members)
	}
	if lead < 0 {
		return ClassStatic
	}
	return ClassOf(g, &g.Nodes[lead])
}

// PriceGraph prices one call of g on device: g coarsened by rs (nil or "none": node by node),
// as the planner coarsens a model, each kernel priced by KernelTimes, plus the device's run
// overhead and the boundary terms of a stage whose inputs and outputs are g's.
func (m *CostModel) PriceGraph(g *graph.Graph, rs *fusion.RuleSet, device int) (*GraphPrice, error) {
	var c *fusion.Grouping
	p := &GraphPrice{Device: device, RuleSet: "none"}
	if rs != nil && rs.Name != "none" {
		var err error
		if c, err = fusion.Coarsen(g, rs); err != nil {
			return nil, fmt.Errorf("coarsening with %s: %w", rs.Name, err)
		}
		p.RuleSet = rs.Name
	}
	times, err := m.KernelTimes(g, c, device)
	if err != nil {
		return nil, err
	}
	for i, t := range times {
		k := KernelPrice{Time: t}
		n := &g.Nodes[i]
		k.Members = []int{i}
		if c != nil {
			n, k.Members = &c.Graph.Nodes[i], c.Members(i)
		}
		k.Name, k.Op, k.Class = n.Name, n.OpType, KernelClass(g, k.Members)
		k.FLOPs, k.Bytes = n.FLOPs, max(n.InputBytes, 0)+max(n.ParamBytes, 0)+max(n.OutputBytes, 0)
		p.Kernels = append(p.Kernels, k)
		p.Compute += t
	}
	d := &m.c.Devices[device]
	p.Call = d.RunOverhead.Value
	all := make([]int, len(g.Nodes))
	in := make(map[int]bool, len(g.Nodes))
	for v := range all {
		all[v], in[v] = v, true
	}
	whole := newLayoutCtx(g, nil, d)
	io, _ := boundary(g, all, in, whole, whole)
	p.Binding = float64(io) * ioPerByte(d)
	return p, nil
}
