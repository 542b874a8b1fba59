package schedule

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestLatencyMILPOptimal(t *testing.T) {
	cases := []struct {
		name       string
		p          *Problem
		want       float64
		congestion bool
	}{
		{"T1a", t1a(2), 4, false},
		{"T1b", t1a(5), 6, false},
		{"T2", t2(), 10, false},
		{"T3a", t3(7), 11, false},
		{"T3b", t3(30), 12, false},
		{"T4", t4(), 20, false},
		{"T7 memory", t7(), 6, false},
		{"T2 congestion", t2(), 10, true},
		{"T3a congestion", t3(7), 11.3, true}, // A on G2 sends to G1 and CPU one after the other
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Congestion = c.congestion
			in, err := prepare(c.p)
			if err != nil {
				t.Fatal(err)
			}
			run := solveFromWeakStart(t, in)
			if run.pl == nil || !run.optimal {
				t.Fatalf("no optimal plan: status %v", run.status)
			}
			if !near(run.sc.Makespan, c.want) || !near(run.bound, c.want) {
				t.Fatalf("makespan %v bound %v, want %v", run.sc.Makespan, run.bound, c.want)
			}
			// Without congestion the brute force over placements and orders is exact; with it,
			// an upper bound (it tries one transfer order).
			if bf := bruteForce(t, c.p); !near(bf, c.want) {
				t.Fatalf("brute force %v, want %v", bf, c.want)
			}
			checkSchedule(t, c.p, run.sc)
		})
	}
}

func TestBatchedMILPOptimal(t *testing.T) {
	cases := []struct {
		name string
		p    *Problem
		want float64
	}{
		{"T5", t5(), 4},
		{"T6 per-input", t6(), 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := prepare(c.p)
			if err != nil {
				t.Fatal(err)
			}
			start := in.bMET(in.splits())
			run, err := in.solveMILP(context.Background(), start, 0, mipOptions{timeLimit: 20 * time.Second, symmetry: SymmetryTasks})
			if err != nil {
				t.Fatal(err)
			}
			if run.fault != "" || run.pl == nil || !run.optimal {
				t.Fatalf("fault %q, status %v, optimal %v", run.fault, run.status, run.optimal)
			}
			if !near(run.sc.Makespan, c.want) || !near(run.bound, c.want) {
				t.Fatalf("makespan %v bound %v, want %v", run.sc.Makespan, run.bound, c.want)
			}
			checkSchedule(t, c.p, run.sc)
		})
	}
}

// TestMILPSkipsWhenSetupExceedsTime: with less time than the model's uninterruptible set-up,
// solveMILP does not call HiGHS (which would overrun the limit) and claims nothing.
func TestMILPSkipsWhenSetupExceedsTime(t *testing.T) {
	in, err := prepare(t4())
	if err != nil {
		t.Fatal(err)
	}
	start := in.met()
	run, err := in.solveMILP(context.Background(), start, 3, mipOptions{timeLimit: time.Nanosecond, symmetry: SymmetryTasks})
	if err != nil {
		t.Fatal(err)
	}
	if run.skipped == "" || run.pl != nil || run.bound != 3 || run.optimal {
		t.Fatalf("skipped %q, plan %v, bound %v, optimal %v", run.skipped, run.pl != nil, run.bound, run.optimal)
	}
	// A context whose deadline has passed stops the build itself.
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	run, err = in.solveMILP(ctx, start, 3, mipOptions{symmetry: SymmetryTasks})
	if err != nil || run.pl != nil || run.bound != 3 {
		t.Fatalf("expired context: err %v, plan %v, bound %v", err, run.pl != nil, run.bound)
	}
}

// TestLatencyMILPCalls: with stage calls priced (milp_latency.go's calls comment), the MILP's
// optimum is the simulator's priced makespan of its plan and the brute-force optimum.
func TestLatencyMILPCalls(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     *Problem
		calls []float64
	}{
		{"T1a", t1a(2), nil},
		{"T2", t2(), nil},
		{"T3a", t3(7), nil},
		{"T4", t4(), nil},
		{"T7 memory", t7(), nil},
		{"T3a uneven", t3(7), []float64{0.5, 3, 1}},
	} {
		for _, call := range []float64{0.5, 2} {
			t.Run(fmt.Sprintf("%s call %g", c.name, call), func(t *testing.T) {
				for u := range c.p.Devices {
					c.p.Devices[u].CallCost = call
					if c.calls != nil {
						c.p.Devices[u].CallCost = c.calls[u%len(c.calls)]
					}
				}
				in, err := prepare(c.p)
				if err != nil {
					t.Fatal(err)
				}
				run := solveFromWeakStart(t, in)
				want := bruteForce(t, c.p)
				t.Logf("priced optimum %v", want)
				if run.pl == nil || !run.optimal || run.relaxed {
					t.Fatalf("no exact optimal plan: status %v, relaxed %v", run.status, run.relaxed)
				}
				if !near(run.sc.Makespan, want) || !near(run.obj, want) || !near(run.bound, want) {
					t.Fatalf("makespan %v objective %v bound %v, brute force %v", run.sc.Makespan, run.obj, run.bound, want)
				}
			})
		}
	}
}

// solveFromWeakStart solves in's latency MILP from everything on the best feasible device (a
// weak start), failing the test on an error or a solver fault.
func solveFromWeakStart(t *testing.T, in *inst) *mipRun {
	t.Helper()
	start := in.bestDevice()
	if start == nil {
		start = in.greedy()
	}
	run, err := in.solveMILP(context.Background(), start, 0, mipOptions{timeLimit: 20 * time.Second, symmetry: SymmetryTasks})
	if err != nil {
		t.Fatal(err)
	}
	if run.fault != "" {
		t.Fatalf("fault: %s", run.fault)
	}
	return run
}
