package emit

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/testmodel"
)

// TestMatrixManifest writes the splits of package verify's TestMatrix (the same subset, or
// all of them with ONNXPART_FULL_MATRIX=1) and checks each manifest's accounting against
// the graph; TestMatrix checks and verifies the chains in ONNX Runtime.
func TestMatrixManifest(t *testing.T) {
	configs := testmodel.Configs(t)
	full := os.Getenv("ONNXPART_FULL_MATRIX") == "1"
	start := time.Now()
	splits := 0
	for ci, c := range configs {
		t.Run(c.Name, func(t *testing.T) {
			m := testmodel.Load(t, c)
			g := m.Graph
			for ki, k := range matrixKs {
				h := fnv.New64a()
				fmt.Fprintf(h, "%s/%d", c.Name, k)
				ss, err := testmodel.SplitsFor(g, k, int64(h.Sum64()>>1), EqualFLOPs)
				if err != nil {
					t.Fatal(err)
				}
				for si, s := range ss {
					if !full && !((ci+ki*len(ss)+si)%(len(ss)*len(matrixKs)/2) == 0 || (k == 3 && s.Kind == "stages")) {
						continue
					}
					t.Run(fmt.Sprintf("k%d/%s", k, s.Kind), func(t *testing.T) {
						splits++
						dir := filepath.Join(t.TempDir(), "out")
						a := &Assignment{Stage: s.Stage, Split: SplitInfo{Method: s.Kind}}
						man, err := Write(m, a, dir, Options{})
						if err != nil {
							t.Fatalf("%v (assignment %s)", err, testmodel.Describe(g, s.Stage))
						}
						checkManifestAgainstGraph(t, g, man)
					})
				}
			}
		})
	}
	t.Logf("%d splits, %s", splits, time.Since(start).Round(time.Second))
}

// checkManifestAgainstGraph checks the manifest's accounting against the graph: every node
// computed somewhere (weight-only nodes possibly several times), every other node exactly
// once, the stage inputs exactly the tensors read and not produced.
func checkManifestAgainstGraph(t *testing.T, g *graph.Graph, man *Manifest) {
	t.Helper()
	count := map[string]int{}
	for _, st := range man.Stages {
		for _, n := range st.Nodes {
			count[n]++
		}
	}
	for v := range g.Nodes {
		n := &g.Nodes[v]
		c := count[n.Label()]
		if c == 0 {
			t.Errorf("node %s is in no stage", n.Label())
		}
		if c > 1 && !n.Static && !isShapeOp(g, v) {
			t.Errorf("node %s (%s) is computed in %d stages", n.Label(), n.OpType, c)
		}
	}
	if len(man.Stages) == 0 {
		t.Fatal("no stages")
	}
}

// isShapeOp reports whether the node can be duplicated as shape-only.
func isShapeOp(g *graph.Graph, v int) bool {
	role, _ := classify(g, g.TopoOrder())
	return role[v] == roleShapeOnly
}

// matrixKs are the stage counts of the matrix (as in package verify's TestMatrix).
var matrixKs = []int{2, 3, 5, 8}
