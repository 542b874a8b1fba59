package schedule

import (
	"errors"
	"math"
	"testing"
)

func TestSimulateLatency(t *testing.T) {
	cases := []struct {
		name string
		p    *Problem
		dev  []int
		want float64
	}{
		{"T1a split", t1a(2), []int{0, 1}, 4},               // 1 + 2 + 1
		{"T1a all-G", t1a(2), []int{0, 0}, 6},               // 1 + 5
		{"T1b split", t1a(5), []int{0, 1}, 7},               // 1 + 5 + 1
		{"T2 all-G", t2(), []int{0, 0, 0, 0}, 12},           // 1 + 5 + 5 + 1
		{"T2 one branch on C", t2(), []int{0, 0, 1, 0}, 10}, // C: 1+1+6+1 = 9 → D at 9..10
		{"T3a", t3(7), []int{0, 0, 1, 2, 0}, 11},
		{"T4", t4(), []int{0, 0, 1, 0, 0, 0, 1, 0}, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Simulate(c.p, &Placement{Device: c.dev})
			if err != nil {
				t.Fatal(err)
			}
			if !near(sc.Makespan, c.want) {
				t.Fatalf("makespan %v, want %v\n%+v", sc.Makespan, c.want, sc.Tasks)
			}
			checkSchedule(t, c.p, sc)
		})
	}
}

// checkSchedule verifies the simulator's output against the model's rules: precedence with
// transfers, no overlap per device, transfers serialised per port under congestion, makespan.
func checkSchedule(t *testing.T, p *Problem, sc *Schedule) {
	t.Helper()
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	type iv struct{ s, e float64 }
	byDev := map[int][]iv{}
	finish := map[[2]int]float64{} // (node, device) → end
	maxEnd := 0.0
	for _, tk := range sc.Tasks {
		if tk.End < tk.Start-1e-9 {
			t.Errorf("task %+v ends before it starts", tk)
		}
		if tk.End > tk.Start {
			byDev[tk.Device] = append(byDev[tk.Device], iv{tk.Start, tk.End})
		}
		finish[[2]int{tk.Node, tk.Device}] = tk.End
		maxEnd = math.Max(maxEnd, tk.End)
	}
	if !near(maxEnd, sc.Makespan) {
		t.Errorf("makespan %v but the last task ends at %v", sc.Makespan, maxEnd)
	}
	overlap := func(what string, ivs []iv) {
		for a := range ivs {
			for b := a + 1; b < len(ivs); b++ {
				if ivs[a].s < ivs[b].e-1e-9 && ivs[b].s < ivs[a].e-1e-9 {
					t.Errorf("%s: intervals %v and %v overlap", what, ivs[a], ivs[b])
				}
			}
		}
	}
	for u, ivs := range byDev {
		overlap("device "+p.Devices[u].Name, ivs)
	}
	if p.Congestion {
		eg, ig := map[int][]iv{}, map[int][]iv{}
		for _, tr := range sc.Transfers {
			if tr.End > tr.Start {
				eg[tr.Src] = append(eg[tr.Src], iv{tr.Start, tr.End})
				ig[tr.Dst] = append(ig[tr.Dst], iv{tr.Start, tr.End})
			}
		}
		for u, ivs := range eg {
			overlap("egress of "+p.Devices[u].Name, ivs)
		}
		for u, ivs := range ig {
			overlap("ingress of "+p.Devices[u].Name, ivs)
		}
	}
	// Every transfer starts after its producer's batch and ends before the consumer's starts.
	for _, tr := range sc.Transfers {
		if f, ok := finish[[2]int{tr.From, tr.Src}]; !ok || tr.Start < f-1e-9 {
			t.Errorf("transfer %+v starts before its producer ends (%v)", tr, f)
		}
		for _, tk := range sc.Tasks {
			if tk.Node == tr.To && tk.Device == tr.Dst && tk.Start < tr.End-1e-9 {
				t.Errorf("task %+v starts before transfer %+v ends", tk, tr)
			}
		}
		if want := in.comm(tr.Edge, tr.Src, tr.Dst, tr.Granules); !in.problem.Congestion && in.numGranules > 1 {
			want = in.comm(tr.Edge, tr.Src, tr.Dst, 1)
			if !near(tr.End-tr.Start, want) {
				t.Errorf("transfer %+v lasts %v, want %v", tr, tr.End-tr.Start, want)
			}
		} else if !near(tr.End-tr.Start, want) {
			t.Errorf("transfer %+v lasts %v, want %v", tr, tr.End-tr.Start, want)
		}
	}
	// Same-device precedence.
	for _, ed := range p.Edges {
		for _, a := range sc.Tasks {
			if a.Node != ed.From {
				continue
			}
			for _, b := range sc.Tasks {
				if b.Node == ed.To && b.Device == a.Device && in.numGranules == 1 && b.Start < a.End-1e-9 {
					t.Errorf("%s starts at %v before its predecessor %s ends at %v on the same device", b.Name, b.Start, a.Name, a.End)
				}
			}
		}
	}
}

