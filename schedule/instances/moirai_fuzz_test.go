package instances

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/schedule"
)

// FuzzReadMoirai feeds arbitrary bytes to the Moirai CSV importer: it must return a problem
// or an error, never panic or hang. A problem it returns without error passes schedule's
// Validate, and HEFT places it (or says why it cannot, e.g. memory) with a finite,
// non-negative makespan and one device per node. The sample instances seed it.
func FuzzReadMoirai(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "benchmarks", "moirai", "*.csv"))
	seeds = append(seeds, filepath.Join("testdata", "example-1.csv"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("task,c_task,dir_succ,dir_succ_add,p0,p1,pc00,pc01,pc10,pc11,mi,m0,m1\n" +
		"0,,1,1,0,0,,,,,0,10,0\n" +
		"1,5,2,\"5,2\",1,2,0,0.5,0.25,0,3,,\n" +
		"2,,,,1,1,,,,,1,,\n" +
		"note: free text ends the table\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadMoirai(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("read problem does not validate: %v", err)
		}
		if len(p.Nodes) > 300 || len(p.Edges) > 3000 || len(p.Devices) > 8 {
			return // HEFT is quadratic; keep executions fast
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := schedule.Solve(ctx, p, schedule.Options{Method: schedule.HEFT})
		if err != nil {
			return // no memory-feasible placement
		}
		if math.IsNaN(res.Makespan) || math.IsInf(res.Makespan, 0) || res.Makespan < 0 {
			t.Fatalf("makespan %v", res.Makespan)
		}
		if res.Placement == nil || len(res.Placement.Device) != len(p.Nodes) {
			t.Fatalf("placement %+v for %d nodes", res.Placement, len(p.Nodes))
		}
	})
}
