package schedule_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/onnxpart/onnxpart/schedule"
)

// Solve's plans, with stage calls priced, keep no stage whose move as one onto the device of a
// stage it exchanges a tensor with (a merge into that neighbour) would lower the makespan; the
// moves are made here apart from the package's own.
func TestNoStageMovePays(t *testing.T) {
	checkNoStageMovePays(t, false, 7, 400, 100, 20, improvingMoves)
}

// checkNoStageMovePays solves n random instances (latency or batched) with random call costs
// by the list heuristics and SA, and fails on every plan that moves finds improvable; at
// least minChecked feasible plans, minMulti of them with several stages, must be checked.
func checkNoStageMovePays(t *testing.T, batched bool, seed uint64, n, minChecked, minMulti int,
	moves func(*schedule.Problem, *schedule.Result) []string) {
	t.Helper()
	checked, multi := 0, 0
	for x := range n {
		s := randSource{rand.New(rand.NewPCG(seed, uint64(x)))}
		inst := genInstance(s, batched)
		p := inst.p
		if p.Validate() != nil || len(p.Devices) < 2 {
			continue
		}
		for u := range p.Devices {
			p.Devices[u].CallCost = float64(1 + s.intn(4))
		}
		method := []string{schedule.Greedy, schedule.HEFT, schedule.MET, schedule.SA}[x%4]
		res, err := schedule.Solve(context.Background(), p, schedule.Options{Method: method, Seed: 1, Iterations: 200, Workers: 1})
		if err != nil || !res.Schedule.Feasible {
			continue
		}
		checked++
		if res.Schedule.StageCount() > 1 {
			multi++
		}
		for _, msg := range moves(p, res) {
			t.Errorf("instance %d (%s), %s: %s", x, inst, method, msg)
		}
	}
	if checked < minChecked || multi < minMulti {
		t.Fatalf("only %d plans checked, %d with several stages", checked, multi)
	}
	t.Logf("%d plans checked, %d with several stages", checked, multi)
}

// improvingMoves lists the stage moves of res's plan that lower its makespan.
func improvingMoves(p *schedule.Problem, res *schedule.Result) []string {
	var out []string
	sc, dev := res.Schedule, res.Placement.Device
	stage := make([]int, len(p.Nodes))
	for _, tk := range sc.Tasks {
		stage[tk.Node] = tk.Stage
	}
	for st := range sc.StageCount() {
		targets := map[int]bool{}
		for _, e := range p.Edges {
			if dev[e.From] == dev[e.To] {
				continue
			}
			if stage[e.From] == st {
				targets[dev[e.To]] = true
			}
			if stage[e.To] == st {
				targets[dev[e.From]] = true
			}
		}
		for w := range targets {
			q := res.Placement.Clone()
			q.EdgeOrder = nil
			for v := range dev {
				if stage[v] == st {
					q.Device[v] = w
				}
			}
			msc, err := schedule.Simulate(p, q)
			if err != nil || !msc.Feasible {
				continue
			}
			if msc.Makespan < sc.Makespan*(1-1e-9) {
				out = append(out, fmt.Sprintf("stage %d onto device %d: makespan %g < %g", st, w, msc.Makespan, sc.Makespan))
			}
		}
	}
	return out
}

