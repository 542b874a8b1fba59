package schema_test

import (
	"context"
	"testing"

	"onnxpart/graph"
	"onnxpart/partition"
	"onnxpart/profile"
)

// problemOf prices g on the cluster's devices with profile's roofline and turns it into an
// MTPP instance: work per node on device 0 (or per device when heterogeneous), parameter
// bytes, and every activation a node sends to others.
func problemOf(t *testing.T, g *graph.Graph, spec string, k int, hetero bool) *partition.Problem {
	t.Helper()
	cl, err := profile.Resolve(context.Background(), spec, profile.Options{Host: profile.HostOptions{NoBench: true, NoCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	tab := profile.NewCostModel(cl, profile.CostOptions{}).Costs(g)
	p := &partition.Problem{Name: g.Name, Work: tab.Node[0], Params: make([]float64, len(g.Nodes)), K: k,
		Bandwidth: tab.Bandwidth[0][len(tab.Bandwidth)-1]}
	for v := range g.Nodes {
		p.Params[v] = float64(g.Nodes[v].ParamBytes)
		p.NodeNames = append(p.NodeNames, g.Nodes[v].Label())
	}
	for i := range g.Tensors {
		tt := &g.Tensors[i]
		if tt.Producer < 0 || len(tt.Consumers) == 0 {
			continue
		}
		p.Tensors = append(p.Tensors, partition.Tensor{Name: tt.Name, Producer: tt.Producer, Consumers: tt.Consumers, Size: float64(max(tt.Bytes, 0))})
	}
	if hetero {
		p.K = 0
		for d, name := range tab.Devices {
			p.Devices = append(p.Devices, partition.Device{Name: name, Count: 1, Work: tab.Node[d]})
		}
	}
	return p
}

// TestPlans validates partition.Plan's JSON (provisional plan.v1) for homogeneous and
// heterogeneous pipelines, with and without lower bounds.
func TestPlans(t *testing.T) {
	g := load(t, repoModel, nil).Graph
	quick := partition.Options{Seed: 1, Workers: 1, Bounds: partition.BoundsSimple,
		BRKGA: partition.BRKGAOptions{Population: 20, Generations: 5}}
	none := quick
	none.Bounds = partition.BoundsNone
	cases := []struct {
		what string
		p    *partition.Problem
		opt  partition.Options
	}{
		{"3 stages", problemOf(t, g, "2xa100-80g", 3, false), quick},
		{"3 stages, no bounds", problemOf(t, g, "2xa100-80g", 3, false), none},
		{"a100 + t4", problemOf(t, g, "a100-80g,t4", 0, true), quick},
	}
	for _, c := range cases {
		plan, err := partition.Solve(context.Background(), c.p, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		mustValidate(t, "plan.v1", c.what, marshal(t, plan))
		if c.what == "3 stages" {
			checkMutations(t, "plan.v1", marshal(t, plan), []mutation{
				{what: "missing gap", change: deleteField(t, "gap"), where: ""},
				{what: "stages as a flat list", change: setField(t, "stages", []any{1, 2}), where: "/stages/0"},
				{what: "lower_bound renamed lower_bound_s", change: renameField(t, "lower_bound", "lower_bound_s"), where: ""},
				{what: "a stage cost without comm", change: deleteField(t, "stage_costs/0/comm"), where: "/stage_costs/0"},
			})
		}
	}
}
