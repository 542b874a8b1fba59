package planner

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

func TestParsePhase(t *testing.T) {
	p, err := ParsePhase("decode:seq=1,past=1024@128")
	if err != nil || p.Name != "decode" || p.Weight != 128 || p.Dims["seq"] != 1 || p.Dims["past"] != 1024 || len(p.Dims) != 2 {
		t.Errorf("decode: %+v, %v", p, err)
	}
	if p, err := ParsePhase("prefill:seq=512,past=0"); err != nil || p.Weight != 1 || p.Dims["past"] != 0 {
		t.Errorf("prefill: %+v, %v", p, err)
	}
	for in, want := range map[string]string{
		"seq=1@2":          "no phase name",
		"d:seq=1@0":        "not a positive number",
		"d:seq=1@x":        "not a positive number",
		"d:seq=-1":         "size ≥ 0",
		"d:seq":            "DIM=SIZE",
		"d:seq=1,seq=2":    "bound twice",
		"d:seq=1@Inf":      "not a positive number",
		"d:seq=1@NaN":      "not a positive number",
		"d:seq=1,past=a@1": "DIM=SIZE",
	} {
		if _, err := ParsePhase(in); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), in) {
			t.Errorf("%q: %v, want an error naming it and saying %q", in, err, want)
		}
	}
}

// A plan for a workload of two phases (a short and a long KV cache) is priced, stage by
// stage, as the phases' times weighted by their calls; its predicted objective is that of
// its assignment, repriced here from the node times, tensor bytes, link and call costs of
// each phase's own graph, and its lower bound is below every assignment's objective,
// found by enumerating all of them.
func TestWorkloadPlanAgainstEnumeration(t *testing.T) {
	path := decoderModel(t)
	load := func(past int64) *graph.Graph {
		m, err := ingest.Load(path, ingest.Options{Dims: map[string]int64{"past": past, "total": past + 1}})
		if err != nil {
			t.Fatal(err)
		}
		return m.Graph
	}
	m, err := ingest.Load(path, ingest.Options{Dims: map[string]int64{"past": 8, "total": 9}})
	if err != nil {
		t.Fatal(err)
	}
	phases := []Phase{
		{Name: "short", Dims: map[string]int64{"past": 8}, Weight: 1, Graph: load(8)},
		{Name: "long", Dims: map[string]int64{"past": 4096}, Weight: 16, Graph: load(4096)},
	}
	c := twoDevices(t, "1GiB")
	opt := Options{MaxStages: 2, Fusion: "none", Seed: 1, Reproducible: true, TimeLimit: time.Minute, Bounds: "full", Workload: phases}
	r, err := Plan(context.Background(), m, c, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.Objective != Throughput || len(r.Workload) != 2 {
		t.Fatalf("objective %s, %d phase figures", r.Objective, len(r.Workload))
	}
	cm := profile.NewCostModel(c, profile.CostOptions{})
	table := cm.Costs(&graph.Graph{})
	bw, lat, call := table.Bandwidth[0][1], table.Latency[0][1], table.RunOverhead[0]
	g := m.Graph
	// objective reprices a two-stage assignment: per stage, per phase, compute + each tensor
	// sent or received once (bytes/B + latency) + the call of a non-empty stage.
	objective := func(stage []int) (mix float64, perPhase [][2]float64) {
		var load [2]float64
		for _, ph := range phases {
			var st [2]float64
			var used [2]bool
			for v := range g.Nodes {
				st[stage[v]] += cm.NodeTime(ph.Graph, v, 0)
				used[stage[v]] = true
			}
			for tid := range g.Tensors {
				tn := &ph.Graph.Tensors[tid]
				if tn.Producer < 0 || g.Nodes[tn.Producer].Static {
					continue
				}
				var to [2]bool
				for _, cons := range tn.Consumers {
					if stage[cons] != stage[tn.Producer] {
						to[stage[cons]] = true
					}
				}
				x := math.Max(float64(tn.Bytes), 0)/bw + lat
				for s := range to {
					if to[s] {
						st[s] += x
						st[stage[tn.Producer]] += x
					}
				}
			}
			for s := range st {
				if used[s] {
					st[s] += call
				}
				load[s] += ph.Weight * st[s]
			}
			perPhase = append(perPhase, st)
		}
		return math.Max(load[0], load[1]), perPhase
	}
	stage := r.Assignment.Stage
	mix, per := objective(stage)
	if math.Abs(mix-r.Upper) > 1e-9*mix {
		t.Errorf("predicted %.9g s per request, repriced %.9g", r.Upper, mix)
	}
	for i, f := range r.Workload {
		want := math.Max(per[i][0], per[i][1])
		if math.Abs(f.BottleneckS-want) > 1e-9*want {
			t.Errorf("phase %s: bottleneck %.9g, repriced %.9g", f.Name, f.BottleneckS, want)
		}
	}
	best := math.Inf(1)
	n := len(g.Nodes)
	for mask := 0; mask < 1<<n; mask++ {
		s := make([]int, n)
		ok := true
		for v := range s {
			s[v] = mask >> v & 1
		}
		for v := range g.Nodes {
			for _, u := range g.Preds(v) {
				if s[u] > s[v] {
					ok = false
				}
			}
		}
		if !ok {
			continue
		}
		if o, _ := objective(s); o < best {
			best = o
		}
	}
	if r.Lower > best*(1+1e-9) {
		t.Errorf("lower bound %.9g above the best assignment's %.9g", r.Lower, best)
	}
	if r.Upper < best*(1-1e-9) {
		t.Errorf("plan %.9g below the best assignment's %.9g: the repricing disagrees", r.Upper, best)
	}
	t.Logf("plan %.4g s per request, best %.4g, bound %.4g", r.Upper, best, r.Lower)
}

// A workload refuses what it cannot price.
func TestWorkloadRefusals(t *testing.T) {
	path := decoderModel(t)
	m, err := ingest.Load(path, ingest.Options{Dims: map[string]int64{"past": 8, "total": 9}})
	if err != nil {
		t.Fatal(err)
	}
	ph := []Phase{{Name: "a", Weight: 1, Graph: m.Graph}}
	for _, o := range []Options{{Objective: Latency, Workload: ph}, {Batch: 2, Workload: ph}} {
		if _, err := Plan(context.Background(), m, twoDevices(t, "1GiB"), o); err == nil || !strings.Contains(err.Error(), "Options.Workload") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := Plan(context.Background(), m, twoDevices(t, "1GiB"), Options{State: map[string]string{"x": "nope"}}); err == nil || !strings.Contains(err.Error(), `"nope" is not an output`) {
		t.Errorf("--state x=nope: %v", err)
	}
}
