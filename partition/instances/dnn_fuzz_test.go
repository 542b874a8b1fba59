package instances

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/partition"
)

// FuzzLoadDNN feeds arbitrary bytes to the dnn-partitioning importer, with k from the file or
// 1..16 and the file's CPUs or none or one: it must return an instance or an error, never
// panic or hang. An instance it returns passes partition's Validate and can be judged: the
// one-stage plan and the time-balanced baseline evaluate to a non-negative objective (or an
// infeasible *diag.Error, when the parameters exceed the memory cap). The benchmark files seed it.
func FuzzLoadDNN(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "benchmarks", "dnn-partitioning", "*", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) < 64<<10 { // large seeds make every mutation (and minimisation) slow
			f.Add(b, uint8(0), int8(-1))
			f.Add(b, uint8(3), int8(1))
		}
	}
	f.Add([]byte(`{"maxSizePerFPGA": 10, "maxFPGAs": 2, "maxCPUs": 1, "nodes": [
		{"id": 7, "supportedOnFpga": 1, "cpuLatency": 2, "fpgaLatency": 1, "isBackwardNode": 0, "size": 4},
		{"id": 3, "supportedOnFpga": true, "cpuLatency": 1.5, "fpgaLatency": 0.5, "colorClass": 1, "size": 0},
		{"id": 9, "supportedOnFpga": true, "cpuLatency": 1, "fpgaLatency": 0, "colorClass": 1, "size": 5}],
		"edges": [{"sourceId": 7, "destId": 3, "cost": 0.25}, {"sourceId": 7, "destId": 9, "cost": 0.25},
		{"sourceId": 3, "destId": 9, "cost": 1}]}`), uint8(0), int8(-1))
	dir := f.TempDir()
	path := filepath.Join(dir, "fuzz.json")
	f.Fuzz(func(t *testing.T, data []byte, k uint8, cpus int8) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := LoadDNN(path, int(k%17), int(cpus%2))
		if err != nil {
			if d != nil {
				t.Fatalf("both an instance and an error: %v", err)
			}
			return
		}
		p := d.Problem
		if err := p.Validate(); err != nil {
			t.Fatalf("loaded instance does not validate: %v", err)
		}
		if len(d.IDs) != p.NumNodes() {
			t.Fatalf("%d ids for %d nodes", len(d.IDs), p.NumNodes())
		}
		K := p.NumStages()
		if K > 1<<12 {
			// The file's maxFPGAs: a valid instance, but judging it needs K-sized arrays.
			t.Skipf("%d stages", K)
		}
		device := make([]int, K) // stage 0 on the first device; the rest wherever they fit
		s := 0
		for di, dev := range p.Devices {
			for range dev.Count {
				device[s] = di
				s++
			}
		}
		if len(p.Devices) == 0 {
			device = nil
		}
		_, obj, err := p.Evaluate(make([]int, p.NumNodes()), device)
		check := func(what string, obj float64, err error) {
			if err != nil && diag.KindOf(err) != diag.KindInfeasible {
				t.Fatalf("%s: error of type %T: %v", what, err, err)
			}
			if err == nil && (math.IsNaN(obj) || obj < 0) {
				t.Fatalf("%s: objective %v", what, obj)
			}
		}
		check("one stage", obj, err)
		if p.NumNodes() <= 2000 && K <= 64 {
			pl, err := partition.Baseline(p, partition.BaselineTime)
			if err != nil {
				return // e.g. no memory-feasible cut
			}
			_, obj, err := p.Evaluate(pl.Assignment, pl.StageDevice)
			check("time-balanced baseline", obj, err)
			if err == nil && obj != pl.Objective && !(math.Abs(obj-pl.Objective) <= 1e-9*obj) {
				t.Fatalf("baseline objective %v, Evaluate says %v", pl.Objective, obj)
			}
		}
	})
}