func TestSimulateCongestion(t *testing.T) {
	// A fans out to B and C on another device: with congestion the two transfers from G to C
	// are serialised (Moirai eq. (8): one egress per device).
	p := build(devs("G", "C"), map[string][]float64{"A": {1, 1}, "B": {10, 1}, "C": {10, 1}}, []string{"A", "B", "C"},
		[][2]string{{"A", "B"}, {"A", "C"}}, 2)
	free, err := Simulate(p, &Placement{Device: []int{0, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(free.Makespan, 5) { // 1 + 2 (both transfers together) + 1 + 1
		t.Fatalf("without congestion makespan %v, want 5", free.Makespan)
	}
	p.Congestion = true
	cong, err := Simulate(p, &Placement{Device: []int{0, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(cong.Makespan, 6) { // second transfer ends at 5, then C runs 5..6
		t.Fatalf("with congestion makespan %v, want 6", cong.Makespan)
	}
	checkSchedule(t, p, cong)
}

func TestSimulateBatched(t *testing.T) {
	cases := []struct {
		name string
		p    *Problem
		g    [][]int
		want float64
	}{
		{"T5 3+1", t5(), [][]int{{0, 0, 0, 1}}, 4},
		{"T5 all G1", t5(), [][]int{{0, 0, 0, 0}}, 5},
		{"T5 2+2", t5(), [][]int{{0, 0, 1, 1}}, 5},
		{"T6 per input", t6(), [][]int{{0, 1}, {0, 1}}, 4},       // X: 1 on G1, 3 on G2; Y: G1 after 1 → 4, G2 after 3 → 4
		{"T6 X batched on G1", t6(), [][]int{{0, 0}, {0, 1}}, 5}, // X 0..2; Y g0 on G1 2..5; g1 on G2 2+1..4
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Simulate(c.p, &Placement{Granules: c.g})
			if err != nil {
				t.Fatal(err)
			}
			if !near(sc.Makespan, c.want) {
				t.Fatalf("makespan %v, want %v\n%+v", sc.Makespan, c.want, sc.Tasks)
			}
			checkSchedule(t, c.p, sc)
		})
	}
}

func TestSimulateErrors(t *testing.T) {
	p := t1a(2)
	p.Nodes[1].Time[1] = math.Inf(1)
	if _, err := Simulate(p, &Placement{Device: []int{0, 1}}); err == nil {
		t.Error("node on a device where it cannot run: no error")
	}
	if _, err := Simulate(t1a(2), &Placement{Device: []int{0}}); err == nil {
		t.Error("short placement: no error")
	}
	// No link at all between the devices: a cross-device plan is invalid.
	q := &Problem{Devices: devs("a", "b"), Nodes: []Node{{Name: "x", Time: []float64{1, 1}}, {Name: "y", Time: []float64{1, 1}}},
		Edges: []Edge{{From: 0, To: 1, Bytes: 10}}}
	if _, err := Simulate(q, &Placement{Device: []int{0, 1}}); err == nil {
		t.Error("transfer without a route: no error")
	}
	if sc, err := Simulate(q, &Placement{Device: []int{1, 1}}); err != nil || !near(sc.Makespan, 2) {
		t.Errorf("same-device plan: %v, %v", sc, err)
	}
	cyc := build(devs("a"), map[string][]float64{"x": {1}, "y": {1}}, []string{"x", "y"}, [][2]string{{"x", "y"}, {"y", "x"}}, 0)
	var ce *CycleError
	if err := cyc.Validate(); !errors.As(err, &ce) || len(ce.Nodes) != 2 {
		t.Errorf("cycle: got %v", err)
	}
	b := t5()
	b.Devices[1].BatchSizes = []int{2}
	if _, err := Simulate(b, &Placement{Granules: [][]int{{0, 0, 0, 1}}}); err == nil {
		t.Error("unsupported batch size: no error")
	}
}

func TestSimulateMemory(t *testing.T) {
	sc, err := Simulate(t7(), &Placement{Device: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Feasible || !near(sc.Overflow, 1) || !near(sc.Memory[0], 11) {
		t.Fatalf("memory: feasible %v overflow %v memory %v", sc.Feasible, sc.Overflow, sc.Memory)
	}
}

func TestRouting(t *testing.T) {
	// a→b direct at 10, a→c at 100 then c→b at 50: the widest path is via c (bottleneck 50).
	p := &Problem{Devices: devs("a", "b", "c"),
		Nodes: []Node{{Name: "x", Time: []float64{1, 1, 1}}, {Name: "y", Time: []float64{1, 1, 1}}},
		Edges: []Edge{{From: 0, To: 1, Bytes: 100}},
		Links: [][]Link{
			{{}, {Bandwidth: 10, Latency: 0.5}, {Bandwidth: 100, Latency: 1}},
			{{}, {}, {}},
			{{}, {Bandwidth: 50, Latency: 2}, {}},
		}}
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.comm(0, 0, 1, 1); !near(got, 3+100.0/50) {
		t.Errorf("a→b transfer %v, want %v", got, 3+100.0/50)
	}
	if got := in.comm(0, 1, 0, 1); !math.IsInf(got, 1) {
		t.Errorf("b→a transfer %v, want +Inf (no route)", got)
	}
}

func TestPriorityReproducesSchedule(t *testing.T) {
	// Using a schedule's start times as priorities reproduces it (or an earlier one).
	for _, p := range []*Problem{t2(), t3(7), t4()} {
		in, _ := prepare(p)
		pl := in.heft()
		sc, err := in.simulate(pl)
		if err != nil {
			t.Fatal(err)
		}
		again := &Placement{Device: pl.Device, Order: make([]float64, in.numNodes)}
		for _, tk := range sc.Tasks {
			again.Order[tk.Node] = tk.Start
		}
		sc2, err := in.simulate(again)
		if err != nil {
			t.Fatal(err)
		}
		if sc2.Makespan > sc.Makespan+1e-9 {
			t.Errorf("re-simulated makespan %v > %v", sc2.Makespan, sc.Makespan)
		}
	}
}
