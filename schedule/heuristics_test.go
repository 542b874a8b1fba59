package schedule

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestHeuristicsValid(t *testing.T) {
	for name, p := range map[string]*Problem{"T2": t2(), "T3a": t3(7), "T4": t4(), "T7": t7(), "T5": t5(), "T6": t6()} {
		in, err := prepare(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range in.constructive() {
			if h.pl == nil {
				continue
			}
			sc, err := in.simulate(h.pl)
			if err != nil {
				t.Fatalf("%s %s: %v", name, h.method, err)
			}
			checkSchedule(t, p, sc)
		}
	}
	// MET puts every node on its fastest device; greedy respects memory (T7: A cannot go on G).
	in, _ := prepare(t3(7))
	for i, u := range in.met().Device {
		if in.granuleTime[i][u] != in.granuleTime[i][in.fastest(i)] {
			t.Errorf("MET put %s on %d", in.problem.Nodes[i].Name, u)
		}
	}
	in, _ = prepare(t7())
	for _, pl := range []*Placement{in.greedy(), in.heft(), in.met()} {
		if sc, _ := in.simulate(pl); !sc.Feasible {
			t.Errorf("plan %v overflows memory", pl.Device)
		}
	}
	// HEFT and greedy find T1a's split (4) where every single device takes 6.
	in, _ = prepare(t1a(2))
	for _, pl := range []*Placement{in.greedy(), in.heft()} {
		if sc, _ := in.simulate(pl); !near(sc.Makespan, 4) {
			t.Errorf("T1a: %v gives %v, want 4", pl.Device, sc.Makespan)
		}
	}
}

func TestSearchImproves(t *testing.T) {
	p := t3(30)
	in, _ := prepare(p)
	sp := newSpace(in)
	start := sp.genesOf(in.met())
	f0 := sp.score(start)
	for _, run := range []func([]int, uint64, *budget, func(float64)) ([]int, float64){sp.ea, sp.sa} {
		genes, f := run(start, 3, &budget{ctx: context.Background(), iters: 2000}, nil)
		if f > f0 || !near(sp.score(genes), f) {
			t.Fatalf("search returned %v (rescored %v) from %v", f, sp.score(genes), f0)
		}
		if !near(f, 12) {
			t.Errorf("T3b: search found %v, optimum 12", f)
		}
	}
}

// twoGPUs has two identical GPUs and a CPU.
func twoGPUs() *Problem {
	p := build(devs("CPU", "G1", "G2"),
		map[string][]float64{"A": {4, 1, 1}, "B": {6, 3, 3}, "C": {6, 3, 3}, "E": {5, 2, 2}, "D": {4, 1, 1}},
		[]string{"A", "B", "C", "E", "D"}, [][2]string{{"A", "B"}, {"A", "C"}, {"A", "E"}, {"B", "D"}, {"C", "D"}, {"E", "D"}}, 0.5)
	return p
}

func TestSymmetry(t *testing.T) {
	in, err := prepare(twoGPUs())
	if err != nil {
		t.Fatal(err)
	}
	cls := in.deviceClasses()
	if len(cls) != 1 || !equalInts(cls[0], []int{1, 2}) {
		t.Fatalf("classes %v, want [[1 2]]", cls)
	}
	// A plan with more tasks on G2 than G1 is relabelled, with the same makespan.
	pl := &Placement{Device: []int{2, 2, 1, 0, 2}}
	sym := in.symmetryOf(SymmetryTasks)
	c := sym.canonical(in, pl)
	if !equalInts(c.Device, []int{1, 1, 2, 0, 1}) || !sym.isCanonical(in, c) {
		t.Fatalf("canonical %v", c.Device)
	}
	a, _ := in.simulate(pl)
	b, _ := in.simulate(c)
	if !near(a.Makespan, b.Makespan) {
		t.Fatalf("relabelling changed the makespan: %v → %v", a.Makespan, b.Makespan)
	}
	// Breaking symmetry keeps the optimum.
	var opt []float64
	for _, kind := range []string{SymmetryNone, SymmetryTasks, SymmetryTime} {
		run, err := in.solveMILP(context.Background(), in.met(), 0, mipOptions{timeLimit: 20 * time.Second, symmetry: kind})
		if err != nil || run.pl == nil || !run.optimal {
			t.Fatalf("%s: %v %+v", kind, err, run)
		}
		opt = append(opt, run.sc.Makespan)
	}
	if !near(opt[0], opt[1]) || !near(opt[0], opt[2]) {
		t.Fatalf("optima with symmetry none/tasks/time: %v", opt)
	}
	// Different links make the GPUs different.
	q := twoGPUs()
	q.Edges[0].Time[0][2] = 9
	in, _ = prepare(q)
	if cls := in.deviceClasses(); len(cls) != 0 {
		t.Fatalf("classes %v, want none", cls)
	}
}

// Batched mode with congestion: the MILP is a relaxation; its bound must stay below the plan.
func TestBatchedCongestionRelaxation(t *testing.T) {
	p := t6()
	p.Congestion = true
	p.Nodes = append(p.Nodes, Node{Name: "Z", Time: []float64{1, 1}, BatchTime: [][]float64{{1, 1.5}, {1, 1.5}}})
	p.Edges = append(p.Edges, Edge{From: 0, To: 2, Time: uniformComm(2, 1)})
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	run, err := in.solveMILP(context.Background(), in.bMET(in.splits()), 0, mipOptions{timeLimit: 20 * time.Second})
	if err != nil || run.pl == nil || run.fault != "" {
		t.Fatalf("%v %+v", err, run)
	}
	if !run.relaxed || run.bound > run.sc.Makespan+1e-9 || run.bound > run.obj+1e-9 {
		t.Fatalf("relaxed %v bound %v objective %v plan %v", run.relaxed, run.bound, run.obj, run.sc.Makespan)
	}
	checkSchedule(t, p, run.sc)
}

func TestBounds(t *testing.T) {
	for name, c := range map[string]struct {
		p   *Problem
		opt float64
	}{"T2": {t2(), 10}, "T3a": {t3(7), 11}, "T4": {t4(), 20}, "T5": {t5(), 4}, "T6": {t6(), 4}} {
		in, _ := prepare(c.p)
		for _, b := range in.simpleBounds(context.Background()) {
			if b.Value > c.opt+1e-9 || b.Value <= 0 || math.IsNaN(b.Value) {
				t.Errorf("%s: bound %s = %v, optimum %v", name, b.Method, b.Value, c.opt)
			}
		}
		if h := in.serialHorizon(); h < c.opt {
			t.Errorf("%s: serial horizon %v below the optimum %v", name, h, c.opt)
		}
	}
	// The communication-aware path bound sees T1b's transfer: max(1+5, min over devices) = 6.
	in, _ := prepare(t1a(5))
	if b := in.commPathBound(); !near(b, 6) {
		t.Errorf("T1b path bound %v, want 6", b)
	}
}
