package schedule

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/internal/milp"
)

// TestSplitMaxRows: a sub-MILP above mipOptions.maxRows is not passed to HiGHS (its build
// stops past the limit), keeps the caller's bound, and split's log counts it apart from
// those skipped for time; at or below the limit HiGHS is called.
func TestSplitMaxRows(t *testing.T) {
	in, err := prepare(t4())
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	defer milp.SetTestHook(func(md *milp.Model, o milp.Options, solve func(milp.Options) (*milp.Result, error)) (*milp.Result, error) {
		calls++
		return solve(o)
	})()
	log := &subLog{}
	run, err := in.solveMILP(context.Background(), nil, 3, mipOptions{timeLimit: 5 * time.Second, maxRows: 10})
	log.record(err, run)
	if err != nil || !run.tooLarge || run.bound != 3 || calls != 0 {
		t.Fatalf("above the row limit: %+v, err %v, %d HiGHS calls; want skipped, bound 3, no call", run, err, calls)
	}
	run, err = in.solveMILP(context.Background(), nil, 3, mipOptions{timeLimit: 5 * time.Second, maxRows: 1 << 20})
	log.record(err, run)
	if err != nil || run.tooLarge || calls == 0 {
		t.Fatalf("below the row limit: %+v, err %v, %d HiGHS calls; want solved", run, err, calls)
	}
	if run, err := in.solveMILP(context.Background(), nil, 3, mipOptions{timeLimit: 5 * time.Second, maxRows: run.rows}); err != nil || run.tooLarge {
		t.Fatalf("at the row limit (%d rows): %+v, err %v; want solved", run.rows, run, err)
	}
	var notes []string
	for _, n := range log.notes() {
		notes = append(notes, n.String())
	}
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "1 of 2 sub-MILPs not started: above") || strings.Contains(all, "too little time") {
		t.Errorf("notes %q: want the one sub-MILP above the row limit counted as such", notes)
	}
}
