package schedule

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestStageCapPrefersFastest: under a stage cap the repair goes for the fastest plan within
// the cap, not for the fewest stages. The chain a → b → c → d with a, b fast on d0, c fast on
// d1 is placed d0, d0, d1, d0 (3 stages); with a cap of 2, moving c's stage onto d0 leaves one
// stage (13.5, c runs 10 on d0), while moving d onto d1 leaves two (5.1), the best within the
// cap. The old repair took the fewest stages and could not leave the single stage again.
func TestStageCapPrefersFastest(t *testing.T) {
	p := build(devs("d0", "d1"), map[string][]float64{
		"a": {1, 10}, "b": {1, 10}, "c": {10, 1}, "d": {1, 1},
	}, []string{"a", "b", "c", "d"}, [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}}, 0.1)
	for u := range p.Devices {
		p.Devices[u].CallCost = 0.5
	}
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	pl := &Placement{Device: []int{0, 0, 1, 0}}
	sc, err := in.simulate(pl)
	if err != nil {
		t.Fatal(err)
	}
	if sc.StageCount() != 3 || !near(sc.Makespan, 5.7) {
		t.Fatalf("start: %d stages, makespan %v; want 3, 5.7", sc.StageCount(), sc.Makespan)
	}
	// A spent budget stops a repair walk before its first step; one step's worth takes one.
	if _, zsc, zm := in.repairStages(&simBudget{}, pl, sc, stageCap{total: 2}, true); zm != 0 || zsc != sc {
		t.Fatalf("repair with a spent budget took %d moves", zm)
	}
	if _, _, om := in.repairStages(&simBudget{left: 1}, pl, sc, stageCap{total: 1}, true); om != 1 {
		t.Fatalf("repair with a budget of one step took %d moves, want 1", om)
	}
	// The fewest-stages repair alone ends on one stage.
	fpl, fsc, _ := in.repairStages(nil, pl, sc, stageCap{total: 2}, true)
	fpl, fsc, _ = in.improveStages(nil, fpl, fsc, stageCap{total: 2}, 0)
	if fsc.StageCount() != 1 || !near(fsc.Makespan, 13.5) {
		t.Fatalf("fewest-first repair: %d stages, makespan %v (%v); want 1, 13.5", fsc.StageCount(), fsc.Makespan, fpl.Device)
	}
	npl, nsc, moves, ok := in.mergeStages(pl, sc, stageCap{total: 2})
	if !ok || nsc.StageCount() > 2 || !near(nsc.Makespan, 5.1) {
		t.Fatalf("capped merge: ok %v, %d stages, makespan %v (%v, %d moves); want 2 stages, 5.1", ok, nsc.StageCount(), nsc.Makespan, npl.Device, moves)
	}
	// Through Solve, from the same start's method the cap holds and the plan is no slower.
	for _, m := range []string{MET, Greedy, HEFT} {
		res, err := Solve(t.Context(), p, Options{Method: m, MaxStages: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res.Schedule.StageCount() > 2 || res.Makespan > 5.1+1e-9 {
			t.Errorf("%s with -k 2: %d stages, makespan %v; want ≤ 2, ≤ 5.1", m, res.Schedule.StageCount(), res.Makespan)
		}
	}
}

// TestStageCapBatchedRoutes: a batched route of granules that exchanges nothing with the
// others has no neighbouring stage; under a cap the repair moves it into another device's
// stage (here d2's granule onto d0 or d1: 9) rather than putting everything on one device (13).
func TestStageCapBatchedRoutes(t *testing.T) {
	p := build(devs("d0", "d1", "d2"), map[string][]float64{
		"a": {2, 2, 20}, "b": {2, 2, 20},
	}, []string{"a", "b"}, [][2]string{{"a", "b"}}, 0.1)
	p.Batch = 3
	for u := range p.Devices {
		p.Devices[u].CallCost = 1
	}
	in, err := prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	pl := &Placement{Granules: [][]int{{0, 1, 2}, {0, 1, 2}}}
	sc, err := in.simulate(pl)
	if err != nil {
		t.Fatal(err)
	}
	if sc.StageCount() != 3 || !near(sc.Makespan, 41) {
		t.Fatalf("start: %d stages, makespan %v; want 3, 41", sc.StageCount(), sc.Makespan)
	}
	if len(in.stageMoves(pl, sc)) != 0 {
		t.Fatalf("the routes have neighbours: %d moves", len(in.stageMoves(pl, sc)))
	}
	npl, nsc, _, ok := in.mergeStages(pl, sc, stageCap{total: 2})
	if !ok || nsc.StageCount() != 2 || !near(nsc.Makespan, 9) {
		t.Fatalf("capped merge: ok %v, %d stages, makespan %v (%v); want 2 stages, 9", ok, nsc.StageCount(), nsc.Makespan, npl.Granules)
	}
}

// TestStageCapPerDevice (issue 40): a chain whose fastest plan bounces between two devices
// (three stages on d0, two on d1) is capped at one stage per device: every method's plan keeps
// the cap, Result.Uncapped tells what the cap costs, and the bound stays below the capped
// plan (it bounds the uncapped problem, whose plans include the capped ones).
func TestStageCapPerDevice(t *testing.T) {
	p := build(devs("d0", "d1"), map[string][]float64{
		"a": {1, 10}, "b": {10, 1}, "c": {1, 10}, "d": {10, 1}, "e": {1, 10},
	}, []string{"a", "b", "c", "d", "e"}, [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}}, 0.1)
	for u := range p.Devices {
		p.Devices[u].CallCost = 0.01
	}
	free, err := Solve(t.Context(), p, Options{Method: HEFT})
	if err != nil {
		t.Fatal(err)
	}
	if free.Schedule.Stages[0] < 2 || free.Uncapped != nil {
		t.Fatalf("uncapped: stages per device %v, uncapped record %+v; want a plan that bounces and no record", free.Schedule.Stages, free.Uncapped)
	}
	for _, m := range []string{MET, Greedy, HEFT, SA} {
		res, err := Solve(t.Context(), p, Options{Method: m, MaxStagesPerDevice: 1, Iterations: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for u, n := range res.Schedule.Stages {
			if n > 1 {
				t.Errorf("%s: %d stages on device %d, cap 1", m, n, u)
			}
		}
		if res.LowerBound > res.Makespan*(1+1e-9) {
			t.Errorf("%s: bound %g above the capped plan's %g", m, res.LowerBound, res.Makespan)
		}
		if m == HEFT {
			if u := res.Uncapped; u == nil || u.PerDevice < 2 || u.Makespan >= res.Makespan {
				t.Errorf("HEFT capped: uncapped record %+v for makespan %g", u, res.Makespan)
			}
		}
	}
	// A cap no plan can keep: per device 1 and 1 in all with a node only d0 runs and one only d1 runs.
	q := build(devs("d0", "d1"), map[string][]float64{"a": {1, math.Inf(1)}, "b": {math.Inf(1), 1}}, []string{"a", "b"}, [][2]string{{"a", "b"}}, 0.1)
	_, err = Solve(t.Context(), q, Options{Method: HEFT, MaxStages: 1, MaxStagesPerDevice: 1})
	var capErr *StageCapError
	if !errors.As(err, &capErr) || !strings.Contains(err.Error(), "at most 1 stages per device") {
		t.Fatalf("impossible cap: got %v", err)
	}
}
