package fusion_test

import (
	"testing"

	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/llamagen"
)

// Resized keeps the groups and takes the sizes of the graph it is given: over the graph it
// coarsened it is the coarse graph itself, and over the decoder at another past length its
// kernels' costs are those of coarsening that graph wherever the rules group it alike.
func TestResized(t *testing.T) {
	p, err := llamagen.Write(t.TempDir(), llamagen.Tiny)
	if err != nil {
		t.Fatal(err)
	}
	load := func(past int64) *graph.Graph {
		m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "seq": 1, "past": past}})
		if err != nil {
			t.Fatal(err)
		}
		return m.Graph
	}
	g1, g2 := load(16), load(1024)
	for _, name := range []string{"ort-cpu", "ort-cuda"} {
		rs, err := fusion.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		c1, err := fusion.Coarsen(g1, rs)
		if err != nil {
			t.Fatal(err)
		}
		same, err := c1.Resized(g1)
		if err != nil {
			t.Fatal(err)
		}
		other, err := c1.Resized(g2)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := fusion.Coarsen(g2, rs)
		if err != nil {
			t.Fatal(err)
		}
		if len(same.Nodes) != len(c1.Graph.Nodes) || len(other.Nodes) != len(c1.Graph.Nodes) {
			t.Fatalf("%s: %d, %d kernels, want %d", name, len(same.Nodes), len(other.Nodes), len(c1.Graph.Nodes))
		}
		grew := 0
		for i := range c1.Graph.Nodes {
			a, b := &c1.Graph.Nodes[i], &same.Nodes[i]
			if a.Name != b.Name || a.FLOPs != b.FLOPs || a.InputBytes != b.InputBytes || a.OutputBytes != b.OutputBytes || a.ParamBytes != b.ParamBytes {
				t.Errorf("%s: kernel %s resized over its own graph: %+v, want %+v", name, a.Name, *b, *a)
			}
			if other.Nodes[i].InputBytes > a.InputBytes {
				grew++
			}
		}
		if grew == 0 {
			t.Errorf("%s: no kernel reads more at past=1024 than at past=16", name)
		}
		// Where the rules group both graphs alike, the resized kernels are the coarsened ones.
		alike := len(c2.Graph.Nodes) == len(c1.Graph.Nodes)
		for v := range c1.GroupOf {
			alike = alike && c1.GroupOf[v] == c2.GroupOf[v]
		}
		if !alike {
			t.Logf("%s groups the decoder differently at past=1024", name)
			continue
		}
		for i := range c2.Graph.Nodes {
			a, b := &c2.Graph.Nodes[i], &other.Nodes[i]
			if a.FLOPs != b.FLOPs || a.InputBytes != b.InputBytes || a.OutputBytes != b.OutputBytes {
				t.Errorf("%s: kernel %s at past=1024: %+v, coarsened %+v", name, a.Name, *b, *a)
			}
		}
	}
}
