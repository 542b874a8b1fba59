// Package fromgraph is the adapter from an operator graph (package graph, as ingest builds
// it from an ONNX model, optionally coarsened by fusion) costed by a profile.CostModel to a
// schedule.Problem, and back from a schedule.Result to per-graph-node devices.
//
// What goes in: the graph, the cost model of the devices (--devices), the objective (latency,
// or throughput with a batch of B inputs split into granules) and whether transfers congest.
// What comes out: the Problem (times in milliseconds, bytes, links in bytes per millisecond)
// and the map from problem nodes to graph nodes. Static nodes (folded before run time) are
// left out: they cost nothing and run nowhere.
package fromgraph

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/profile"
	"github.com/onnxpart/onnxpart/schedule"
)

// Options choose the objective.
type Options struct {
	// Batch is the number of inputs of a throughput plan; 0 or 1 plans the latency of one input.
	Batch int
	// Granules is the number of granules the batch is split into (0: 4, seed 003's B/4 steps);
	// it must divide Batch.
	Granules int
	// Congestion serialises the transfers out of and into each device (Moirai eq. (8)).
	Congestion bool
}

// Problem builds the schedule problem of g on m's cluster. nodeOf[i] is the graph node of
// problem node i. The graph's shapes are those of one input (bind a symbolic batch to 1);
// in batched mode a granule of b inputs takes overhead + b·(time − overhead) and moves b times
// the bytes.
func Problem(g *graph.Graph, m *profile.CostModel, o Options) (p *schedule.Problem, nodeOf []int, err error) {
	cl := m.Cluster()
	k := len(cl.Devices)
	if k == 0 {
		return nil, nil, fmt.Errorf("fromgraph: the cluster has no devices")
	}
	const ms = 1e-3 // seconds per time unit
	granules, per := 1, 1
	if o.Batch > 1 {
		granules = o.Granules
		if granules <= 0 {
			granules = 4
		}
		if o.Batch%granules != 0 {
			return nil, nil, fmt.Errorf("fromgraph: batch %d is not a multiple of %d granules", o.Batch, granules)
		}
		per = o.Batch / granules
	}
	p = &schedule.Problem{Congestion: o.Congestion}
	if granules > 1 {
		p.Batch, p.GranuleSize = granules, per
	}
	for _, d := range cl.Devices {
		c := d.Capacity()
		if math.IsInf(c, 1) {
			c = 0
		}
		p.Devices = append(p.Devices, schedule.Device{Name: d.Name, Memory: c})
	}
	p.Links = make([][]schedule.Link, k)
	for u := range k {
		p.Links[u] = make([]schedule.Link, k)
		for v := range k {
			if u == v || u >= len(cl.Links) || v >= len(cl.Links[u]) {
				continue
			}
			lk := cl.Links[u][v]
			if lk.Kind == profile.LinkNone || lk.Kind == profile.LinkSelf || lk.Bandwidth.Value <= 0 {
				continue
			}
			p.Links[u][v] = schedule.Link{Bandwidth: lk.Bandwidth.Value * ms, Latency: lk.Latency.Value / ms}
		}
	}
	index := make([]int, len(g.Nodes))
	for i := range g.Nodes {
		index[i] = -1
		n := &g.Nodes[i]
		if n.Static {
			continue
		}
		nd := schedule.Node{Name: n.Name, Time: make([]float64, k),
			Weight: float64(max(n.ParamBytes, 0)),
			Act:    float64(max(n.InputBytes, 0)+max(n.OutputBytes, 0)) * float64(per)}
		if nd.Name == "" {
			nd.Name = fmt.Sprintf("%s_%d", n.OpType, i)
		}
		if granules > 1 {
			nd.BatchTime = make([][]float64, k)
		}
		for u := range k {
			b := m.Explain(g, i, u)
			t1 := b.Time
			if math.IsNaN(t1) || t1 < 0 {
				t1 = math.Inf(1)
			}
			over := math.Min(b.Overhead, t1)
			nd.Time[u] = (over + float64(per)*(t1-over)) / ms
			if granules > 1 {
				nd.BatchTime[u] = make([]float64, granules)
				for c := 1; c <= granules; c++ {
					nd.BatchTime[u][c-1] = (over + float64(c*per)*(t1-over)) / ms
				}
			}
		}
		index[i] = len(p.Nodes)
		nodeOf = append(nodeOf, i)
		p.Nodes = append(p.Nodes, nd)
	}
	// One edge per (tensor, consumer): Moirai's one communication task per data flow.
	for ti := range g.Tensors {
		t := &g.Tensors[ti]
		if t.Producer < 0 || index[t.Producer] < 0 {
			continue
		}
		bytes := float64(max(t.Bytes, 0)) * float64(per)
		for _, c := range t.Consumers {
			if c == t.Producer || index[c] < 0 {
				continue
			}
			p.Edges = append(p.Edges, schedule.Edge{From: index[t.Producer], To: index[c], Bytes: bytes})
		}
	}
	if len(p.Nodes) == 0 {
		return nil, nil, fmt.Errorf("fromgraph: the graph has no node that runs at inference time")
	}
	return p, nodeOf, p.Validate()
}

// Devices maps a latency result back to the graph: dev[v] is the device of graph node v,
// −1 for static nodes. In batched mode it is the device holding most of the node's granules.
func Devices(g *graph.Graph, nodeOf []int, r *schedule.Result) []int {
	dev := make([]int, len(g.Nodes))
	for v := range dev {
		dev[v] = -1
	}
	for _, np := range r.Nodes {
		d := np.Device
		if d < 0 {
			best := 0
			for u, c := range np.Share {
				if c > np.Share[best] {
					best = u
				}
			}
			d = best
		}
		dev[nodeOf[np.Node]] = d
	}
	return dev
}
