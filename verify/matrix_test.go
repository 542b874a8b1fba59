package verify

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// The matrix: every corpus model (fp16, external data, dynamic batch with and without
// --dim included) × k ∈ {2, 3, 5, 8} × assignments (equal FLOPs, random cuts of random
// topological orders, adversarial cuts after high fan-out nodes, between weight-only
// subgraphs and their consumers, and where the most tensors are live). Each split is
// written, checked structurally, and verified in ONNX Runtime: bit-exact with
// optimizations disabled and within 1e-4 with them enabled. (emit's TestMatrixManifest
// writes the same splits and checks each manifest's accounting against the graph.)
//
// By default a deterministic subset runs (every model, every k and every kind of split
// appear at least once); ONNXPART_FULL_MATRIX=1 runs all of it.
var matrixKs = []int{2, 3, 5, 8}

func fullMatrix() bool { return os.Getenv("ONNXPART_FULL_MATRIX") == "1" }

func TestMatrix(t *testing.T) {
	needORT(t)
	configs := testmodel.Configs(t)
	full := fullMatrix()
	start := time.Now()
	var chains, splits int
	for ci, c := range configs {
		t.Run(c.Name, func(t *testing.T) {
			m := testmodel.Load(t, c)
			g := m.Graph
			ref := NewReferenceCache()
			defer ref.Close()
			for ki, k := range matrixKs {
				h := fnv.New64a()
				fmt.Fprintf(h, "%s/%d", c.Name, k)
				ss, err := testmodel.SplitsFor(g, k, int64(h.Sum64()>>1), emit.EqualFLOPs)
				if err != nil {
					t.Fatal(err)
				}
				for si, s := range ss {
					// Subset: one (k, kind) pair per model in rotation, plus equal FLOPs at k=3.
					if !full && !((ci+ki*len(ss)+si)%(len(ss)*len(matrixKs)/2) == 0 || (k == 3 && s.Kind == "stages")) {
						continue
					}
					name := fmt.Sprintf("k%d/%s", k, s.Kind)
					t.Run(name, func(t *testing.T) {
						splits++
						dir := filepath.Join(t.TempDir(), "out")
						a := &emit.Assignment{Stage: s.Stage, Split: emit.SplitInfo{Method: s.Kind}}
						man, err := emit.Write(m, a, dir, emit.Options{})
						if err != nil {
							t.Fatalf("%v (assignment %s)", err, testmodel.Describe(g, s.Stage))
						}
						if _, err := Check(dir); err != nil {
							t.Fatal(err)
						}
						for _, optimize := range []bool{false, true} {
							rep, err := Run(context.Background(), dir, Options{Optimize: optimize, Seed: 7, Dims: c.VerifyDims, Reference: ref})
							if err != nil {
								t.Fatal(err)
							}
							chains++
							if !rep.Pass {
								t.Errorf("optimize=%v: %v", optimize, MismatchOf(rep).Error())
							}
							if !optimize {
								for _, o := range rep.Outputs {
									if !o.BitExact {
										t.Errorf("output %s not bit-exact", o.Name)
									}
								}
							}
							for _, o := range rep.Plain {
								t.Logf("optimize=%v: against the unmodified float16 model (%d rounded boundaries): %s max rel %.3g", optimize, len(rep.Rounded), o.Name, o.MaxRel)
							}
						}
						dupNodes, dupWeights := 0, 0
						for _, st := range man.Stages {
							dupNodes += len(st.DuplicatedNodes)
							dupWeights += len(st.DuplicatedWeights)
						}
						t.Logf("%d stages, %d transfers, %d node copies and %d weight copies shared with other stages", len(man.Stages), len(man.Transfers), dupNodes, dupWeights)
					})
				}
			}
		})
	}
	t.Logf("%d splits, %d verified chains, %s", splits, chains, time.Since(start).Round(time.Second))
}
