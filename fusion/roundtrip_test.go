package fusion_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/verify"
)

// coarsePlans makes stage assignments on the coarse graph, as a planner working on it would:
// equal-FLOP cuts of its topological order and random cuts of a random topological order.
func coarsePlans(t *testing.T, cg *graph.Graph, k int, seed int64) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	if st, err := emit.EqualFLOPs(cg, k); err == nil {
		out["equal-flops"] = st
	}
	r := rand.New(rand.NewSource(seed))
	prio := make([]float64, len(cg.Nodes))
	for i := range prio {
		prio[i] = r.Float64()
	}
	order := cg.KahnOrder(prio)
	cuts := map[int]bool{}
	for len(cuts) < k-1 && len(cuts) < len(order)-1 {
		cuts[1+r.Intn(len(order)-1)] = true
	}
	st, s := make([]int, len(cg.Nodes)), 0
	for i, v := range order {
		if cuts[i] {
			s++
		}
		st[v] = s
	}
	out["random-cuts"] = st
	return out
}

// TestCoarsePlansVerify: plans made on coarse graphs, expanded to the original nodes and
// emitted, reproduce the model bit for bit in ONNX Runtime (optimizations disabled) and
// within 1e-4 with optimizations on. By default every corpus model runs once (rule sets
// and stage counts rotate); ONNXPART_FULL_MATRIX=1 runs every model × rule set × k ∈ {2, 4}
// × plan kind.
func TestCoarsePlansVerify(t *testing.T) {
	if _, err := ort.LibraryPath(); err != nil {
		t.Skip(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "models", "*.onnx"))
	if len(files) == 0 {
		t.Skip("model corpus not found")
	}
	full := os.Getenv("ONNXPART_FULL_MATRIX") == "1"
	sets := []string{"ort-cuda", "tensorrt", "generic", "ort-cpu"}
	ks := []int{2, 4}
	runs := 0
	for mi, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".onnx")
		opts := ingest.Options{}
		if strings.Contains(name, "dynbatch") {
			opts.Dims = map[string]int64{"batch": 2}
		}
		m, err := ingest.Load(f, opts)
		if err != nil {
			t.Fatal(err)
		}
		ref := verify.NewReferenceCache()
		for si, set := range sets {
			for ki, k := range ks {
				if !full && (si != mi%len(sets) || ki != mi%len(ks)) {
					continue
				}
				rs, err := fusion.Builtin(set)
				if err != nil {
					t.Fatal(err)
				}
				c, err := fusion.Coarsen(m.Graph, rs)
				if err != nil {
					t.Fatal(err)
				}
				for kind, cst := range coarsePlans(t, c.Graph, k, int64(mi*10+ki)) {
					if !full && kind != "random-cuts" && mi%2 == 0 {
						continue
					}
					t.Run(fmt.Sprintf("%s/%s/k%d/%s", name, set, k, kind), func(t *testing.T) {
						if err := c.Graph.CheckStageOrder(cst); err != nil {
							t.Fatalf("coarse plan: %v", err)
						}
						st, err := c.Expand(cst)
						if err != nil {
							t.Fatal(err)
						}
						if err := m.Graph.CheckStageOrder(st); err != nil {
							t.Fatalf("expanded plan: %v", err)
						}
						dir := filepath.Join(t.TempDir(), "out")
						a := &emit.Assignment{Stage: st, Split: emit.SplitInfo{Method: "fusion-" + set + "-" + kind}}
						if _, err := emit.Write(m, a, dir, emit.Options{}); err != nil {
							t.Fatal(err)
						}
						for _, optimize := range []bool{false, true} {
							rep, err := verify.Run(context.Background(), dir, verify.Options{Optimize: optimize, Seed: 3, Reference: ref})
							if err != nil {
								t.Fatal(err)
							}
							runs++
							if !rep.Pass {
								t.Errorf("optimize=%v: %v", optimize, verify.MismatchOf(rep).Error())
							}
							for _, o := range rep.Outputs {
								if !optimize && !o.BitExact {
									t.Errorf("output %s is not bit-exact", o.Name)
								}
							}
						}
					})
				}
			}
		}
		ref.Close()
	}
	if runs == 0 {
		t.Fatal("nothing was verified")
	}
}