// For random placements, the throughput a schedule reports is at most one over its busiest
// device's time, which is the sum of its tasks, stage calls included, and the stage count
// is the number of distinct stages, each on one device, each paying one call.
func TestThroughputAtMostBusiestDevice(t *testing.T) {
	checked := 0
	for x := range 500 {
		s := randSource{rand.New(rand.NewPCG(11, uint64(x)))}
		inst := genInstance(s, x%3 == 0)
		p := inst.p
		if p.Validate() != nil {
			continue
		}
		for u := range p.Devices {
			p.Devices[u].CallCost = float64(s.intn(4))
		}
		pl := &schedule.Placement{}
		if p.Batch <= 1 {
			pl.Device = make([]int, len(p.Nodes))
		} else {
			pl.Granules = make([][]int, len(p.Nodes))
		}
		for i, nd := range p.Nodes {
			pick := func() int {
				for {
					if u := s.intn(len(p.Devices)); !math.IsInf(nd.Time[u], 1) && nd.Time[u] >= 0 {
						return u
					}
				}
			}
			if p.Batch <= 1 {
				pl.Device[i] = pick()
			} else {
				u := pick() // one batch per node: every size may not be supported, so all granules together
				pl.Granules[i] = make([]int, p.Batch)
				for l := range pl.Granules[i] {
					pl.Granules[i][l] = u
				}
				if x%2 == 0 {
					pl.Granules[i][0] = pick() // and sometimes one granule apart
				}
			}
		}
		sc, err := schedule.Simulate(p, pl)
		if err != nil {
			continue
		}
		checked++
		busy := make([]float64, len(p.Devices))
		stageDev := map[int]int{}
		calls := map[int]float64{}
		for _, tk := range sc.Tasks {
			busy[tk.Device] += tk.End - tk.Start
			if d, ok := stageDev[tk.Stage]; ok && d != tk.Device {
				t.Errorf("instance %d: stage %d on devices %d and %d", x, tk.Stage, d, tk.Device)
			}
			stageDev[tk.Stage] = tk.Device
			calls[tk.Stage] += tk.Call
		}
		top := 0.0
		for u := range busy {
			if math.Abs(busy[u]-sc.Busy[u]) > 1e-9*math.Max(1, busy[u]) {
				t.Errorf("instance %d: device %d busy %g, its tasks take %g", x, u, sc.Busy[u], busy[u])
			}
			top = math.Max(top, busy[u])
		}
		if top > 0 && sc.Throughput > float64(max(p.Batch, 1)*max(p.GranuleSize, 1))/top*(1+1e-9) {
			t.Errorf("instance %d: throughput %g above %d inputs / busiest device %g", x, sc.Throughput, max(p.Batch, 1)*max(p.GranuleSize, 1), top)
		}
		if len(stageDev) != sc.StageCount() {
			t.Errorf("instance %d: %d stages, schedule counts %d", x, len(stageDev), sc.StageCount())
		}
		for st, c := range calls {
			if c != p.Devices[stageDev[st]].CallCost {
				t.Errorf("instance %d: stage %d pays %g of calls, its device's call is %g", x, st, c, p.Devices[stageDev[st]].CallCost)
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d placements checked", checked)
	}
}

// TestNoStageMovePaysBatched is TestNoStageMovePays for batched plans: no stage (a run of
// batches on one device) moved as a whole onto a neighbouring stage's device, its granules
// with it, lowers the priced makespan of the plan Solve returns.
func TestNoStageMovePaysBatched(t *testing.T) {
	checkNoStageMovePays(t, true, 8, 300, 50, 10, improvingBatchMoves)
}

// improvingBatchMoves lists the stage moves of res's batched plan that lower its makespan.
func improvingBatchMoves(p *schedule.Problem, res *schedule.Result) []string {
	var out []string
	sc, g := res.Schedule, res.Placement.Granules
	type batch struct{ node, dev int }
	stage := map[batch]int{}
	for _, tk := range sc.Tasks {
		stage[batch{tk.Node, tk.Device}] = tk.Stage
	}
	for st := range sc.StageCount() {
		targets := map[int]bool{}
		for _, e := range p.Edges {
			for l := range g[e.From] {
				u, v := g[e.From][l], g[e.To][l]
				if u == v {
					continue
				}
				if stage[batch{e.From, u}] == st {
					targets[v] = true
				}
				if stage[batch{e.To, v}] == st {
					targets[u] = true
				}
			}
		}
		for w := range targets {
			q := res.Placement.Clone()
			q.EdgeOrder = nil
			for b, bst := range stage {
				if bst != st {
					continue
				}
				had := false
				for l, u := range q.Granules[b.node] {
					had = had || u == w
					if u == b.dev {
						q.Granules[b.node][l] = w
					}
				}
				if q.BatchOrder != nil && (!had || q.BatchOrder[b.node][b.dev] < q.BatchOrder[b.node][w]) {
					q.BatchOrder[b.node][w] = q.BatchOrder[b.node][b.dev]
				}
			}
			msc, err := schedule.Simulate(p, q)
			if err != nil || !msc.Feasible {
				continue
			}
			if msc.Makespan < sc.Makespan*(1-1e-9) {
				out = append(out, fmt.Sprintf("stage %d onto device %d: makespan %g < %g", st, w, msc.Makespan, sc.Makespan))
			}
		}
	}
	return out
}
